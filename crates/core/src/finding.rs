//! Findings (one typed, unit-carrying result of a probe) and series (the raw curves behind them),
//! as they appear under "findings" and "series" in the results JSON (docs/CONTRACTS.md, schema memscope/1).

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
    /// The same quantity read by a second, independent instrument in the same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Check>,
}

/// A second opinion on a numeric finding: another instrument's value, and whether the two agree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The second instrument's value, in the finding's unit.
    pub value: f64,
    /// How the second value was obtained.
    pub method: String,
    /// |check - value| / |value|.
    pub rel_diff: f64,
    /// The largest relative difference counted as agreement.
    pub tolerance: f64,
    /// Whether `rel_diff <= tolerance`.
    pub agrees: bool,
}

/// Relative difference within which two instruments agree on a latency or capacity (issue: 3 %).
pub const CHECK_TOLERANCE: f64 = 0.03;

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
            check: None,
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

    /// Attach the value in cycles at clock `hz` (a value in ns), when the clock is known.
    pub fn with_cycles_from(mut self, hz: Option<f64>) -> Self {
        if let (Some(hz), Some(ns)) = (hz, self.as_f64()) {
            self.cycles = Some(ns * 1e-9 * hz);
        }
        self
    }

    /// Attach a note.
    pub fn with_note(mut self, note: &str) -> Self {
        self.note = Some(note.to_string());
        self
    }

    /// Attach a second instrument's reading. When the two differ by more than `tolerance`
    /// (relative), the confidence drops one step and the note says by how much; an undetermined
    /// or non-numeric finding is returned unchanged.
    pub fn with_check(mut self, value: f64, method: &str, tolerance: f64) -> Self {
        let Some(v) = self.as_f64() else { return self };
        if !value.is_finite() || self.confidence == Confidence::Undetermined {
            return self;
        }
        let rel_diff = if v == 0.0 {
            if value == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (value - v).abs() / v.abs()
        };
        let agrees = rel_diff <= tolerance;
        if !agrees {
            self.confidence = match self.confidence {
                Confidence::High => Confidence::Medium,
                _ => Confidence::Low,
            };
            let why = format!(
                "second opinion disagrees: {value:.4} {} by {method} is {:.1}% away (more than {:.0}%)",
                self.unit,
                100.0 * rel_diff,
                100.0 * tolerance
            );
            self.note = Some(match self.note.take() {
                Some(n) => format!("{n}; {why}"),
                None => why,
            });
        }
        self.check = Some(Check { value, method: method.to_string(), rel_diff, tolerance, agrees });
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
