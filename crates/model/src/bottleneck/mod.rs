//! The three-ceiling bottleneck model of seed 003 (launch floor, bytes over bandwidth, FLOPs over
//! peak): `predict_time`, the byte and FLOP counters of the seed's table, the GPT-2-small decode
//! step and its two compositions, the session-ceilings description, and `ratio_summary`.
//! Pure: no I/O, no CUDA. Every count is the seed's *minimum* (each operand read once, each result
//! written once), so each bound is a lower bound on the time.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which of the three bounds is the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Regime {
    Launch,
    Memory,
    Compute,
}

impl Regime {
    pub const ALL: [Regime; 3] = [Regime::Memory, Regime::Compute, Regime::Launch];
    pub fn name(self) -> &'static str {
        match self {
            Regime::Launch => "launch",
            Regime::Memory => "memory",
            Regime::Compute => "compute",
        }
    }
}

/// The three lower bounds of one operation, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    pub launch_s: f64,
    pub memory_s: f64,
    pub compute_s: f64,
}

/// A prediction: the bounds, the largest of them (the predicted time) and the regime it names.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub bounds: Bounds,
    pub time_s: f64,
    pub regime: Regime,
}

/// The model: an operation takes at least `launch_s`, `bytes / bandwidth` and `flops / peak`; the
/// largest names the regime (ties go to memory, then compute, then launch: the order in which a
/// lever would be reached for). Inputs must be finite and non-negative, rates positive.
pub fn predict_time(
    flops: f64,
    bytes: f64,
    launch_s: f64,
    bandwidth_bytes_per_s: f64,
    peak_flops_per_s: f64,
) -> Prediction {
    let bounds = Bounds { launch_s, memory_s: bytes / bandwidth_bytes_per_s, compute_s: flops / peak_flops_per_s };
    let (time_s, regime) = classify(&bounds);
    Prediction { bounds, time_s, regime }
}

/// The largest bound and its regime.
pub fn classify(b: &Bounds) -> (f64, Regime) {
    let mut best = (b.memory_s, Regime::Memory);
    if b.compute_s > best.0 {
        best = (b.compute_s, Regime::Compute);
    }
    if b.launch_s > best.0 {
        best = (b.launch_s, Regime::Launch);
    }
    best
}

/// Element types of the seed's measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Fp32,
    Fp16,
    Bf16,
}

impl Dtype {
    pub fn size_bytes(self) -> f64 {
        match self {
            Dtype::Fp32 => 4.0,
            Dtype::Fp16 | Dtype::Bf16 => 2.0,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Fp16 => "fp16",
            Dtype::Bf16 => "bf16",
        }
    }
    pub fn parse(s: &str) -> Option<Dtype> {
        match s {
            "fp32" | "f32" | "float32" => Some(Dtype::Fp32),
            "fp16" | "f16" | "float16" | "half" => Some(Dtype::Fp16),
            "bf16" | "bfloat16" => Some(Dtype::Bf16),
            _ => None,
        }
    }
}

/// Memory access pattern of an operation, used to pick the matching bandwidth ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Read,
    Write,
    Copy,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::Copy => "copy",
        }
    }
}

/// Minimum FLOPs and bytes of one operation (seed 003's table), split into bytes read and written.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OpCost {
    pub flops: f64,
    pub read_bytes: f64,
    pub write_bytes: f64,
}

impl OpCost {
    pub fn bytes(&self) -> f64 {
        self.read_bytes + self.write_bytes
    }
    /// FLOPs per byte.
    pub fn intensity(&self) -> f64 {
        self.flops / self.bytes()
    }
    /// The bandwidth pattern the operation's traffic matches: `read` when writes are under a tenth
    /// of its bytes, `write` when it reads nothing, `copy` (reads and writes mixed) otherwise.
    pub fn pattern(&self) -> Pattern {
        if self.read_bytes == 0.0 {
            Pattern::Write
        } else if self.write_bytes < 0.1 * self.bytes() {
            Pattern::Read
        } else {
            Pattern::Copy
        }
    }
    pub fn predict(&self, launch_s: f64, bandwidth: f64, peak: f64) -> Prediction {
        predict_time(self.flops, self.bytes(), launch_s, bandwidth, peak)
    }
}

/// Matrix product (M x K) @ (K x N): 2MNK FLOPs, (MK + KN + MN) s bytes.
pub fn matmul_cost(m: u64, k: u64, n: u64, dtype: Dtype) -> OpCost {
    let (m, k, n, s) = (m as f64, k as f64, n as f64, dtype.size_bytes());
    OpCost { flops: 2.0 * m * n * k, read_bytes: (m * k + k * n) * s, write_bytes: m * n * s }
}

