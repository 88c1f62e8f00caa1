//! `memscope predict`: the three-ceiling bottleneck model of seed 003 for one operation or one
//! decode step, from explicit ceilings, the findings of a `memscope run` results file or a
//! `memscope ceilings` JSON file. Wiring only: the model is `memscope_core::model`, the ceilings of
//! a file `memscope_report::model_section::read_ceilings`.

use crate::error::{CliError, CliResult};
use memscope_core::model::{self as m, DecodeModel, Dtype, OpCost, Prediction, SessionCeilings};
use memscope_core::model_ceilings::{bandwidth_ceiling, launch_ceiling, peak_ceiling, FloorFallback};
use memscope_report::model_section::{read_ceilings, CeilingsSource};
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
}

/// Where the ceilings come from, for the message when some are missing.
const CEILINGS_HINT: &str = "or --ceilings FILE: the results of `memscope run -p bw,launch,peak` on a GPU, \
or the file of `memscope ceilings --out FILE`; results/h200/ceilings.json holds the H200's";

fn need(v: Option<u64>, name: &str, op: &str) -> Result<u64, CliError> {
    match v {
        Some(0) => Err(CliError::usage(format!("--{name} 0: must be at least 1"))),
        Some(x) => Ok(x),
        None => Err(CliError::usage(format!("--op {op} needs --{name}"))),
    }
}

/// The size flags an operation needs, with their values.
fn dims(a: &Args, op: &str) -> Vec<(&'static str, Option<u64>)> {
    match op {
        "matmul" => vec![("m", a.m), ("k", a.k), ("n", a.n)],
        "add" | "gelu" => vec![("elems", a.elems)],
        "layernorm" | "softmax" => vec![("rows", a.rows), ("cols", a.cols)],
        "decode-attention" => {
            vec![("batch", a.batch), ("heads", a.heads), ("tokens", a.tokens), ("head-dim", a.head_dim)]
        }
        "decode-step" => vec![("batch", a.batch), ("context", a.context)],
        _ => vec![],
    }
}

