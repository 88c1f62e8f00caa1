//! `memscope predict`: the three-ceiling bottleneck model of seed 003 for one operation or one
//! decode step, from explicit ceilings, the findings of a `memscope run` results file or a
//! `memscope ceilings` JSON file. Wiring only: the flags are parsed into a
//! `memscope_model::predict::Request`, which checks them and predicts; the ceilings of a file are
//! read by `memscope_results::model_section::read_ceilings`; the answer is printed here. A decode
//! step with `--mode stream|graph` is composed by `memscope_model::compose`, or scaled from a
//! traced step by `memscope_explain::predict` (docs/MODEL.md, "Real programs" and "A composition
//! that holds").

use crate::error::{CliError, CliResult};
use memscope_explain::predict::{gpt2, model_config, predict_from_trace, Mode, ModelConfig, Scaling};
use memscope_explain::{explain, load, load_calibration, render, LibraryCalibration};
use memscope_model::bottleneck::{Dtype, Prediction};
use memscope_model::compose::{predict_step, LaunchMode};
use memscope_model::compose_step::{step_kernels, DecodeShape, HEAD_DIM};
use memscope_model::predict::{CeilingsFile, Given, Request};
use memscope_model::run_ceilings::FloorFallback;
use memscope_results::model_section::{read_ceilings, CeilingsSource};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Operation: matmul, add, gelu, layernorm, softmax, decode-attention, decode-step (or give
    /// --flops and --bytes instead).
    #[arg(long)]
    pub op: Option<String>,
    /// matmul: rows of the left operand. Every count takes 4096, 4k (= 4096), 16M (= 16777216)
    /// or 16e6.
    #[arg(long, value_parser = crate::quantity::count)]
    pub m: Option<u64>,
    /// matmul: inner dimension.
    #[arg(long, value_parser = crate::quantity::count)]
    pub k: Option<u64>,
    /// matmul: columns of the right operand.
    #[arg(long, value_parser = crate::quantity::count)]
    pub n: Option<u64>,
    /// add, gelu: number of elements.
    #[arg(long, value_parser = crate::quantity::count)]
    pub elems: Option<u64>,
    /// layernorm, softmax: rows.
    #[arg(long, value_parser = crate::quantity::count)]
    pub rows: Option<u64>,
    /// layernorm, softmax: columns (elements per row).
    #[arg(long, value_parser = crate::quantity::count)]
    pub cols: Option<u64>,
    /// decode-attention, decode-step: sequences in the batch.
    #[arg(long, value_parser = crate::quantity::count)]
    pub batch: Option<u64>,
    /// decode-attention: heads.
    #[arg(long, value_parser = crate::quantity::count)]
    pub heads: Option<u64>,
    /// decode-attention: cached tokens per sequence.
    #[arg(long, value_parser = crate::quantity::count)]
    pub tokens: Option<u64>,
    /// decode-attention: head dimension.
    #[arg(long, value_parser = crate::quantity::count)]
    pub head_dim: Option<u64>,
    /// decode-step: cached tokens per sequence.
    #[arg(long, value_parser = crate::quantity::count)]
    pub context: Option<u64>,
    /// decode-step: the model (gpt2-small).
    #[arg(long, default_value = "gpt2-small")]
    pub model: String,
    /// decode-step: totals (max of total launch, bytes, FLOPs) or per-kernel (sum of kernel bounds).
    #[arg(long, default_value = "totals")]
    pub composition: String,
    /// Raw FLOPs (with --bytes) instead of --op: 1e12, 1T (decimal prefixes).
    #[arg(long, value_parser = crate::quantity::amount)]
    pub flops: Option<f64>,
    /// Raw bytes moved (with --flops) instead of --op: 1e9, 1G (decimal prefixes).
    #[arg(long, value_parser = crate::quantity::amount)]
    pub bytes: Option<f64>,
    /// Element type: fp32, fp16, bf16.
    #[arg(long, default_value = "fp32")]
    pub dtype: String,
    /// Bandwidth ceiling in bytes per second: 306.7e9, 306.7GB/s, 4.6TB/s (overrides --ceilings).
    #[arg(long, allow_hyphen_values = true)]
    pub bandwidth: Option<String>,
    /// Peak arithmetic in FLOP per second: 6.3e12, 51.3TFLOP/s, 794T (overrides --ceilings).
    #[arg(long, allow_hyphen_values = true)]
    pub peak: Option<String>,
    /// Launch floor with its unit: 4us, 3.98 µs, 500ns, 12e-6s (a bare number is refused);
    /// overrides --ceilings (for decode-step, the whole step's floor).
    #[arg(long, allow_hyphen_values = true)]
    pub launch: Option<String>,
    /// Ceilings from a file: the results of `memscope run` on a GPU (its bw, launch and peak
    /// findings; a launch class without its own floor takes launch.floor_s, and the output says
    /// so), or the JSON of `memscope ceilings|model|fusion|batch --out FILE`; this repository holds
    /// the H200's as results/h200/ceilings.json.
    #[arg(long)]
    pub ceilings: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// decode-step: stream or graph. Selects the step compositions of docs/MODEL.md ("Real
    /// programs"): scaled from --trace when given, else memscope's kernels composed from the
    /// `batch --compose` ceilings in --ceilings. Without --mode, --composition applies.
    #[arg(long)]
    pub mode: Option<String>,
    /// decode-step --mode: a PyTorch profiler trace of your own step (another batch or context).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// decode-step --trace: the batch the trace was taken at.
    #[arg(long)]
    pub trace_batch: Option<u64>,
    /// decode-step --trace: the context (cached tokens) the trace was taken at.
    #[arg(long)]
    pub trace_context: Option<u64>,
    /// decode-step --trace: your step at the traced batch and context timed without the profiler
    /// (CUDA events), seconds; the trace's host dispatch is scaled to it (the profiler slows the
    /// host). Without it, the profiled dispatch is used as traced.
    #[arg(long)]
    pub trace_step_s: Option<f64>,
    /// decode-step --mode: the model as JSON (layers, width, heads, mlp_width, vocab) instead of --model.
    #[arg(long)]
    pub model_config: Option<PathBuf>,
    /// decode-step --trace: the model the trace was taken of, when it is not the predicted one
    /// (gpt2-small ... gpt2-xl, or a JSON file as for --model-config): its widths and layers
    /// become the predicted model's.
    #[arg(long)]
    pub trace_model: Option<String>,
    /// decode-step --trace: the results of `memscope batch --compose` on the same GPU: its cuBLAS
    /// calibration sweep scales the traced matrix products to their new shapes (the library's
    /// kernel choice and efficiency by shape). Without it, --ceilings is read for one; with none,
    /// products scale by their traced efficiency like every other op.
    #[arg(long)]
    pub calibration: Option<PathBuf>,
    /// decode-step --trace: PyTorch's own kernels timed over a grid of shapes on the same GPU
    /// (the output of scripts/programs/calibrate_library.py, .json or .json.gz): every op of a
    /// calibrated form (products, batched products, elementwise and row ops) scales by the
    /// library's own change in time from its traced shape to its new one; it takes precedence
    /// over --calibration for those ops.
    #[arg(long)]
    pub library_calibration: Option<PathBuf>,
}