/// Elementwise binary (add) over n elements: n FLOPs, 3ns bytes (read two, write one).
pub fn add_cost(n: u64, dtype: Dtype) -> OpCost {
    let (n, s) = (n as f64, dtype.size_bytes());
    OpCost { flops: n, read_bytes: 2.0 * n * s, write_bytes: n * s }
}

/// Elementwise unary GELU over n elements: about 8n FLOPs, 2ns bytes.
pub fn gelu_cost(n: u64, dtype: Dtype) -> OpCost {
    let (n, s) = (n as f64, dtype.size_bytes());
    OpCost { flops: 8.0 * n, read_bytes: n * s, write_bytes: n * s }
}

/// Layer norm over rows x cols elements: about 8n FLOPs, 2ns bytes.
pub fn layernorm_cost(rows: u64, cols: u64, dtype: Dtype) -> OpCost {
    let (n, s) = ((rows * cols) as f64, dtype.size_bytes());
    OpCost { flops: 8.0 * n, read_bytes: n * s, write_bytes: n * s }
}

/// Softmax over rows x cols elements: about 5n FLOPs, 2ns bytes.
pub fn softmax_cost(rows: u64, cols: u64, dtype: Dtype) -> OpCost {
    let (n, s) = ((rows * cols) as f64, dtype.size_bytes());
    OpCost { flops: 5.0 * n, read_bytes: n * s, write_bytes: n * s }
}

/// Decode attention, B sequences, h heads, T cached tokens, head dim d: 4BhTd FLOPs, 2BhTd s
/// bytes (keys and values read; the query and output are counted as zero, as in the seed).
pub fn decode_attention_cost(batch: u64, heads: u64, tokens: u64, head_dim: u64, dtype: Dtype) -> OpCost {
    let x = (batch * heads * tokens * head_dim) as f64;
    OpCost { flops: 4.0 * x, read_bytes: 2.0 * x * dtype.size_bytes(), write_bytes: 0.0 }
}

/// Fused x*y+z over n elements: 2n FLOPs, read three, write one (4ns bytes).
pub fn fused_mul_add_cost(n: u64, dtype: Dtype) -> OpCost {
    let (n, s) = (n as f64, dtype.size_bytes());
    OpCost { flops: 2.0 * n, read_bytes: 3.0 * n * s, write_bytes: n * s }
}

/// A model's decode-step figures (seed 003 for GPT-2 small).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DecodeModel {
    pub name: &'static str,
    /// Weights read once per step, bytes.
    pub weights_bytes: f64,
    /// KV-cache bytes per cached token per sequence.
    pub cache_bytes_per_token: f64,
    /// FLOPs per generated token.
    pub flops_per_token: f64,
}

/// GPT-2 small in fp32: 475 MiB of weights, 12 layers x (K and V) x 768 x 4 bytes = 73,728 bytes of
/// cache per token per sequence, 247 MFLOP per token (seed 003).
pub const GPT2_SMALL: DecodeModel = DecodeModel {
    name: "gpt2-small",
    weights_bytes: 475.0 * 1024.0 * 1024.0,
    cache_bytes_per_token: 73_728.0,
    flops_per_token: 247e6,
};

impl DecodeModel {
    pub fn by_name(name: &str) -> Option<DecodeModel> {
        match name {
            "gpt2-small" | "gpt2" => Some(GPT2_SMALL),
            _ => None,
        }
    }
}

/// Bytes one decode step must move: the weights once plus each sequence's cache of `context` tokens.
pub fn decode_step_bytes(model: &DecodeModel, batch: u64, context: u64) -> f64 {
    model.weights_bytes + (batch * context) as f64 * model.cache_bytes_per_token
}

/// FLOPs of one decode step: batch x FLOPs per token.
pub fn decode_step_flops(model: &DecodeModel, batch: u64) -> f64 {
    batch as f64 * model.flops_per_token
}

/// "Max of totals": the largest of the step's launch floor, total bytes over bandwidth and total
/// FLOPs over peak.
pub fn decode_step_totals(
    model: &DecodeModel,
    batch: u64,
    context: u64,
    launch_s: f64,
    bandwidth: f64,
    peak: f64,
) -> Prediction {
    predict_time(decode_step_flops(model, batch), decode_step_bytes(model, batch, context), launch_s, bandwidth, peak)
}

