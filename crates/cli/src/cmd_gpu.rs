//! `memscope ceilings|model|fusion|batch`: the bottleneck model on a GPU (seed 003; docs/MODEL.md).
//! Wiring only: every command opens the GPU once, runs the probes bw, launch and peak on it
//! through the session into a `memscope/1` document (`model_doc`), takes the model's ceilings
//! from those findings, checks the kernels, runs its part of `memscope_cuda::ops` on the same
//! GPU, puts each result into the document's `model` section as it comes, and prints tables.

use crate::error::CliResult;
use crate::gpu_tables as tables;
use crate::model_doc::{resolve_out, ModelDoc};
use memscope_cuda::ops::{batch, check, compose, device::OpsGpu, fusion, model_set};
use memscope_cuda::CudaTarget;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CeilingsArgs {
    /// Write the results document (memscope/1, usable by `memscope predict --ceilings`) here;
    /// default memscope-out/ceilings.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// No per-point log on stderr.
    #[arg(long)]
    pub quiet: bool,
}
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// Write the results document (memscope/1 with a model section) here; default
    /// memscope-out/model.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Also run the fusion and batch experiments against the same session's ceilings.
    #[arg(long)]
    pub all: bool,
    /// Only the kernel-efficiency checks (checks, ceilings, efficiency; no 58 points, no --all).
    #[arg(long, conflicts_with = "all")]
    pub efficiency_only: bool,
    #[arg(long)]
    pub quiet: bool,
}
#[derive(clap::Args, Debug)]
pub struct FusionArgs {
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    #[arg(long)]
    pub quiet: bool,
}
#[derive(clap::Args, Debug)]
pub struct BatchArgs {
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The composition sweep instead of the seed's: its ceilings (launch throughput on a
    /// stream and in a graph, bandwidth by bytes in flight, matrix-product calibration on other
    /// shapes), GPT-2 small at contexts 128 and 1,024, fp32 and fp16, eager and graph, and the
    /// out-of-sample GPT-2-medium shape; the seed's two compositions beside it.
    #[arg(long)]
    pub compose: bool,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    #[arg(long)]
    pub quiet: bool,
}

/// Progress as one stderr line per message.
struct Log(bool);
impl memscope_core::Progress for Log {
    fn start(&self, total: u64, message: &str) {
        if !self.0 {
            eprintln!("[{message}: {total} steps]");
        }
    }
    fn advance(&self, _n: u64) {}
    fn message(&self, message: &str) {
        if !self.0 {
            eprintln!("  {message}");
        }
    }
}

/// Run the correctness checks and put them into the document; any failed check ends the command.
fn checks(g: &OpsGpu, md: &mut ModelDoc, log: &Log) -> CliResult {
    use memscope_core::Progress;
    let checks = check::run_all(g)?;
    for c in &checks {
        log.message(&format!("check {}: rel err {:.2e} ({})", c.kernel, c.rel_err, if c.ok { "ok" } else { "FAILED" }));
    }
    md.put("checks", &checks)?;
    if let Some(bad) = checks.iter().find(|c| !c.ok) {
        let (kernel, rel_err, tolerance) = (bad.kernel.clone(), bad.rel_err, bad.tolerance);
        return Err(memscope_cuda::GpuError::Check { kernel, rel_err, tolerance }.into());
    }
    Ok(())
}

/// One command's session: --out checked, GPU `device` opened, the ceilings measured into the
/// document and printed; then `body` on the ops of the same GPU with the checks passed, the
/// document finished whatever `body` returns.
fn with_session(
    out: &Option<PathBuf>,
    command: &str,
    device: usize,
    quiet: bool,
    body: impl FnOnce(&OpsGpu, &mut ModelDoc, &memscope_model::bottleneck::SessionCeilings, &Log) -> CliResult,
) -> CliResult {
    let path = resolve_out(out, command)?;
    let mut target: CudaTarget = crate::targets::open_cuda(device, &format!("--device {device}"))?;
    eprintln!(
        "memscope {command}: ceilings from the probes bw, launch, peak on cuda:{device}; results: {}",
        path.display()
    );
    let mut md = ModelDoc::measure(&mut target, device, &path, quiet)?;
    if let Some(section) = &md.doc.model {
        tables::print_ceilings(&md.doc, section);
    }
    let log = Log(quiet);
    let r = (|| {
        let c = md.ceilings()?;
        let g = OpsGpu::on(target.gpu())?;
        checks(&g, &mut md, &log)?;
        body(&g, &mut md, &c, &log)
    })();
    md.end(r)
}

pub fn ceilings(a: CeilingsArgs) -> CliResult {
    with_session(&a.out, "ceilings", a.device, a.quiet, |_, _, _, _| Ok(()))
}

pub fn model(a: ModelArgs) -> CliResult {
    with_session(&a.out, "model", a.device, a.quiet, |g, md, c, log| {
        let r = model_set::run(g, c, a.efficiency_only, log)?;
        tables::print_model(&r);
        md.put("evaluation", &r)?;
        if a.all {
            let f = fusion::run(g, c, log)?;
            tables::print_fusion(&f);
            md.put("fusion", &f)?;
            let b = batch::run(g, c, log)?;
            tables::print_batch(&b);
            md.put("batch", &b)?;
        }
        Ok(())
    })
}

pub fn fusion(a: FusionArgs) -> CliResult {
    with_session(&a.out, "fusion", a.device, a.quiet, |g, md, c, log| {
        let f = fusion::run(g, c, log)?;
        tables::print_fusion(&f);
        md.put("fusion", &f)
    })
}

pub fn batch(a: BatchArgs) -> CliResult {
    let command = if a.compose { "compose" } else { "batch" };
    with_session(&a.out, command, a.device, a.quiet, |g, md, c, log| {
        if a.compose {
            let r = compose::run(g, c, log)?;
            crate::cmd_compose::print(&r);
            md.put("compose", &r)
        } else {
            let b = batch::run(g, c, log)?;
            tables::print_batch(&b);
            md.put("batch", &b)
        }
    })
}
