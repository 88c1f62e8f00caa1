//! The bottleneck-model section of the HTML report (seed 003): a roofline with the three
//! ceilings (launch floor, bandwidth, peak arithmetic) and the measured operations of a model run
//! coloured by regime, measured-versus-predicted times, and the scoring table (median ratio, share
//! within 25 %, share faster than the bound). The model file's format belongs to another module, so
//! it is read tolerantly: ceilings and an array of operations are found by common field names.

use crate::svg::{self, Axis, Line, Plot, Style};
use crate::units;
use serde_json::Value;
use std::fmt::Write;

/// One measured operation of a model run.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub name: String,
    pub flops: f64,
    pub bytes: f64,
    pub measured_s: f64,
    pub predicted_s: Option<f64>,
    pub regime: String,
}

/// What the report needs from a model run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelView {
    pub bandwidth_bytes_per_s: Option<f64>,
    pub peak_flops_per_s: Option<f64>,
    pub launch_floor_s: Option<f64>,
    pub ops: Vec<Op>,
}

/// Look up the first of `names` in `v`, also one level down in nested objects.
fn field<'a>(v: &'a Value, names: &[&str]) -> Option<&'a Value> {
    let obj = v.as_object()?;
    for n in names {
        if let Some(x) = obj.get(*n) {
            if !x.is_null() {
                return Some(x);
            }
        }
    }
    for (_, sub) in obj {
        if sub.is_object() {
            for n in names {
                if let Some(x) = sub.get(*n) {
                    if !x.is_null() {
                        return Some(x);
                    }
                }
            }
        }
    }
    None
}

/// A number, or the best of a map of numbers (`pick` chooses: max for rates, min for floors).
fn number_or_map(v: &Value, pick: fn(f64, f64) -> f64) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Object(m) => m.values().filter_map(|x| number_or_map(x, pick)).reduce(pick),
        _ => None,
    }
}

fn num(v: &Value, names: &[&str]) -> Option<f64> {
    field(v, names).and_then(Value::as_f64)
}

fn parse_op(v: &Value) -> Option<Op> {
    let flops = num(v, &["flops", "flop"])?;
    let bytes = num(v, &["bytes", "total_bytes"]).or_else(|| {
        let r = num(v, &["read_bytes"]);
        let w = num(v, &["write_bytes"]);
        match (r, w) {
            (None, None) => None,
            _ => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
        }
    })?;
    let measured_s = num(v, &["measured_s", "measured_time_s", "measured", "median_s", "time_measured_s"])?;
    let predicted_s = num(v, &["predicted_s", "predicted_time_s", "predicted", "bound_s", "time_s"]);
    let regime = field(v, &["regime"]).and_then(Value::as_str).unwrap_or("unknown").to_lowercase();
    let name = field(v, &["name", "op", "operation", "label"])
        .map(|x| x.as_str().map(String::from).unwrap_or_else(|| x.to_string()))
        .unwrap_or_else(|| "op".into());
    Some(Op { name, flops, bytes, measured_s, predicted_s, regime })
}

/// Find the first array (depth-first) whose elements parse as operations.
fn find_ops(v: &Value, depth: usize) -> Vec<Op> {
    if depth > 4 {
        return vec![];
    }
    match v {
        Value::Array(a) => {
            let ops: Vec<Op> = a.iter().filter_map(parse_op).collect();
            if !ops.is_empty() {
                return ops;
            }
            a.iter().map(|x| find_ops(x, depth + 1)).find(|o| !o.is_empty()).unwrap_or_default()
        }
        Value::Object(m) => m.values().map(|x| find_ops(x, depth + 1)).find(|o| !o.is_empty()).unwrap_or_default(),
        _ => vec![],
    }
}

fn find_num(v: &Value, names: &[&str], pick: fn(f64, f64) -> f64, depth: usize) -> Option<f64> {
    let obj = v.as_object()?;
    for n in names {
        if let Some(x) = obj.get(*n).and_then(|x| number_or_map(x, pick)) {
            return Some(x);
        }
    }
    if depth > 3 {
        return None;
    }
    obj.iter()
        .filter(|(k, _)| k.as_str() != "operations" && k.as_str() != "ops")
        .find_map(|(_, x)| find_num(x, names, pick, depth + 1))
}

/// Read a model run from JSON (a model.json, or a results file's "model" section). `None` when no
/// operations are found.
pub fn parse(v: &Value) -> Option<ModelView> {
    let ops = find_ops(v, 0);
    if ops.is_empty() {
        return None;
    }
    Some(ModelView {
        bandwidth_bytes_per_s: find_num(v, &["bandwidth_bytes_per_s", "bw_bytes_per_s", "bandwidth"], f64::max, 0),
        peak_flops_per_s: find_num(v, &["peak_flops_per_s", "peak"], f64::max, 0),
        launch_floor_s: find_num(v, &["launch_floor_s", "launch_s", "launch"], f64::min, 0),
        ops,
    })
}

