//! `memscope predict`'s model side (seed 003's three-ceiling model for one operation, a raw
//! FLOPs/bytes pair or one decode step): which sizes an operation needs, every missing value named
//! at once, counts refused where they overflow 64 bits, the operation's cost and launch class, and
//! the three ceilings chosen (explicit values win over a ceilings file, whose findings are named).
//! The binary parses the flags into a `Request` and prints the `Answer`. Errors are one line
//! naming the offending flag (bad input).

use crate::bottleneck::{self as m, DecodeModel, Dtype, OpCost, Prediction, SessionCeilings};
use crate::run_ceilings::{bandwidth_ceiling, launch_ceiling, peak_ceiling, RunCeilings};
use serde_json::{Map, Value};

/// Where the ceilings come from, for the message when some are missing.
pub const CEILINGS_HINT: &str = "or --ceilings FILE: the results of `memscope run -p bw,launch,peak` on a GPU, \
or the file of `memscope ceilings --out FILE`; results/h200/ceilings.json holds the H200's";

/// The operations `predict` knows.
pub const OPERATIONS: [&str; 7] = ["matmul", "add", "gelu", "layernorm", "softmax", "decode-attention", "decode-step"];

/// A prediction asked for, as the flags give it (sizes unchecked).
#[derive(Debug, Clone)]
pub struct Request {
    /// matmul, add, gelu, layernorm, softmax, decode-attention, decode-step; or none with
    /// `flops` and `bytes`.
    pub op: Option<String>,
    pub m: Option<u64>,
    pub k: Option<u64>,
    pub n: Option<u64>,
    pub elems: Option<u64>,
    pub rows: Option<u64>,
    pub cols: Option<u64>,
    pub batch: Option<u64>,
    pub heads: Option<u64>,
    pub tokens: Option<u64>,
    pub head_dim: Option<u64>,
    pub context: Option<u64>,
    /// decode-step: the model ("gpt2-small").
    pub model: String,
    /// decode-step: "totals" or "per-kernel".
    pub composition: String,
    pub flops: Option<f64>,
    pub bytes: Option<f64>,
    pub dtype: Dtype,
    /// The ceilings given explicitly (they win over a file).
    pub given: Given,
    /// Whether a ceilings file is given (then missing ceilings are not an error before reading it).
    pub ceilings_file: bool,
}

impl Default for Request {
    /// Nothing asked yet; the flags' defaults (gpt2-small, totals, fp32).
    fn default() -> Self {
        Request {
            op: None,
            m: None,
            k: None,
            n: None,
            elems: None,
            rows: None,
            cols: None,
            batch: None,
            heads: None,
            tokens: None,
            head_dim: None,
            context: None,
            model: "gpt2-small".into(),
            composition: "totals".into(),
            flops: None,
            bytes: None,
            dtype: Dtype::Fp32,
            given: Given::default(),
            ceilings_file: false,
        }
    }
}

/// The ceilings given explicitly.
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    pub launch: Option<f64>,
    pub bandwidth: Option<f64>,
    pub peak: Option<f64>,
}

/// The ceilings of a file, and for a `memscope run` results file its target and the findings
/// behind them.
#[derive(Debug, Clone, Copy)]
pub struct CeilingsFile<'a> {
    pub ceilings: &'a SessionCeilings,
    pub run: Option<(&'a str, &'a RunCeilings)>,
}

/// The prediction with its counts, a note on where the ceilings came from, and the extra JSON
/// fields of `predict --json` (pattern, composition, per-kernel sums, the findings used).
#[derive(Debug, Clone)]
pub struct Answer {
    pub prediction: Prediction,
    pub flops: f64,
    pub bytes: f64,
    pub note: String,
    pub extra: Map<String, Value>,
}

fn need(v: Option<u64>, name: &str, op: &str) -> Result<u64, String> {
    match v {
        Some(0) => Err(format!("--{name} 0: must be at least 1")),
        Some(x) => Ok(x),
        None => Err(format!("--op {op} needs --{name}")),
    }
}

