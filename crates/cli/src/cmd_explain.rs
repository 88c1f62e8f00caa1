//! `memscope explain TRACE` and `memscope predict --op decode-step --mode stream|graph`: wiring
//! only. The analysis and the trace scaling are `memscope_explain`; the composition of a step that
//! was not traced is `memscope_model::compose` (docs/MODEL.md, "Real programs" and "A composition
//! that holds").

use crate::cmd_predict::Args as PredictArgs;
use crate::error::{CliError, CliResult};
use memscope_explain::predict::{gpt2, model_config, predict_from_trace, Mode, ModelConfig, Scaling};
use memscope_explain::{explain, explain_with, load, load_calibration, load_ceilings, render};
use memscope_model::compose::{predict_step, LaunchMode};
use memscope_model::compose_step::{step_kernels, DecodeShape, HEAD_DIM};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A PyTorch profiler trace: torch.profiler's Chrome trace (`.json` or `.json.gz`), recorded
    /// with record_shapes=True and ProfilerActivity.CUDA.
    pub trace: PathBuf,
    /// The session's ceilings: the results of `memscope run` on the same GPU (its bw, l2, peak and
    /// launch findings). Without it, no op is bounded.
    #[arg(long)]
    pub ceilings: Option<PathBuf>,
    /// Print the whole analysis as JSON (docs/CONTRACTS.md, "memscope explain").
    #[arg(long)]
    pub json: bool,
    /// Also write the analysis as an HTML page to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// An eager trace of the same step: kernels replayed from a CUDA graph (which carry no
    /// framework op) take the ops of the kernels at the same place in one of its steps.
    #[arg(long)]
    pub ops_from: Option<PathBuf>,
    /// Rows of each ranked table in the terminal and HTML output.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
}

fn ceilings(path: Option<&Path>) -> Result<Option<memscope_explain::Ceilings>, CliError> {
    path.map(load_ceilings).transpose().map_err(CliError::usage)
}

pub fn run(a: Args) -> CliResult {
    let trace = load(&a.trace).map_err(|e| CliError::usage(e.to_string()))?;
    let c = ceilings(a.ceilings.as_deref())?;
    let template = match &a.ops_from {
        Some(p) => {
            let t = load(p).map_err(|e| CliError::usage(format!("--ops-from: {e}")))?;
            Some(explain(&t, &p.display().to_string(), c.as_ref()))
        }
        None => None,
    };
    let x = explain_with(&trace, &a.trace.display().to_string(), c.as_ref(), template.as_ref());
    if let Some(p) = &a.html {
        std::fs::write(p, render::html_page(&x, a.top))
            .map_err(|e| CliError::failure(format!("{}: cannot write the page: {e}", p.display())))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&x).expect("serialisable"));
    } else {
        print!("{}", render::text(&x, a.top));
    }
    Ok(())
}

/// The model of `--model` or `--model-config`.
fn model(a: &PredictArgs) -> Result<ModelConfig, CliError> {
    match &a.model_config {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| CliError::usage(format!("--model-config {}: cannot read the file: {e}", p.display())))?;
            model_config(&text, &p.display().to_string()).map_err(CliError::usage)
        }
        None => gpt2(&a.model).ok_or_else(|| {
            CliError::usage(format!(
                "--model {}: expected gpt2-small, gpt2-medium, gpt2-large, gpt2-xl (or --model-config FILE.json)",
                a.model
            ))
        }),
    }
}

fn positive(v: Option<u64>, flag: &str, why: &str) -> Result<u64, CliError> {
    match v {
        Some(0) => Err(CliError::usage(format!("--{flag} 0: must be at least 1"))),
        Some(x) => Ok(x),
        None => Err(CliError::usage(format!("--op decode-step --mode needs --{flag}{why}"))),
    }
}

