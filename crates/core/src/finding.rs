//! Findings (one typed, unit-carrying result of a probe) and series (the raw curves behind them),
//! as they appear under "findings" and "series" in the results JSON (DESIGN.md, schema memscope/1).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How much a finding can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Repeated measurements agree and the analysis had a clear signal.
    High,
    /// A clear answer with some noise or a single line of evidence.
    Medium,
    /// An answer, but the evidence is thin; read it as a lead.
    Low,
    /// The evidence does not determine the value; `value` is null and `note` says why.
    Undetermined,
}

/// Spread of the repeated measurements behind a numeric finding, in the finding's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median absolute deviation of the samples.
    pub mad: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Bootstrap 95% confidence interval of the median, when computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
    /// Number of samples.
    pub n: usize,
}

/// One result of a probe: `{"value": V, "unit": U, ...}` under a stable dotted key such as
/// `l1.hit_latency_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The value: a number, an integer, a string (hex masks are strings, "0x76a990400"), a list,
    /// or null when undetermined.
    pub value: Value,
    /// Unit of `value`: "ns", "bytes", "bytes/s", "flops/s", "s", "cycles", "entries", "count",
    /// "ratio", "" for dimensionless or text.
    pub unit: String,
    /// Spread of the samples, for measured numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
    /// The same latency in SM (or core) cycles at the measured clock, where it applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<f64>,
    /// How it was obtained, in a few words ("pointer chase, ld.global.cg, 20000 hops, median of 7").
    pub method: String,
    /// How far it can be trusted.
    pub confidence: Confidence,
    /// Free text: the reason when undetermined, caveats otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Which target produced it ("cpu", "cuda:0", "sim:rtx4090"), filled in by the runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Finding {
    /// A measured number with unit, method and confidence.
    pub fn number(value: f64, unit: &str, method: &str, confidence: Confidence) -> Self {
        Finding {
            value: serde_json::json!(value),
            unit: unit.to_string(),
            spread: None,
            cycles: None,
            method: method.to_string(),
            confidence,
            note: None,
            target: None,
        }
    }

    /// An integer count (ways, sets, entries, bytes of a capacity or line).
    pub fn integer(value: u64, unit: &str, method: &str, confidence: Confidence) -> Self {
        Finding { value: serde_json::json!(value), ..Finding::number(0.0, unit, method, confidence) }
    }

    /// A text value (e.g. "virtual", "lru").
    pub fn text(value: &str, method: &str, confidence: Confidence) -> Self {
        Finding { value: serde_json::json!(value), ..Finding::number(0.0, "", method, confidence) }
    }

    /// Any JSON value (lists of hex masks, for example).
    pub fn json(value: Value, unit: &str, method: &str, confidence: Confidence) -> Self {
        Finding { value, ..Finding::number(0.0, unit, method, confidence) }
    }

    /// The evidence did not determine this value; `reason` says why. Never a guess.
    pub fn undetermined(unit: &str, method: &str, reason: &str) -> Self {
        Finding {
            value: Value::Null,
            note: Some(reason.to_string()),
            ..Finding::number(0.0, unit, method, Confidence::Undetermined)
        }
    }

    /// Attach a spread.
    pub fn with_spread(mut self, spread: Spread) -> Self {
        self.spread = Some(spread);
        self
    }

    /// Attach the value in cycles.
    pub fn with_cycles(mut self, cycles: f64) -> Self {
        self.cycles = Some(cycles);
        self
    }

    /// Attach a note.
    pub fn with_note(mut self, note: &str) -> Self {
        self.note = Some(note.to_string());
        self
    }

    /// The value as f64, when it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        self.value.as_f64()
    }
}

/// A raw curve behind findings: latency versus footprint, bandwidth versus size, a histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What the curve is, one line.
    pub description: String,
    /// Name and unit of x ("footprint", "bytes").
    pub x_name: String,
    pub x_unit: String,
    /// Name and unit of y ("latency", "ns").
    pub y_name: String,
    pub y_unit: String,
    /// The points (same length).
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// Per-point spread of y (MAD), same length as y, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y_spread: Option<Vec<f64>>,
    /// x positions worth marking on a plot (detected knees), in x units.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<f64>,
}
