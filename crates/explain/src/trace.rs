//! Reading a PyTorch profiler trace (torch.profiler's Chrome trace, `.json` or `.json.gz`) into
//! the events `explain` needs: framework ops on the host, CUDA runtime calls with their
//! correlation ids, GPU kernels, copies and fills, and profiler steps (docs/MODEL.md, "Real
//! programs"). Every way a file can fail to be such a trace is one `TraceError` with a one-line
//! message naming what is wrong.

use flate2::read::GzDecoder;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

/// Why a file is not a usable trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error("{path}: cannot read the file: {why}")]
    Io { path: String, why: String },
    #[error("{path}: the gzip stream is truncated or corrupt ({why})")]
    Gzip { path: String, why: String },
    #[error("{path}: truncated: the JSON ends at line {line} column {column} before the document closes")]
    Truncated { path: String, line: usize, column: usize },
    #[error("{path}: not JSON (line {line} column {column}: {why})")]
    NotJson { path: String, line: usize, column: usize, why: String },
    #[error("{path}: not a PyTorch profiler trace: {why}")]
    OtherFormat { path: String, why: String },
    #[error("{path}: no GPU kernels: {why}")]
    NoKernels { path: String, why: String },
}

/// Where an event ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// A framework operator on the host (`cpu_op`).
    Op,
    /// A user annotation on the host (`user_annotation`: `ProfilerStep#N`, `record_function`).
    Annotation,
    /// The same annotation's span on the device (`gpu_user_annotation`).
    GpuAnnotation,
    /// A CUDA runtime or driver call on the host (`cuda_runtime`, `cuda_driver`).
    Runtime,
    /// A kernel on the GPU.
    Kernel,
    /// A copy on the GPU (`gpu_memcpy`).
    Memcpy,
    /// A fill on the GPU (`gpu_memset`).
    Memset,
}

impl Category {
    fn parse(cat: &str) -> Option<Category> {
        match cat.to_ascii_lowercase().as_str() {
            "cpu_op" | "operator" => Some(Category::Op),
            "user_annotation" => Some(Category::Annotation),
            "gpu_user_annotation" => Some(Category::GpuAnnotation),
            "cuda_runtime" | "cuda_driver" | "runtime" | "driver" => Some(Category::Runtime),
            "kernel" => Some(Category::Kernel),
            "gpu_memcpy" | "memcpy" => Some(Category::Memcpy),
            "gpu_memset" | "memset" => Some(Category::Memset),
            _ => None,
        }
    }
    /// Work on the GPU (kernels, copies, fills).
    pub fn on_device(self) -> bool {
        matches!(self, Category::Kernel | Category::Memcpy | Category::Memset)
    }
}

/// One complete ("X") event of the trace, times in microseconds as the trace writes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: String,
    pub cat: Category,
    /// Process and thread (host) or device and stream (GPU), as text.
    pub pid: String,
    pub tid: String,
    pub ts_us: f64,
    pub dur_us: f64,
    /// `args.correlation` (runtime calls and GPU work).
    pub correlation: Option<i64>,
    /// `args["Input Dims"]`: one entry per input; a tensor list is a list of shapes.
    pub input_dims: Vec<Value>,
    /// `args["Input type"]`.
    pub input_types: Vec<String>,
    /// `args["Input Strides"]` (elements; one entry per input, as `input_dims`), when recorded.
    pub input_strides: Vec<Value>,
    /// `args["Concrete Inputs"]` (scalars as text), when recorded.
    pub concrete: Vec<String>,
    /// `args.bytes` of a copy or fill.
    pub bytes: Option<f64>,
}

impl Event {
    pub fn end_us(&self) -> f64 {
        self.ts_us + self.dur_us
    }
}

/// The events of one trace, sorted by start time.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub events: Vec<Event>,
    /// Number of events in `traceEvents` (of any kind).
    pub raw_events: usize,
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn array(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}