fn regime_color(r: &str) -> &'static str {
    match r {
        "memory" | "memory-bound" => svg::PALETTE[0],
        "compute" | "compute-bound" => svg::PALETTE[1],
        "launch" | "launch-bound" => svg::PALETTE[2],
        _ => "#777777",
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The model section as HTML (two plots and the scoring tables).
pub fn section(m: &ModelView) -> String {
    let mut out = String::from("<section id=\"model\"><h2>Bottleneck model: roofline and scoring</h2>");
    let ceil = |x: Option<f64>, u| x.map(|v| units::number(v, u)).unwrap_or_else(|| "not in the file".into());
    let _ = write!(
        out,
        "<p class=\"note\">Ceilings of the session: bandwidth {}, peak arithmetic {}, launch floor {}. An operation \
         takes at least the largest of launch, bytes/bandwidth and FLOPs/peak; that term names its regime.</p>",
        ceil(m.bandwidth_bytes_per_s, "bytes/s"),
        ceil(m.peak_flops_per_s, "flops/s"),
        ceil(m.launch_floor_s, "s")
    );
    out.push_str("<div class=\"plots\">");
    // Roofline: attained FLOP/s against arithmetic intensity.
    let mut p = Plot::new(
        "plot-roofline",
        "Roofline: measured operations and the three ceilings",
        Axis { label: "arithmetic intensity [FLOP/byte]".into(), unit: "".into(), log: true },
        Axis { label: "attained [FLOP/s]".into(), unit: "flops/s".into(), log: true },
    );
    let on_plot: Vec<&Op> = m.ops.iter().filter(|o| o.flops > 0.0 && o.bytes > 0.0 && o.measured_s > 0.0).collect();
    let ai: Vec<f64> = on_plot.iter().map(|o| o.flops / o.bytes).collect();
    let lo = ai.iter().cloned().fold(f64::INFINITY, f64::min) / 2.0;
    let hi = ai.iter().cloned().fold(0.0, f64::max) * 2.0;
    if let (Some(b), true) = (m.bandwidth_bytes_per_s, lo.is_finite()) {
        let pts = (0..=24).map(|i| lo * (hi / lo).powf(i as f64 / 24.0)).map(|x| (x, b * x)).collect();
        p.lines.push(Line {
            name: "bandwidth × intensity".into(),
            color: "#444".into(),
            style: Style::Dashed,
            points: pts,
            labels: vec![],
        });
    }
    if let (Some(pk), true) = (m.peak_flops_per_s, lo.is_finite()) {
        p.lines.push(Line {
            name: "peak".into(),
            color: "#999".into(),
            style: Style::Dashed,
            points: vec![(lo, pk), (hi, pk)],
            labels: vec![],
        });
    }
    if let Some(l) = m.launch_floor_s {
        let pts = on_plot.iter().map(|o| (o.flops / o.bytes, o.flops / l)).collect();
        let labels = on_plot
            .iter()
            .map(|o| format!("{}: launch ceiling FLOPs/floor = {}", o.name, units::number(o.flops / l, "flops/s")))
            .collect();
        p.lines.push(Line {
            name: "launch ceiling (per op)".into(),
            color: "#bbbbbb".into(),
            style: Style::Points,
            points: pts,
            labels,
        });
    }
    let mut regimes: Vec<String> = m.ops.iter().map(|o| o.regime.clone()).collect();
    regimes.sort();
    regimes.dedup();
    for r in &regimes {
        let sel: Vec<&&Op> = on_plot.iter().filter(|o| &o.regime == r).collect();
        let pts = sel.iter().map(|o| (o.flops / o.bytes, o.flops / o.measured_s)).collect();
        let labels = sel.iter().map(|o| format!("{} ({r}): {}", o.name, units::seconds(o.measured_s))).collect();
        p.lines.push(Line {
            name: r.clone(),
            color: regime_color(r).into(),
            style: Style::Points,
            points: pts,
            labels,
        });
    }
    out.push_str(&svg::render(&p));
    // Measured against predicted.
    let scored: Vec<&Op> =
        m.ops.iter().filter(|o| o.predicted_s.is_some_and(|p| p > 0.0) && o.measured_s > 0.0).collect();
    if !scored.is_empty() {
        let mut q = Plot::new(
            "plot-scoring",
            "Measured time against the model's bound",
            Axis { label: "predicted (bound) [s]".into(), unit: "s".into(), log: true },
            Axis { label: "measured [s]".into(), unit: "s".into(), log: true },
        );
        let all: Vec<f64> = scored.iter().flat_map(|o| [o.measured_s, o.predicted_s.unwrap_or(0.0)]).collect();
        let (a, b) = (all.iter().cloned().fold(f64::INFINITY, f64::min), all.iter().cloned().fold(0.0, f64::max));
        q.lines.push(Line {
            name: "measured = bound".into(),
            color: "#444".into(),
            style: Style::Dashed,
            points: vec![(a, a), (b, b)],
            labels: vec![],
        });
        for r in &regimes {
            let sel: Vec<&&Op> = scored.iter().filter(|o| &o.regime == r).collect();
            let pts = sel.iter().map(|o| (o.predicted_s.unwrap_or(0.0), o.measured_s)).collect();
            let labels = sel
                .iter()
                .map(|o| format!("{}: ratio {}", o.name, units::sig(o.measured_s / o.predicted_s.unwrap_or(1.0), 3)))
                .collect();
            q.lines.push(Line {
                name: r.clone(),
                color: regime_color(r).into(),
                style: Style::Points,
                points: pts,
                labels,
            });
        }
        out.push_str(&svg::render(&q));
    }
    out.push_str("</div>");
    // Scoring by regime.
    out.push_str("<h3>Scoring by regime</h3><table class=\"t\"><tr><th>regime</th><th>operations</th><th>median ratio (measured / bound)</th><th>within 25 %</th><th>faster than the bound by &gt; 5 %</th></tr>");
    let mut groups: Vec<(String, Vec<&Op>)> =
        regimes.iter().map(|r| (r.clone(), scored.iter().filter(|o| &o.regime == r).copied().collect())).collect();
    groups.push(("all".into(), scored.clone()));
    for (r, ops) in groups.iter().filter(|(_, o)| !o.is_empty()) {
        let ratios: Vec<f64> = ops.iter().map(|o| o.measured_s / o.predicted_s.unwrap_or(1.0)).collect();
        let n = ratios.len() as f64;
        let within = ratios.iter().filter(|x| (**x - 1.0).abs() <= 0.25).count() as f64 / n;
        let faster = ratios.iter().filter(|x| **x < 0.95).count() as f64 / n;
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} %</td><td>{} %</td></tr>",
            svg::esc(r),
            ops.len(),
            median(ratios.clone()).map(|x| units::sig(x, 3)).unwrap_or_default(),
            units::sig(within * 100.0, 3),
            units::sig(faster * 100.0, 3)
        );
    }
    out.push_str("</table><h3>Operations</h3><table class=\"t\"><tr><th>operation</th><th>FLOPs</th><th>bytes</th><th>measured</th><th>bound</th><th>regime</th><th>ratio</th></tr>");
    for o in &m.ops {
        let ratio = o.predicted_s.filter(|p| *p > 0.0).map(|p| units::sig(o.measured_s / p, 3)).unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><span class=\"dot\" style=\"background:{}\"></span>{}</td><td>{}</td></tr>",
            svg::esc(&o.name),
            units::si(o.flops, ""),
            units::bytes(o.bytes),
            units::seconds(o.measured_s),
            o.predicted_s.map(units::seconds).unwrap_or_default(),
            regime_color(&o.regime),
            svg::esc(&o.regime),
            ratio
        );
    }
    out.push_str("</table></section>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tolerant_parse_finds_ceilings_and_ops() {
        let v = json!({
            "ceilings": {"bandwidth_bytes_per_s": {"read": 9.0e11, "copy": 8.5e11}, "launch_floor_s": {"matmul": 5e-6, "elementwise": 3e-6}, "peak_flops_per_s": 8e13},
            "operations": [
                {"name": "add", "cost": {"flops": 1e6, "read_bytes": 8e6, "write_bytes": 4e6}, "measured_s": 2e-5, "prediction": {"time_s": 1.4e-5, "regime": "memory"}},
                {"name": "mm", "flops": 1e12, "bytes": 1e8, "measured_s": 1.4e-2, "predicted_s": 1.25e-2, "regime": "compute"}
            ]
        });
        let m = parse(&v).expect("ops found");
        assert_eq!(m.ops.len(), 2);
        assert_eq!(m.bandwidth_bytes_per_s, Some(9.0e11));
        assert_eq!(m.launch_floor_s, Some(3e-6));
        assert_eq!(m.ops[0].bytes, 1.2e7);
        assert_eq!(m.ops[0].regime, "memory");
        assert_eq!(m.ops[0].predicted_s, Some(1.4e-5));
        let html = section(&m);
        assert!(html.contains("plot-roofline") && html.contains("plot-scoring"));
        assert!(parse(&json!({"nothing": 1})).is_none());
    }
}