/// The seed's sum of per-kernel bounds for a decode step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerKernelStep {
    /// Matrix products: max(B x FLOPs per token / peak, weights / bandwidth).
    pub matmul_s: f64,
    /// Attention: B x T x cache bytes per token / bandwidth.
    pub attention_s: f64,
    /// The sum.
    pub time_s: f64,
}

/// "Sum of per-kernel bounds" (seed 003): matrix products at max(B*FLOPs/P, weights/B_w) plus
/// attention at B*T*cache-bytes/B_w.
pub fn decode_step_per_kernel(
    model: &DecodeModel,
    batch: u64,
    context: u64,
    bandwidth: f64,
    peak: f64,
) -> PerKernelStep {
    let matmul_s = (decode_step_flops(model, batch) / peak).max(model.weights_bytes / bandwidth);
    let attention_s = (batch * context) as f64 * model.cache_bytes_per_token / bandwidth;
    PerKernelStep { matmul_s, attention_s, time_s: matmul_s + attention_s }
}

/// Sum of per-kernel bounds of any kernel sequence: bounds add when kernels run one after another.
pub fn compose_per_kernel(kernels: &[Prediction]) -> f64 {
    kernels.iter().map(|p| p.time_s).sum()
}

/// The kernel launches of one GPT-2-small decode step as `memscope batch` runs it, by launch class:
/// per layer two layer norms, four matrix products, attention, two residual adds and a GELU;
/// then the final layer norm and the LM head.
pub const GPT2_SMALL_STEP_KERNELS: [(&str, u32); 5] =
    [("matmul.fp32", 12 * 4 + 1), ("layernorm", 12 * 2 + 1), ("attention", 12), ("add", 12 * 2), ("gelu", 12)];

/// A step's launch floor: each kernel's class floor, summed over the sequence.
pub fn step_launch_floor(ceilings: &SessionCeilings, kernels: &[(&str, u32)]) -> Result<f64, CeilingError> {
    kernels.iter().try_fold(0.0, |acc, (class, count)| {
        let floor = ceilings
            .launch_floor_s
            .get(*class)
            .ok_or_else(|| CeilingError::Missing { what: "launch floor", key: (*class).into() })?;
        Ok(acc + floor * *count as f64)
    })
}

/// The per-kernel composition as a prediction: time = max(step launch floor, per-kernel sum); the
/// bounds reported are the step totals'; the regime is launch when the floor wins, else compute when
/// the compute-bound matrix products are the larger part, else memory.
pub fn decode_step_per_kernel_prediction(
    model: &DecodeModel,
    batch: u64,
    context: u64,
    launch_s: f64,
    bandwidth: f64,
    peak: f64,
) -> (PerKernelStep, Prediction) {
    let pk = decode_step_per_kernel(model, batch, context, bandwidth, peak);
    let totals = decode_step_totals(model, batch, context, launch_s, bandwidth, peak);
    let compute_matmul = decode_step_flops(model, batch) / peak > model.weights_bytes / bandwidth;
    let regime = if launch_s >= pk.time_s {
        Regime::Launch
    } else if compute_matmul && pk.matmul_s >= pk.attention_s {
        Regime::Compute
    } else {
        Regime::Memory
    };
    (pk, Prediction { bounds: totals.bounds, time_s: launch_s.max(pk.time_s), regime })
}

/// Ceilings measured in one session (what `memscope ceilings` writes and `predict --ceilings`
/// reads). Bandwidths are the sustainable figures of each pattern at large buffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionCeilings {
    /// Sustainable bandwidth by pattern ("read", "write", "copy"), bytes/s (read + written bytes).
    pub bandwidth_bytes_per_s: BTreeMap<String, f64>,
    /// Launch floor per operation class ("matmul.fp32", "matmul.fp16", "add", "gelu", "layernorm",
    /// "softmax", "attention", "fma"), seconds per call.
    pub launch_floor_s: BTreeMap<String, f64>,
    /// Peak arithmetic per precision ("fp32", "fp16"), FLOP/s.
    pub peak_flops_per_s: BTreeMap<String, f64>,
}

/// Why a ceiling could not be chosen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CeilingError {
    #[error("the ceilings have no {what} for '{key}'")]
    Missing { what: &'static str, key: String },
}

/// Which ceilings one operation is judged against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChosenCeilings {
    pub launch_s: f64,
    pub launch_class: String,
    pub bandwidth_bytes_per_s: f64,
    pub pattern: Pattern,
    pub peak_flops_per_s: f64,
    pub precision: String,
}