/// The file's bytes, gunzipped when they start with gzip's magic number.
fn read_bytes(path: &Path) -> Result<Vec<u8>, TraceError> {
    let p = path.display().to_string();
    let raw = std::fs::read(path).map_err(|e| TraceError::Io { path: p.clone(), why: e.to_string() })?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::with_capacity(raw.len() * 8);
        GzDecoder::new(&raw[..]).read_to_end(&mut out).map_err(|e| TraceError::Gzip { path: p, why: e.to_string() })?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Read and check a trace file.
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    let bytes = read_bytes(path)?;
    parse(&bytes, &path.display().to_string())
}

/// Parse a trace's JSON text; `path` names it in errors.
pub fn parse(bytes: &[u8], path: &str) -> Result<Trace, TraceError> {
    let p = || path.to_string();
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| {
        if e.classify() == serde_json::error::Category::Eof {
            TraceError::Truncated { path: p(), line: e.line(), column: e.column() }
        } else {
            let why = e.to_string();
            let why = why.split(" at line").next().unwrap_or(&why).to_string();
            TraceError::NotJson { path: p(), line: e.line(), column: e.column(), why }
        }
    })?;
    let list = match &doc {
        Value::Object(m) => match m.get("traceEvents") {
            Some(Value::Array(a)) => a,
            Some(_) => return Err(TraceError::OtherFormat { path: p(), why: "traceEvents is not an array".into() }),
            None => {
                let keys: Vec<&str> = m.keys().take(6).map(String::as_str).collect();
                return Err(TraceError::OtherFormat {
                    path: p(),
                    why: format!("no traceEvents array (top-level keys: {})", keys.join(", ")),
                });
            }
        },
        Value::Array(a) => a,
        _ => {
            return Err(TraceError::OtherFormat {
                path: p(),
                why: "the document is neither an object nor an array".into(),
            })
        }
    };
    let mut events = Vec::new();
    for e in list {
        let Value::Object(o) = e else { continue };
        if o.get("ph").and_then(Value::as_str) != Some("X") {
            continue;
        }
        let Some(cat) = o.get("cat").and_then(Value::as_str).and_then(Category::parse) else { continue };
        let (Some(ts_us), Some(dur_us)) = (number(o.get("ts")), number(o.get("dur"))) else { continue };
        if !(ts_us.is_finite() && dur_us.is_finite() && dur_us >= 0.0) {
            continue;
        }
        let args = o.get("args");
        let arg = |k: &str| args.and_then(|a| a.get(k));
        events.push(Event {
            name: text(o.get("name")),
            cat,
            pid: text(o.get("pid")),
            tid: text(o.get("tid")),
            ts_us,
            dur_us,
            correlation: arg("correlation").and_then(Value::as_i64),
            input_dims: array(arg("Input Dims")),
            input_types: array(arg("Input type")).iter().map(|v| text(Some(v))).collect(),
            input_strides: array(arg("Input Strides")),
            concrete: array(arg("Concrete Inputs")).iter().map(|v| text(Some(v))).collect(),
            bytes: number(arg("bytes")),
        });
    }
    let has = |c: Category| events.iter().any(|e| e.cat == c);
    if !has(Category::Op) && !events.iter().any(|e| e.cat.on_device()) {
        return Err(TraceError::OtherFormat {
            path: p(),
            why: format!(
                "none of its {} events is a PyTorch op (cat cpu_op) or GPU work (cat kernel, gpu_memcpy, gpu_memset)",
                list.len()
            ),
        });
    }
    if !events.iter().any(|e| e.cat.on_device()) {
        return Err(TraceError::NoKernels {
            path: p(),
            why: format!(
                "{} PyTorch ops but no kernel events (profile with ProfilerActivity.CUDA on a GPU run)",
                events.iter().filter(|e| e.cat == Category::Op).count()
            ),
        });
    }
    events.sort_by(|a, b| a.ts_us.total_cmp(&b.ts_us).then(b.dur_us.total_cmp(&a.dur_us)));
    Ok(Trace { events, raw_events: list.len() })
}