/// Every missing value at once: the operation's sizes and, without a ceilings file, the ceilings.
fn check_missing(a: &Args, op: Option<&str>, ceilings: &Given) -> CliResult {
    let mut missing: Vec<String> = op
        .map(|op| dims(a, op).into_iter().filter(|(_, v)| v.is_none()).map(|(n, _)| format!("--{n}")).collect())
        .unwrap_or_default();
    let sizes = missing.len();
    if a.ceilings.is_none() {
        for (name, v) in [("launch", ceilings.launch), ("bandwidth", ceilings.bandwidth), ("peak", ceilings.peak)] {
            if v.is_none() {
                missing.push(format!("--{name}"));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let what = op.map(|op| format!("--op {op}")).unwrap_or_else(|| "--flops/--bytes".into());
    let hint = if missing.len() > sizes { format!(" ({CEILINGS_HINT})") } else { String::new() };
    Err(CliError::usage(format!("{what} is missing {}{hint}", missing.join(", "))))
}

/// The product of sizes (elements) times `bytes_each`, refused when it does not fit in 64 bits
/// (the model's counts are u64; a wrapped product would answer wrongly).
fn checked_count(parts: &[(&str, u64)], bytes_each: u64) -> Result<u64, CliError> {
    let named = || parts.iter().map(|(n, v)| format!("--{n} {v}")).collect::<Vec<_>>().join(" x ");
    let mut acc: u64 = 1;
    for (_, v) in parts {
        acc = acc.checked_mul(*v).ok_or_else(|| {
            CliError::usage(format!("{}: the element count does not fit in 64 bits (at most {})", named(), u64::MAX))
        })?;
    }
    acc.checked_mul(bytes_each).ok_or_else(|| {
        CliError::usage(format!(
            "{} = {acc} elements of {bytes_each} B: the byte count does not fit in 64 bits (at most {})",
            named(),
            u64::MAX
        ))
    })
}

/// Refuse sizes whose element or byte counts overflow u64 (checked before the model multiplies).
fn check_overflow(a: &Args, op: &str, dtype: Dtype) -> CliResult {
    let size = dtype.size_bytes() as u64;
    let d: Vec<(&str, u64)> = dims(a, op).into_iter().map(|(n, v)| (n, v.unwrap_or(1))).collect();
    match op {
        "matmul" => {
            for pair in [[d[0], d[1]], [d[1], d[2]], [d[0], d[2]]] {
                checked_count(&pair, size)?;
            }
        }
        "decode-attention" => {
            checked_count(&d, 2 * size)?;
        }
        _ => {
            checked_count(&d, size)?;
        }
    }
    Ok(())
}

/// The ceilings given as flags, parsed ("4us", "4.6TB/s", "51.3TFLOP/s" or plain numbers).
struct Given {
    launch: Option<f64>,
    bandwidth: Option<f64>,
    peak: Option<f64>,
}

fn given(a: &Args) -> Result<Given, CliError> {
    use crate::quantity::{rate, seconds};
    let parse = |v: &Option<String>, f: &dyn Fn(&str) -> Result<f64, String>| v.as_deref().map(f).transpose();
    Ok(Given {
        launch: parse(&a.launch, &|t| seconds(t, "--launch")).map_err(CliError::usage)?,
        bandwidth: parse(&a.bandwidth, &|t| rate(t, "--bandwidth", "B/s")).map_err(CliError::usage)?,
        peak: parse(&a.peak, &|t| rate(t, "--peak", "FLOP/s")).map_err(CliError::usage)?,
    })
}

/// The operation's cost and its launch class (the key of its floor in a ceilings file).
fn op_cost(a: &Args, op: &str, dtype: Dtype) -> Result<(OpCost, String), CliError> {
    Ok(match op {
        "matmul" => (
            m::matmul_cost(need(a.m, "m", op)?, need(a.k, "k", op)?, need(a.n, "n", op)?, dtype),
            format!("matmul.{}", dtype.name()),
        ),
        "add" => (m::add_cost(need(a.elems, "elems", op)?, dtype), "add".into()),
        "gelu" => (m::gelu_cost(need(a.elems, "elems", op)?, dtype), "gelu".into()),
        "layernorm" => (m::layernorm_cost(need(a.rows, "rows", op)?, need(a.cols, "cols", op)?, dtype), op.into()),
        "softmax" => (m::softmax_cost(need(a.rows, "rows", op)?, need(a.cols, "cols", op)?, dtype), op.into()),
        "decode-attention" => (
            m::decode_attention_cost(
                need(a.batch, "batch", op)?,
                need(a.heads, "heads", op)?,
                need(a.tokens, "tokens", op)?,
                need(a.head_dim, "head-dim", op)?,
                dtype,
            ),
            "attention".into(),
        ),
        other => {
            return Err(CliError::usage(format!(
                "--op {other}: expected matmul, add, gelu, layernorm, softmax, decode-attention or decode-step"
            )))
        }
    })
}

fn load_ceilings(path: &PathBuf) -> Result<CeilingsSource, CliError> {
    let bytes =
        std::fs::read(path).map_err(|e| CliError::usage(format!("--ceilings {}: cannot read: {e}", path.display())))?;
    read_ceilings(&bytes, FloorFallback::EmptyKernel)
        .map_err(|e| CliError::usage(format!("--ceilings {}: {e}", path.display())))
}

/// For a run file: the findings behind the ceilings used (paths into `SessionCeilings`), as a
/// note and as JSON; nothing for a ceilings file.
fn provenance(file: Option<&CeilingsSource>, used: &[String]) -> Option<(String, serde_json::Value)> {
    let Some(CeilingsSource::Run { target, run }) = file else { return None };
    let inputs: Vec<_> = used.iter().filter_map(|c| run.input(c)).collect();
    let named: Vec<String> = inputs
        .iter()
        .map(|i| match &i.stands_in_for {
            Some(absent) => format!("{} in place of {}", i.key, head(absent)),
            None => i.key.clone(),
        })
        .collect();
    let note = format!("from the findings of {target}: {}", named.join(", "));
    Some((note, serde_json::to_value(inputs).expect("serialisable")))
}

/// The first word of a chosen class or precision ("fp16 (no bf16 peak measured)" -> "fp16").
fn head(s: &str) -> &str {
    s.split(' ').next().unwrap_or(s)
}

/// The launch class of raw `--flops`/`--bytes` (no kernel, so no class of its own).
const RAW: &str = "raw";

/// The class with the smallest launch floor in a ceilings file.
fn smallest_floor_class(c: &SessionCeilings) -> Option<&str> {
    c.launch_floor_s.iter().min_by(|a, b| a.1.total_cmp(b.1)).map(|(k, _)| k.as_str())
}

/// The three ceilings for one prediction: explicit flags win over the file.
struct Chosen {
    launch_s: f64,
    bandwidth: f64,
    peak: f64,
    note: String,
    /// For a run file: the findings behind the ceilings taken from it.
    inputs: Option<serde_json::Value>,
}

fn choose(
    g: &Given,
    file: Option<&CeilingsSource>,
    cost: &OpCost,
    class: &str,
    dtype: Dtype,
) -> Result<Chosen, CliError> {
    let (launch, bandwidth, peak) = (g.launch, g.bandwidth, g.peak);
    let mut note = String::new();
    let mut inputs = None;
    let from_file = match file {
        Some(src) if launch.is_none() || bandwidth.is_none() || peak.is_none() => {
            let c = src.ceilings();
            // Raw FLOPs and bytes have no kernel class: they take the smallest floor measured (the
            // model is a lower bound), or none at all when --launch is given.
            let raw = class == RAW;
            let class = if raw { smallest_floor_class(c).unwrap_or(RAW) } else { class };
            let ch = c.choose(cost, class, dtype).map_err(|e| CliError::usage(format!("--ceilings: {e}")))?;
            let floor = match (launch, raw) {
                (Some(_), _) => "launch floor from --launch".to_string(),
                (None, true) => format!(
                    "launch floor of '{}' (the smallest measured: raw FLOPs and bytes name no kernel)",
                    ch.launch_class
                ),
                (None, false) => format!("launch floor of '{}'", ch.launch_class),
            };
            note = format!("ceilings file: {floor}, {} bandwidth, {} peak", ch.pattern.name(), ch.precision);
            let mut used = vec![];
            for (given, ceiling) in [
                (launch, launch_ceiling(head(&ch.launch_class))),
                (bandwidth, bandwidth_ceiling(ch.pattern.name())),
                (peak, peak_ceiling(head(&ch.precision))),
            ] {
                if given.is_none() {
                    used.push(ceiling);
                }
            }
            if let Some((n, v)) = provenance(file, &used) {
                note = format!("{note}; {n}");
                inputs = Some(v);
            }
            Some(ch)
        }
        _ => None,
    };
    let pick = |v: Option<f64>, f: Option<f64>, name: &str| {
        v.or(f).ok_or_else(|| CliError::usage(format!("missing --{name} ({CEILINGS_HINT})")))
    };
    Ok(Chosen {
        launch_s: pick(launch, from_file.as_ref().map(|c| c.launch_s), "launch")?,
        bandwidth: pick(bandwidth, from_file.as_ref().map(|c| c.bandwidth_bytes_per_s), "bandwidth")?,
        peak: pick(peak, from_file.as_ref().map(|c| c.peak_flops_per_s), "peak")?,
        note,
        inputs,
    })
}

pub fn run(a: Args) -> CliResult {
    let dtype = Dtype::parse(&a.dtype)
        .ok_or_else(|| CliError::usage(format!("--dtype {}: expected fp32, fp16 or bf16", a.dtype)))?;
    let g = given(&a)?;
    let op = a.op.as_deref();
    if op.is_some() && (a.flops.is_some() || a.bytes.is_some()) {
        return Err(CliError::usage("give either --op or --flops and --bytes, not both"));
    }
    if op.is_none() && (a.flops.is_none() || a.bytes.is_none()) {
        let missing: Vec<&str> =
            [("--flops", a.flops), ("--bytes", a.bytes)].iter().filter(|(_, v)| v.is_none()).map(|(n, _)| *n).collect();
        return Err(CliError::usage(format!("missing --op (or {})", missing.join(" and "))));
    }
    if let Some(op) = op {
        if !matches!(op, "matmul" | "add" | "gelu" | "layernorm" | "softmax" | "decode-attention" | "decode-step") {
            return Err(CliError::usage(format!(
                "--op {op}: expected matmul, add, gelu, layernorm, softmax, decode-attention or decode-step"
            )));
        }
    }
    check_missing(&a, op, &g)?;
    if let Some(op) = op {
        for (name, v) in dims(&a, op) {
            need(v, name, op)?;
        }
        check_overflow(&a, op, dtype)?;
    }
    let file = a.ceilings.as_ref().map(load_ceilings).transpose()?;
    let mut extra = serde_json::Map::new();
    let (pred, flops, bytes, note) = match (a.op.as_deref(), a.flops, a.bytes) {
        (Some("decode-step"), _, _) => {
            let model = DecodeModel::by_name(&a.model)
                .ok_or_else(|| CliError::usage(format!("--model {}: expected gpt2-small", a.model)))?;
            let batch = need(a.batch, "batch", "decode-step")?;
            let context = need(a.context, "context", "decode-step")?;
            let (flops, bytes) = (m::decode_step_flops(&model, batch), m::decode_step_bytes(&model, batch, context));
            let ch = step_ceilings(&g, file.as_ref(), dtype)?;
            let pred = match a.composition.as_str() {
                "totals" => m::decode_step_totals(&model, batch, context, ch.launch_s, ch.bandwidth, ch.peak),
                "per-kernel" => {
                    let (pk, p) = m::decode_step_per_kernel_prediction(
                        &model,
                        batch,
                        context,
                        ch.launch_s,
                        ch.bandwidth,
                        ch.peak,
                    );
                    extra.insert("per_kernel".into(), serde_json::to_value(pk).expect("serialisable"));
                    p
                }
                other => return Err(CliError::usage(format!("--composition {other}: expected totals or per-kernel"))),
            };
            extra.insert("composition".into(), a.composition.clone().into());
            if let Some(v) = ch.inputs {
                extra.insert("inputs".into(), v);
            }
            (pred, flops, bytes, ch.note)
        }
        (Some(op), None, None) => {
            let (cost, class) = op_cost(&a, op, dtype)?;
            let ch = choose(&g, file.as_ref(), &cost, &class, dtype)?;
            extra.insert("pattern".into(), cost.pattern().name().into());
            if let Some(v) = ch.inputs {
                extra.insert("inputs".into(), v);
            }
            (cost.predict(ch.launch_s, ch.bandwidth, ch.peak), cost.flops, cost.bytes(), ch.note)
        }
        (None, Some(flops), Some(bytes)) => {
            for (v, name) in [(flops, "flops"), (bytes, "bytes")] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(CliError::usage(format!("--{name} {v}: must be a non-negative number")));
                }
            }
            let cost = OpCost { flops, read_bytes: bytes, write_bytes: 0.0 };
            let ch = choose(&g, file.as_ref(), &cost, RAW, dtype)?;
            if let Some(v) = ch.inputs {
                extra.insert("inputs".into(), v);
            }
            (cost.predict(ch.launch_s, ch.bandwidth, ch.peak), flops, bytes, ch.note)
        }
        (Some(_), _, _) => return Err(CliError::usage("give either --op or --flops and --bytes, not both")),
        (None, _, _) => return Err(CliError::usage("missing --op (or --flops and --bytes)")),
    };
    print_prediction(&pred, flops, bytes, &note, extra, a.json);
    Ok(())
}

/// A decode step's ceilings: the read bandwidth (weights and cache are read), the dtype's peak, and
/// as launch floor the class floors summed over the step's kernels; explicit flags win.
fn step_ceilings(g: &Given, src: Option<&CeilingsSource>, dtype: Dtype) -> Result<Chosen, CliError> {
    let file: Option<&SessionCeilings> = src.map(CeilingsSource::ceilings);
    let (launch, bandwidth, peak) = (g.launch, g.bandwidth, g.peak);
    let missing = |name: &str| CliError::usage(format!("missing --{name} ({CEILINGS_HINT})"));
    let bad_file = |e: m::CeilingError| CliError::usage(format!("--ceilings: {e}"));
    let launch_s = match (launch, file) {
        (Some(l), _) => l,
        (None, Some(c)) => m::step_launch_floor(c, &m::GPT2_SMALL_STEP_KERNELS).map_err(bad_file)?,
        (None, None) => return Err(missing("launch")),
    };
    let bandwidth = match (bandwidth, file) {
        (Some(b), _) => b,
        (None, Some(c)) => *c
            .bandwidth_bytes_per_s
            .get("read")
            .ok_or_else(|| bad_file(m::CeilingError::Missing { what: "bandwidth", key: "read".into() }))?,
        (None, None) => return Err(missing("bandwidth")),
    };
    let peak = match (peak, file) {
        (Some(p), _) => p,
        (None, Some(c)) => *c
            .peak_flops_per_s
            .get(dtype.name())
            .ok_or_else(|| bad_file(m::CeilingError::Missing { what: "peak", key: dtype.name().into() }))?,
        (None, None) => return Err(missing("peak")),
    };
    let mut note = if file.is_some() {
        "ceilings file: read bandwidth, step floor = class floors summed".to_string()
    } else {
        String::new()
    };
    let mut used: Vec<String> = vec![];
    if g.launch.is_none() {
        used.extend(m::GPT2_SMALL_STEP_KERNELS.iter().map(|(class, _)| launch_ceiling(class)));
    }
    if g.bandwidth.is_none() {
        used.push(bandwidth_ceiling("read"));
    }
    if g.peak.is_none() {
        used.push(peak_ceiling(dtype.name()));
    }
    let mut inputs = None;
    if let Some((n, v)) = provenance(src, &used) {
        note = format!("{note}; {n}");
        inputs = Some(v);
    }
    Ok(Chosen { launch_s, bandwidth, peak, note, inputs })
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
        println!("{}", serde_json::to_string_pretty(&v).expect("serialisable"));
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