impl SessionCeilings {
    /// The fair ceilings for an operation: the launch floor of its class, the bandwidth of the
    /// pattern its traffic matches, the peak of its precision (bf16 falls back to fp16's peak and
    /// floor only if no bf16 one was measured, and says so in `precision` / `launch_class`).
    pub fn choose(&self, cost: &OpCost, launch_class: &str, dtype: Dtype) -> Result<ChosenCeilings, CeilingError> {
        // A bf16 class falls back to the fp16 class's floor when none was measured.
        let fp16_class = launch_class.replace("bf16", "fp16");
        let (launch_class, launch_s) = match self.launch_floor_s.get(launch_class) {
            Some(l) => (launch_class.to_string(), *l),
            None if launch_class.ends_with("bf16") && self.launch_floor_s.contains_key(&fp16_class) => {
                let l = self.launch_floor_s[&fp16_class];
                (format!("{fp16_class} (no {launch_class} floor measured)"), l)
            }
            None => return Err(CeilingError::Missing { what: "launch floor", key: launch_class.into() }),
        };
        let pattern = cost.pattern();
        let bandwidth = *self
            .bandwidth_bytes_per_s
            .get(pattern.name())
            .ok_or_else(|| CeilingError::Missing { what: "bandwidth", key: pattern.name().into() })?;
        let (precision, peak) = match self.peak_flops_per_s.get(dtype.name()) {
            Some(p) => (dtype.name().to_string(), *p),
            None if dtype == Dtype::Bf16 && self.peak_flops_per_s.contains_key("fp16") => {
                ("fp16 (no bf16 peak measured)".to_string(), self.peak_flops_per_s["fp16"])
            }
            None => return Err(CeilingError::Missing { what: "peak", key: dtype.name().into() }),
        };
        Ok(ChosenCeilings {
            launch_s,
            launch_class,
            bandwidth_bytes_per_s: bandwidth,
            pattern,
            peak_flops_per_s: peak,
            precision,
        })
    }
}

/// One scored point: measured time, predicted time, predicted regime.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoredPoint {
    pub measured_s: f64,
    pub predicted_s: f64,
    pub regime: Regime,
}

impl ScoredPoint {
    pub fn ratio(&self) -> f64 {
        self.measured_s / self.predicted_s
    }
}

/// Scores of a set of ratios measured/predicted (seed 003). Shares are fractions in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioStats {
    pub count: usize,
    pub median_ratio: f64,
    /// |ratio - 1| <= 0.25.
    pub within_25pct: f64,
    /// 0.5 <= ratio <= 2.
    pub within_2x: f64,
    /// ratio < 0.95: faster than the bound by more than 5 %.
    pub faster_than_bound: f64,
    pub min_ratio: f64,
    pub max_ratio: f64,
}

/// `ratio_summary`: overall and per regime (regimes with no point are left out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioSummary {
    pub all: RatioStats,
    pub by_regime: BTreeMap<String, RatioStats>,
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

/// Statistics of a non-empty set of ratios; None when empty or any ratio is not finite.
pub fn ratio_stats(ratios: &[f64]) -> Option<RatioStats> {
    if ratios.is_empty() || ratios.iter().any(|r| !r.is_finite()) {
        return None;
    }
    let mut s = ratios.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let n = s.len() as f64;
    let share = |f: &dyn Fn(f64) -> bool| s.iter().filter(|&&r| f(r)).count() as f64 / n;
    Some(RatioStats {
        count: s.len(),
        median_ratio: median(&s),
        within_25pct: share(&|r| (r - 1.0).abs() <= 0.25),
        within_2x: share(&|r| (0.5..=2.0).contains(&r)),
        faster_than_bound: share(&|r| r < 0.95),
        min_ratio: s[0],
        max_ratio: s[s.len() - 1],
    })
}

/// Score a set of points: None when there are none or a ratio is not finite.
pub fn ratio_summary(points: &[ScoredPoint]) -> Option<RatioSummary> {
    let all = ratio_stats(&points.iter().map(ScoredPoint::ratio).collect::<Vec<_>>())?;
    let mut by_regime = BTreeMap::new();
    for regime in Regime::ALL {
        let r: Vec<f64> = points.iter().filter(|p| p.regime == regime).map(ScoredPoint::ratio).collect();
        if let Some(st) = ratio_stats(&r) {
            by_regime.insert(regime.name().to_string(), st);
        }
    }
    Some(RatioSummary { all, by_regime })
}

#[cfg(test)]
mod tests;