/// `predict --op decode-step --mode stream|graph`: scaled from `--trace` when given, else the
/// composition of memscope's own kernels (the `batch --compose` ceilings in the file).
pub fn predict_decode_step(a: &PredictArgs, mode: &str) -> CliResult {
    let mode = match mode {
        "stream" => Mode::Stream,
        "graph" => Mode::Graph,
        other => return Err(CliError::usage(format!("--mode {other}: expected stream or graph"))),
    };
    let m = model(a)?;
    let batch = positive(a.batch, "batch", "")?;
    let context = positive(a.context, "context", "")?;
    let path = a.ceilings.as_ref().ok_or_else(|| {
        CliError::usage("--op decode-step --mode needs --ceilings RESULTS.json (the results of `memscope run` on the GPU; with no --trace, of `memscope batch --compose`)")
    })?;
    let mut out = serde_json::json!({
        "op": "decode-step", "model": m, "batch": batch, "context": context, "dtype": a.dtype,
        "mode": mode, "ceilings": path.display().to_string(),
    });
    let text = if let Some(tp) = &a.trace {
        let tb = positive(a.trace_batch, "trace-batch", " (the batch the trace was taken at)")?;
        let tc = positive(a.trace_context, "trace-context", " (the context the trace was taken at)")?;
        let c = ceilings(Some(path))?.expect("given");
        let trace = load(tp).map_err(|e| CliError::usage(e.to_string()))?;
        let x = explain(&trace, &tp.display().to_string(), Some(&c));
        let trace_step_s = match a.trace_step_s {
            Some(v) if !(v.is_finite() && v > 0.0) => {
                return Err(CliError::usage(format!("--trace-step-s {v}: must be a positive number of seconds")))
            }
            v => v,
        };
        let calibration = match &a.calibration {
            Some(cp) => Some(load_calibration(cp).map_err(|e| CliError::usage(format!("--calibration {e}")))?),
            None => load_calibration(path).ok(),
        };
        let trace_model = match &a.trace_model {
            None => None,
            Some(t) if t.ends_with(".json") => {
                let text = std::fs::read_to_string(t)
                    .map_err(|e| CliError::usage(format!("--trace-model {t}: cannot read the file: {e}")))?;
                Some(model_config(&text, t).map_err(|e| CliError::usage(format!("--trace-model {e}")))?)
            }
            Some(t) => Some(gpt2(t).ok_or_else(|| {
                CliError::usage(format!(
                    "--trace-model {t}: expected gpt2-small, gpt2-medium, gpt2-large, gpt2-xl or a model JSON file"
                ))
            })?),
        };
        let s =
            Scaling { model: m, trace_batch: tb, trace_context: tc, batch, context, mode, trace_step_s, trace_model };
        let p = predict_from_trace(&trace, &x, &c, &s, calibration.as_ref()).map_err(CliError::usage)?;
        out["calibration"] = match (&a.calibration, &calibration) {
            (Some(cp), _) => cp.display().to_string().into(),
            (None, Some(_)) => path.display().to_string().into(),
            (None, None) => serde_json::Value::Null,
        };
        out["composition"] = "trace".into();
        out["trace"] = tp.display().to_string().into();
        out["time_s"] = p.time_s.into();
        let line = format!(
            "decode step of {} at batch {batch}, context {context} ({mode:?}, scaled from {} at batch {tb}, context {tc}): {} (device {}, host chain {}, set by the {})",
            s.model.name,
            tp.display(),
            render::fmt_s(p.time_s),
            render::fmt_s(p.device_s),
            render::fmt_s(p.host_chain_s),
            p.sets
        );
        out["prediction"] = serde_json::to_value(&p).expect("serialisable");
        line
    } else {
        if m.width != HEAD_DIM * m.heads {
            return Err(CliError::usage(format!(
                "{}: the composition counts memscope's kernels for a head dimension of {HEAD_DIM}, not {} (give --trace of your own step instead)",
                m.name,
                m.width / m.heads
            )));
        }
        let dtype = memscope_model::bottleneck::Dtype::parse(&a.dtype)
            .filter(|d| *d != memscope_model::bottleneck::Dtype::Bf16)
            .ok_or_else(|| CliError::usage(format!("--dtype {}: the composition knows fp32 and fp16", a.dtype)))?;
        let cc_path = a.calibration.as_deref().unwrap_or(path);
        let cc = load_calibration(cc_path).map_err(|e| CliError::usage(format!("{e}, or --trace of your own step")))?;
        let name: &'static str = Box::leak(m.name.clone().into_boxed_str());
        let shape =
            DecodeShape { name, layers: m.layers, width: m.width, heads: m.heads, ff: m.mlp_width, vocab: m.vocab };
        let lm = if mode == Mode::Stream { LaunchMode::Stream } else { LaunchMode::Graph };
        let p = predict_step(&cc, &step_kernels(&shape, batch, context, dtype), lm)
            .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
        out["composition"] = "compose".into();
        out["time_s"] = p.time_s.into();
        let line = format!(
            "decode step of {} at batch {batch}, context {context} ({mode:?}, memscope's kernels composed): {} (device {}, host {})",
            m.name,
            render::fmt_s(p.time_s),
            render::fmt_s(p.device_s),
            render::fmt_s(p.host_s)
        );
        out["prediction"] = serde_json::to_value(&p).expect("serialisable");
        line
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out).expect("serialisable"));
    } else {
        println!("{text}");
    }
    Ok(())
}
