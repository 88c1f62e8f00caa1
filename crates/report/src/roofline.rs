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
    /// The op's own launch floor (its class's), when the file gives one.
    pub launch_s: Option<f64>,
}

/// What the report needs from a model run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelView {
    /// Bandwidth ceilings by pattern ("read", "copy"; "" when the file gives one number).
    pub bandwidth_bytes_per_s: Vec<(String, f64)>,
    /// Peak arithmetic by precision ("fp32", "fp16"; "" for one number).
    pub peak_flops_per_s: Vec<(String, f64)>,
    /// The smallest launch floor of the session.
    pub launch_floor_s: Option<f64>,
    pub ops: Vec<Op>,
    /// Set by `memscope report --any-device` when the model run is of another device.
    pub warning: Option<String>,
}

/// The value at a dotted path ("measured.per_call_s").
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, k| cur.get(k))
}

/// The first path that holds a number.
fn num(v: &Value, paths: &[&str]) -> Option<f64> {
    paths.iter().find_map(|p| at(v, p).and_then(Value::as_f64))
}

fn text(v: &Value, paths: &[&str]) -> Option<String> {
    paths.iter().find_map(|p| at(v, p).and_then(Value::as_str).map(String::from))
}

fn parse_op(v: &Value) -> Option<Op> {
    let flops = num(v, &["flops", "cost.flops", "counts.flops"])?;
    let bytes = num(v, &["bytes", "total_bytes", "cost.bytes", "counts.bytes"]).or_else(|| {
        let r = num(v, &["read_bytes", "cost.read_bytes"]);
        let w = num(v, &["write_bytes", "cost.write_bytes"]);
        (r.is_some() || w.is_some()).then(|| r.unwrap_or(0.0) + w.unwrap_or(0.0))
    })?;
    let measured_s = num(
        v,
        &[
            "measured_s",
            "measured_time_s",
            "measured",
            "measured.per_call_s",
            "measured.time_s",
            "measured.median_s",
            "median_s",
        ],
    )?;
    let predicted_s = num(
        v,
        &["predicted_s", "predicted_time_s", "predicted", "prediction.time_s", "prediction.predicted_s", "bound_s"],
    );
    let regime = text(v, &["regime", "prediction.regime"]).unwrap_or_else(|| "unknown".into()).to_lowercase();
    let name = text(v, &["name", "operation", "op", "label"]).unwrap_or_else(|| "op".into());
    let launch_s = num(v, &["ceilings.launch_s", "launch_s", "prediction.bounds.launch_s"]);
    Some(Op { name, flops, bytes, measured_s, predicted_s, regime, launch_s })
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

/// A ceiling given as a number or as a map of named numbers, found under `names` at the top
/// level or in a "ceilings" object (searched depth-first, operations excluded).
fn find_ceiling(v: &Value, names: &[&str], depth: usize) -> Vec<(String, f64)> {
    let Some(obj) = v.as_object() else { return vec![] };
    for n in names {
        match obj.get(*n) {
            Some(Value::Number(x)) => return x.as_f64().map(|x| vec![(String::new(), x)]).unwrap_or_default(),
            Some(Value::Object(m)) => {
                let named: Vec<(String, f64)> =
                    m.iter().filter_map(|(k, x)| x.as_f64().map(|x| (k.clone(), x))).collect();
                if !named.is_empty() {
                    return named;
                }
            }
            _ => {}
        }
    }
    if depth > 3 {
        return vec![];
    }
    obj.iter()
        .filter(|(_, x)| x.is_object())
        .map(|(_, x)| find_ceiling(x, names, depth + 1))
        .find(|c| !c.is_empty())
        .unwrap_or_default()
}

/// Read a model run from JSON (a model.json, or a results file's "model" section). `None` when no
/// operations are found.
pub fn parse(v: &Value) -> Option<ModelView> {
    let ops = find_ops(v, 0);
    if ops.is_empty() {
        return None;
    }
    let launch = find_ceiling(v, &["launch_floor_s", "launch_s"], 0);
    Some(ModelView {
        bandwidth_bytes_per_s: find_ceiling(v, &["bandwidth_bytes_per_s", "bw_bytes_per_s"], 0),
        peak_flops_per_s: find_ceiling(v, &["peak_flops_per_s"], 0),
        launch_floor_s: launch.iter().map(|x| x.1).reduce(f64::min),
        ops,
        warning: v.get("other_device_warning").and_then(Value::as_str).map(String::from),
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

/// A bandwidth ceiling `b` as points from intensity `lo` to `hi`, ending where it meets the
/// highest compute roof `top` (when there is one).
fn diagonal(b: f64, lo: f64, hi: f64, top: f64) -> Vec<(f64, f64)> {
    let end = if top.is_finite() { (top / b).clamp(lo, hi) } else { hi };
    (0..=24).map(|j| lo * (end / lo).powf(j as f64 / 24.0)).map(|x| (x, b * x)).collect()
}

/// The model section as HTML (two plots and the scoring tables).
pub fn section(m: &ModelView) -> String {
    let mut out = String::from("<section id=\"model\"><h2>Bottleneck model: roofline and scoring</h2>");
    if let Some(w) = &m.warning {
        let _ = write!(out, "<p class=\"note warn\" id=\"model-warning\"><b>Warning:</b> {}</p>", svg::esc(w));
    }
    let list = |c: &[(String, f64)], u| {
        if c.is_empty() {
            return "not in the file".to_string();
        }
        c.iter()
            .map(|(k, x)| if k.is_empty() { units::number(*x, u) } else { format!("{} {k}", units::number(*x, u)) })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(
        out,
        "<p class=\"note\">Ceilings of the session: bandwidth {}; peak arithmetic {}; launch floor from {}. An \
         operation takes at least the largest of launch, bytes/bandwidth and FLOPs/peak; that term names its regime.</p>",
        svg::esc(&list(&m.bandwidth_bytes_per_s, "bytes/s")),
        svg::esc(&list(&m.peak_flops_per_s, "flops/s")),
        m.launch_floor_s.map(units::seconds).unwrap_or_else(|| "not in the file".into())
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
    // The highest compute roof: nothing is drawn above it, since no operation can run faster.
    let top = m.peak_flops_per_s.iter().map(|p| p.1).fold(f64::NAN, f64::max);
    if lo.is_finite() {
        // The bandwidth ceilings (one diagonal per pattern, ending where it meets the highest
        // compute roof) and the peaks (one line per precision).
        for (i, (k, b)) in m.bandwidth_bytes_per_s.iter().enumerate() {
            let pts = diagonal(*b, lo, hi, top);
            let name = if k.is_empty() { "bandwidth × intensity".into() } else { format!("{k} bandwidth") };
            let color = ["#444", "#666", "#888"][i % 3];
            p.lines.push(Line { name, color: color.into(), style: Style::Dashed, points: pts, labels: vec![] });
        }
        for (i, (k, pk)) in m.peak_flops_per_s.iter().enumerate() {
            let name = if k.is_empty() { "peak".into() } else { format!("{k} peak") };
            let color = ["#999", "#bbb", "#777"][i % 3];
            p.lines.push(Line {
                name,
                color: color.into(),
                style: Style::Dashed,
                points: vec![(lo, *pk), (hi, *pk)],
                labels: vec![],
            });
        }
    }
    // An operation's launch ceiling (FLOPs / its launch floor) binds only below the compute roof;
    // above it the point would be a ceiling no operation can reach, so it is left out and counted.
    type Floor<'a> = (&'a &'a Op, f64);
    let all_floors: Vec<Floor> =
        on_plot.iter().filter_map(|o| o.launch_s.or(m.launch_floor_s).map(|l| (o, l))).collect();
    let (floors, above): (Vec<Floor>, Vec<Floor>) =
        all_floors.into_iter().partition(|(o, l)| !top.is_finite() || o.flops / l <= top);
    if !floors.is_empty() {
        let pts = floors.iter().map(|(o, l)| (o.flops / o.bytes, o.flops / l)).collect();
        let labels = floors
            .iter()
            .map(|(o, l)| format!("{}: launch ceiling FLOPs/floor = {}", o.name, units::number(o.flops / l, "flops/s")))
            .collect();
        p.lines.push(Line {
            name: "launch ceiling (per op)".into(),
            color: "#c8c8c8".into(),
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
    if !above.is_empty() {
        let _ = write!(
            out,
            "<p class=\"note\" id=\"roofline-note\">{} of {} operations have a launch ceiling above the highest peak \
             ({}); those ceilings cannot bind and are not drawn.</p>",
            above.len(),
            above.len() + floors.len(),
            units::number(top, "flops/s")
        );
    }
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
    out.push_str("<h3>Scoring by regime</h3><div class=\"scroll\"><table class=\"t\"><tr><th>regime</th><th>operations</th><th>median ratio (measured / bound)</th><th>within 25 %</th><th>faster than the bound by &gt; 5 %</th></tr>");
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
    out.push_str("</table></div><h3>Operations</h3><div class=\"scroll\"><table class=\"t\"><tr><th>operation</th><th>FLOPs</th><th>bytes</th><th>measured</th><th>bound</th><th>regime</th><th>ratio</th></tr>");
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
    out.push_str("</table></div></section>");
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
                {"operation": "add", "cost": {"flops": 1e6, "read_bytes": 8e6, "write_bytes": 4e6}, "measured": {"per_call_s": 2e-5}, "prediction": {"time_s": 1.4e-5, "regime": "memory"}},
                {"name": "mm", "flops": 1e12, "bytes": 1e8, "measured_s": 1.4e-2, "predicted_s": 1.25e-2, "regime": "compute"}
            ]
        });
        let m = parse(&v).expect("ops found");
        assert_eq!(m.ops.len(), 2);
        assert_eq!(m.bandwidth_bytes_per_s, vec![("read".to_string(), 9.0e11), ("copy".to_string(), 8.5e11)]);
        assert_eq!(m.peak_flops_per_s, vec![(String::new(), 8e13)]);
        assert_eq!(m.launch_floor_s, Some(3e-6));
        assert_eq!(m.ops[0].bytes, 1.2e7);
        assert_eq!(m.ops[0].regime, "memory");
        assert_eq!(m.ops[0].predicted_s, Some(1.4e-5));
        let html = section(&m);
        assert!(html.contains("plot-roofline") && html.contains("plot-scoring"));
        assert!(parse(&json!({"nothing": 1})).is_none());
    }

    #[test]
    fn nothing_is_drawn_above_the_compute_roof() {
        // The diagonal stops at the roof.
        let pts = diagonal(4e12, 0.01, 1e4, 8e14);
        assert!(pts.iter().all(|p| p.1 <= 8e14 * (1.0 + 1e-9)), "{pts:?}");
        assert!((pts.last().unwrap().1 - 8e14).abs() < 8e14 * 1e-9, "it reaches the roof");
        // A launch ceiling of 1e9 FLOPs / 1 us = 1 PFLOP/s lies above an 80 TFLOP/s peak: not drawn.
        let v = json!({"ceilings": {"bandwidth_bytes_per_s": 9e11, "peak_flops_per_s": 8e13, "launch_floor_s": 1e-6},
            "ops": [{"name": "big", "flops": 1e9, "bytes": 1e7, "measured_s": 2e-5, "predicted_s": 1.4e-5, "regime": "memory"},
                    {"name": "tiny", "flops": 1e6, "bytes": 1e7, "measured_s": 2e-5, "predicted_s": 1.4e-5, "regime": "memory"}]});
        let html = section(&parse(&v).unwrap());
        assert!(html.contains("1 of 2 operations have a launch ceiling above the highest peak"), "{html}");
        assert!(html.contains("tiny: launch ceiling") && !html.contains("big: launch ceiling"));
    }
}