/// The ceilings given as flags, parsed ("4us", "4.6TB/s", "51.3TFLOP/s" or plain numbers).
fn given(a: &Args) -> Result<Given, CliError> {
    use crate::quantity::{rate, seconds};
    let parse = |v: &Option<String>, f: &dyn Fn(&str) -> Result<f64, String>| v.as_deref().map(f).transpose();
    Ok(Given {
        launch: parse(&a.launch, &|t| seconds(t, "--launch")).map_err(CliError::usage)?,
        bandwidth: parse(&a.bandwidth, &|t| rate(t, "--bandwidth", "B/s")).map_err(CliError::usage)?,
        peak: parse(&a.peak, &|t| rate(t, "--peak", "FLOP/s")).map_err(CliError::usage)?,
    })
}

fn load_ceilings(path: &std::path::Path) -> Result<CeilingsSource, CliError> {
    let max = memscope_results::results::MAX_RESULTS_BYTES;
    let bytes = memscope_results::json::read_limited(path, max)
        .map_err(|e| CliError::usage(format!("--ceilings {}: cannot read: {e}", path.display())))?;
    if bytes.len() > max {
        return Err(CliError::usage(format!(
            "--ceilings {}: the file is over {} MiB (MAX_RESULTS_BYTES)",
            path.display(),
            max >> 20
        )));
    }
    read_ceilings(&bytes, FloorFallback::EmptyKernel)
        .map_err(|e| CliError::usage(format!("--ceilings {}: {e}", path.display())))
}