/// The size flags an operation needs, with their values.
fn dims(a: &Request, op: &str) -> Vec<(&'static str, Option<u64>)> {
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
fn check_missing(a: &Request, op: Option<&str>, ceilings: &Given) -> Result<(), String> {
    let mut missing: Vec<String> = op
        .map(|op| dims(a, op).into_iter().filter(|(_, v)| v.is_none()).map(|(n, _)| format!("--{n}")).collect())
        .unwrap_or_default();
    let sizes = missing.len();
    if !a.ceilings_file {
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
    Err(format!("{what} is missing {}{hint}", missing.join(", ")))
}

/// The product of sizes (elements) times `bytes_each`, refused when it does not fit in 64 bits
/// (the model's counts are u64; a wrapped product would answer wrongly).
fn checked_count(parts: &[(&str, u64)], bytes_each: u64) -> Result<u64, String> {
    let named = || parts.iter().map(|(n, v)| format!("--{n} {v}")).collect::<Vec<_>>().join(" x ");
    let mut acc: u64 = 1;
    for (_, v) in parts {
        acc = acc
            .checked_mul(*v)
            .ok_or_else(|| format!("{}: the element count does not fit in 64 bits (at most {})", named(), u64::MAX))?;
    }
    acc.checked_mul(bytes_each).ok_or_else(|| {
        format!(
            "{} = {acc} elements of {bytes_each} B: the byte count does not fit in 64 bits (at most {})",
            named(),
            u64::MAX
        )
    })
}

/// Refuse sizes whose element or byte counts overflow u64 (checked before the model multiplies).
fn check_overflow(a: &Request, op: &str, dtype: Dtype) -> Result<(), String> {
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

/// The operation's cost and its launch class (the key of its floor in a ceilings file).
fn op_cost(a: &Request, op: &str, dtype: Dtype) -> Result<(OpCost, String), String> {
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
            return Err(format!(
                "--op {other}: expected matmul, add, gelu, layernorm, softmax, decode-attention or decode-step"
            ))
        }
    })
}

/// For a run file: the findings behind the ceilings used (paths into `SessionCeilings`), as a
/// note and as JSON; nothing for a ceilings file.
fn provenance(file: Option<&CeilingsFile>, used: &[String]) -> Option<(String, Value)> {
    let (target, run) = file?.run?;
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
    inputs: Option<Value>,
}

fn choose(g: &Given, file: Option<&CeilingsFile>, cost: &OpCost, class: &str, dtype: Dtype) -> Result<Chosen, String> {
    let (launch, bandwidth, peak) = (g.launch, g.bandwidth, g.peak);
    let mut note = String::new();
    let mut inputs = None;
    let from_file = match file {
        Some(src) if launch.is_none() || bandwidth.is_none() || peak.is_none() => {
            let c = src.ceilings;
            // Raw FLOPs and bytes have no kernel class: they take the smallest floor measured (the
            // model is a lower bound), or none at all when --launch is given.
            let raw = class == RAW;
            let class = if raw { smallest_floor_class(c).unwrap_or(RAW) } else { class };
            let ch = c.choose(cost, class, dtype).map_err(|e| format!("--ceilings: {e}"))?;
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
        v.or(f).ok_or_else(|| format!("missing --{name} ({CEILINGS_HINT})"))
    };
    Ok(Chosen {
        launch_s: pick(launch, from_file.as_ref().map(|c| c.launch_s), "launch")?,
        bandwidth: pick(bandwidth, from_file.as_ref().map(|c| c.bandwidth_bytes_per_s), "bandwidth")?,
        peak: pick(peak, from_file.as_ref().map(|c| c.peak_flops_per_s), "peak")?,
        note,
        inputs,
    })
}

/// The chosen ceilings, refused (naming the ceiling and where it came from) unless each is a
/// positive normal finite number: zero, negative, subnormal (5e-324) or non-finite ceilings would
/// predict infinite or negative times.
fn usable(ch: Chosen, g: &Given) -> Result<Chosen, String> {
    for (name, v, flag) in [
        ("launch", ch.launch_s, g.launch.is_some()),
        ("bandwidth", ch.bandwidth, g.bandwidth.is_some()),
        ("peak", ch.peak, g.peak.is_some()),
    ] {
        if !(v.is_normal() && v > 0.0) {
            let from = if flag { format!("--{name}") } else { format!("--ceilings: the {name} ceiling") };
            return Err(format!("{from} = {v:e}: a ceiling must be a positive (normal, finite) number"));
        }
    }
    Ok(ch)
}

impl Request {
    /// Everything wrong with the request that needs no ceilings file: either an operation or a
    /// FLOPs/bytes pair, a known operation, every missing value at once, sizes of at least 1 whose
    /// counts fit in 64 bits.
    pub fn check(&self) -> Result<(), String> {
        let a = self;
        let op = a.op.as_deref();
        if op.is_some() && (a.flops.is_some() || a.bytes.is_some()) {
            return Err("give either --op or --flops and --bytes, not both".into());
        }
        if op.is_none() && (a.flops.is_none() || a.bytes.is_none()) {
            let missing: Vec<&str> = [("--flops", a.flops), ("--bytes", a.bytes)]
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(n, _)| *n)
                .collect();
            return Err(format!("missing --op (or {})", missing.join(" and ")));
        }
        if let Some(op) = op {
            if !OPERATIONS.contains(&op) {
                return Err(format!(
                    "--op {op}: expected matmul, add, gelu, layernorm, softmax, decode-attention or decode-step"
                ));
            }
        }
        check_missing(a, op, &a.given)?;
        if let Some(op) = op {
            for (name, v) in dims(a, op) {
                need(v, name, op)?;
            }
            check_overflow(a, op, a.dtype)?;
        }
        Ok(())
    }

    /// The prediction, with the ceilings of `file` where none was given explicitly.
    pub fn predict(&self, file: Option<CeilingsFile>) -> Result<Answer, String> {
        let (a, g, dtype) = (self, &self.given, self.dtype);
        let file = file.as_ref();
        let mut extra = Map::new();
        let (pred, flops, bytes, note) = match (a.op.as_deref(), a.flops, a.bytes) {
            (Some("decode-step"), _, _) => {
                let model = DecodeModel::by_name(&a.model)
                    .ok_or_else(|| format!("--model {}: expected gpt2-small", a.model))?;
                let batch = need(a.batch, "batch", "decode-step")?;
                let context = need(a.context, "context", "decode-step")?;
                let (flops, bytes) =
                    (m::decode_step_flops(&model, batch), m::decode_step_bytes(&model, batch, context));
                let ch = step_ceilings(g, file, dtype).and_then(|c| usable(c, g))?;
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
                    other => return Err(format!("--composition {other}: expected totals or per-kernel")),
                };
                extra.insert("composition".into(), a.composition.clone().into());
                if let Some(v) = ch.inputs {
                    extra.insert("inputs".into(), v);
                }
                (pred, flops, bytes, ch.note)
            }
            (Some(op), None, None) => {
                let (cost, class) = op_cost(a, op, dtype)?;
                let ch = choose(g, file, &cost, &class, dtype).and_then(|c| usable(c, g))?;
                extra.insert("pattern".into(), cost.pattern().name().into());
                if let Some(v) = ch.inputs {
                    extra.insert("inputs".into(), v);
                }
                (cost.predict(ch.launch_s, ch.bandwidth, ch.peak), cost.flops, cost.bytes(), ch.note)
            }
            (None, Some(flops), Some(bytes)) => {
                for (v, name) in [(flops, "flops"), (bytes, "bytes")] {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(format!("--{name} {v}: must be a non-negative number"));
                    }
                }
                let cost = OpCost { flops, read_bytes: bytes, write_bytes: 0.0 };
                let ch = choose(g, file, &cost, RAW, dtype).and_then(|c| usable(c, g))?;
                if let Some(v) = ch.inputs {
                    extra.insert("inputs".into(), v);
                }
                (cost.predict(ch.launch_s, ch.bandwidth, ch.peak), flops, bytes, ch.note)
            }
            (Some(_), _, _) => return Err("give either --op or --flops and --bytes, not both".into()),
            (None, _, _) => return Err("missing --op (or --flops and --bytes)".into()),
        };
        Ok(Answer { prediction: pred, flops, bytes, note, extra })
    }
}

/// A decode step's ceilings: the read bandwidth (weights and cache are read), the dtype's peak, and
/// as launch floor the class floors summed over the step's kernels; explicit flags win.
fn step_ceilings(g: &Given, src: Option<&CeilingsFile>, dtype: Dtype) -> Result<Chosen, String> {
    let file: Option<&SessionCeilings> = src.map(|s| s.ceilings);
    let (launch, bandwidth, peak) = (g.launch, g.bandwidth, g.peak);
    let missing = |name: &str| format!("missing --{name} ({CEILINGS_HINT})");
    let bad_file = |e: m::CeilingError| format!("--ceilings: {e}");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn given() -> Given {
        Given { launch: Some(4e-6), bandwidth: Some(4e12), peak: Some(5e13) }
    }

    #[test]
    fn an_add_is_memory_bound_by_its_bytes_over_the_bandwidth() {
        let r = Request {
            op: Some("add".into()),
            elems: Some(1 << 20),
            dtype: Dtype::Fp32,
            given: given(),
            ..Default::default()
        };
        r.check().unwrap();
        let a = r.predict(None).unwrap();
        // three fp32 operands of 2^20 elements: 12 MiB at 4 TB/s
        assert_eq!(a.bytes, (3u64 << 22) as f64);
        assert!((a.prediction.bounds.memory_s - a.bytes / 4e12).abs() < 1e-18);
        assert_eq!(a.extra["pattern"], "copy");
    }

    #[test]
    fn every_missing_value_is_named_at_once() {
        let r = Request { op: Some("matmul".into()), m: Some(8), dtype: Dtype::Fp32, ..Default::default() };
        let e = r.check().unwrap_err();
        assert!(e.starts_with("--op matmul is missing --k, --n, --launch, --bandwidth, --peak"), "{e}");
    }

    #[test]
    fn a_product_that_overflows_64_bits_is_refused_naming_the_sizes() {
        let r = Request {
            op: Some("add".into()),
            elems: Some(u64::MAX / 2),
            dtype: Dtype::Fp32,
            given: given(),
            ..Default::default()
        };
        let e = r.check().unwrap_err();
        assert!(e.contains("--elems") && e.contains("does not fit in 64 bits"), "{e}");
    }
}