pub fn run(a: Args) -> CliResult {
    if let (Some("decode-step"), Some(mode)) = (a.op.as_deref(), a.mode.as_deref()) {
        return predict_decode_step(&a, mode);
    }
    if a.mode.is_some() || a.trace.is_some() || a.model_config.is_some() {
        return Err(CliError::usage(
            "--mode, --trace and --model-config apply to --op decode-step --mode stream|graph",
        ));
    }
    let dtype = Dtype::parse(&a.dtype)
        .ok_or_else(|| CliError::usage(format!("--dtype {}: expected fp32, fp16 or bf16", a.dtype)))?;
    let request = Request {
        given: given(&a)?,
        op: a.op,
        m: a.m,
        k: a.k,
        n: a.n,
        elems: a.elems,
        rows: a.rows,
        cols: a.cols,
        batch: a.batch,
        heads: a.heads,
        tokens: a.tokens,
        head_dim: a.head_dim,
        context: a.context,
        model: a.model,
        composition: a.composition,
        flops: a.flops,
        bytes: a.bytes,
        dtype,
        ceilings_file: a.ceilings.is_some(),
    };
    request.check().map_err(CliError::usage)?;
    let source = a.ceilings.as_deref().map(load_ceilings).transpose()?;
    let file = source.as_ref().map(|s| CeilingsFile {
        ceilings: s.ceilings(),
        run: match s {
            CeilingsSource::Run { target, run } => Some((target.as_str(), run)),
            CeilingsSource::ModelFile { .. } => None,
        },
    });
    let answer = request.predict(file).map_err(CliError::usage)?;
    print_prediction(&answer.prediction, answer.flops, answer.bytes, &answer.note, answer.extra, a.json);
    Ok(())
}

fn print_prediction(
    p: &Prediction,
    flops: f64,
    bytes: f64,
    note: &str,
    extra: serde_json::Map<String, serde_json::Value>,
    json: bool,
) {
    if json {
        let mut v = serde_json::json!({
            "bounds": {"launch_s": p.bounds.launch_s, "memory_s": p.bounds.memory_s, "compute_s": p.bounds.compute_s},
            "regime": p.regime.name(),
            "time_s": p.time_s,
            "flops": flops,
            "bytes": bytes,
        });
        v.as_object_mut().expect("object").extend(extra);
        print!("{}", String::from_utf8_lossy(&memscope_results::json::to_pretty(&v)));
        return;
    }
    println!("FLOPs           {}", memscope_report::units::si(flops, "FLOP"));
    println!("bytes           {}", memscope_report::units::si(bytes, "B"));
    println!("launch bound    {}", fmt_s(p.bounds.launch_s));
    println!("memory bound    {}", fmt_s(p.bounds.memory_s));
    println!("compute bound   {}", fmt_s(p.bounds.compute_s));
    if let Some(pk) = extra.get("per_kernel") {
        println!(
            "per-kernel sum  {} (matrix products {}, attention {})",
            fmt_s(pk["time_s"].as_f64().unwrap_or(0.0)),
            fmt_s(pk["matmul_s"].as_f64().unwrap_or(0.0)),
            fmt_s(pk["attention_s"].as_f64().unwrap_or(0.0))
        );
    }
    println!("regime          {}-bound", p.regime.name());
    println!("predicted time  {}", fmt_s(p.time_s));
    if !note.is_empty() {
        println!("({note})");
    }
}

/// Seconds with a readable unit (the reports' formatting: ns, µs, ms or s, 4 significant digits).
pub fn fmt_s(s: f64) -> String {
    memscope_report::units::seconds(s)
}

/// The model of `--model` or `--model-config`.
fn model(a: &Args) -> Result<ModelConfig, CliError> {
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
pub fn predict_decode_step(a: &Args, mode: &str) -> CliResult {
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
        let c = crate::cmd_explain::ceilings(Some(path))?.expect("given");
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
        let library = match &a.library_calibration {
            Some(lp) => {
                Some(LibraryCalibration::load(lp).map_err(|e| CliError::usage(format!("--library-calibration {e}")))?)
            }
            None => None,
        };
        let p =
            predict_from_trace(&trace, &x, &c, &s, calibration.as_ref(), library.as_ref()).map_err(CliError::usage)?;
        out["library_calibration"] =
            a.library_calibration.as_ref().map(|p| p.display().to_string().into()).unwrap_or(serde_json::Value::Null);
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
