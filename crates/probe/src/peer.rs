//! `peer`: the peer <-> peer matrices of one host (issue 16), nvbandwidth's layout (row: the GPU
//! whose memory is read and whose context drives the copy, column: the GPU written; NVIDIA/
//! nvbandwidth testcase.h: device_to_device_memcpy_write_ce, device_to_device_bidirectional_
//! memcpy_write_ce, device_to_device_memcpy_write_sm, device_to_device_bidirectional_memcpy_write_sm,
//! device_to_device_latency_sm). Generic over `memscope_core::links::PeerLinks`, so the same code
//! runs on the CUDA target of a multi-GPU host and on simulated GPUs with a `links` section (CI).
//! Peer access per ordered pair first (the reason where the driver refuses); then per test and
//! pair a warm-up and `reps` samples, the median and its spread; then the analysis (`analyse`, a
//! pure function): each matrix's median over its measured cells, and the links more than
//! OUTLIER_TOLERANCE worse than it. Measured once per host, from its GPU 0; waived elsewhere.

use memscope_core::keys;
use memscope_core::links::{Engine, PeerAccess, PeerCopy, PeerLinks};
use memscope_core::stats::Sample;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use serde_json::{json, Value};

pub struct PeerProbe;

/// A link this much worse than its matrix's median is an outlier (the fleet view's 5 %).
pub const OUTLIER_TOLERANCE: f64 = 0.05;

/// The bandwidth tests: (nvbandwidth's name, engine, bidirectional).
pub const BANDWIDTH_TESTS: [(&str, Engine, bool); 4] = [
    ("device_to_device_memcpy_write_ce", Engine::Ce, false),
    ("device_to_device_bidirectional_memcpy_write_ce", Engine::Ce, true),
    ("device_to_device_memcpy_write_sm", Engine::Sm, false),
    ("device_to_device_bidirectional_memcpy_write_sm", Engine::Sm, true),
];

/// The latency test's name.
pub const LATENCY_TEST: &str = "device_to_device_latency_sm";

/// A square matrix of medians (None: diagonal or not measured) and each cell's relative MAD.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub test: String,
    pub unit: &'static str,
    pub cells: Vec<Vec<Option<f64>>>,
    pub rel_mad: Vec<Vec<Option<f64>>>,
}

/// One link flagged by `analyse`.
#[derive(Debug, Clone, PartialEq)]
pub struct Outlier {
    pub test: String,
    pub from: usize,
    pub to: usize,
    pub value: f64,
    pub median: f64,
    /// value / median.
    pub ratio: f64,
}

/// The median of a matrix's measured cells.
pub fn matrix_median(m: &Matrix) -> Option<f64> {
    let v: Vec<f64> = m.cells.iter().flatten().flatten().copied().collect();
    (!v.is_empty()).then(|| memscope_core::stats::median(&v))
}

/// The outliers of a matrix: bandwidth more than `tol` below its median, latency more than `tol`
/// above it; worst first.
pub fn analyse(m: &Matrix, tol: f64) -> Vec<Outlier> {
    let Some(med) = matrix_median(m) else { return vec![] };
    let latency = m.unit == "ns";
    let mut out = vec![];
    for (i, row) in m.cells.iter().enumerate() {
        for (j, c) in row.iter().enumerate() {
            let Some(v) = *c else { continue };
            let ratio = v / med;
            let bad = if latency { ratio > 1.0 + tol } else { ratio < 1.0 - tol };
            if bad {
                out.push(Outlier { test: m.test.clone(), from: i, to: j, value: v, median: med, ratio });
            }
        }
    }
    out.sort_by(|a, b| {
        let (x, y) = if latency { (b.ratio, a.ratio) } else { (a.ratio, b.ratio) };
        x.total_cmp(&y)
    });
    out
}

fn to_json(cells: &[Vec<Option<f64>>]) -> Value {
    json!(cells
        .iter()
        .map(|r| r.iter().map(|c| c.map(|v| json!(v)).unwrap_or(Value::Null)).collect::<Vec<_>>())
        .collect::<Vec<_>>())
}

fn matrix_finding(m: &Matrix, method: &str) -> Finding {
    let worst = m.rel_mad.iter().flatten().flatten().cloned().fold(0.0, f64::max);
    let med = matrix_median(m);
    let conf = if worst < 0.03 { Confidence::High } else { Confidence::Medium };
    Finding::json(to_json(&m.cells), m.unit, method, conf).with_note(&format!(
        "rows: the source GPU, columns: the destination (null: the diagonal or a pair without peer access); median over \
         the measured links {}; largest relative MAD of a cell {:.2} %",
        med.map(|v| format!("{v:.4e} {}", m.unit)).unwrap_or_else(|| "none".into()),
        100.0 * worst
    ))
}

fn measure(l: &mut dyn PeerLinks, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let n = l.gpus();
    let bytes: u64 = if quick { 32 << 20 } else { 256 << 20 };
    let reps = if quick { 3 } else { 5 };
    let mut out = ProbeOutput::default();
    let mut access: Vec<Vec<PeerAccess>> = vec![];
    for i in 0..n {
        access.push((0..n).map(|j| if i == j { PeerAccess::Enabled } else { l.access(i, j) }).collect());
    }
    let access_json = json!(access
        .iter()
        .enumerate()
        .map(|(i, r)| r
            .iter()
            .enumerate()
            .map(|(j, a)| if i == j {
                Value::Null
            } else {
                match a {
                    PeerAccess::Enabled => json!(true),
                    PeerAccess::Refused(why) => json!(why),
                }
            })
            .collect::<Vec<_>>())
        .collect::<Vec<_>>());
    let how = l.describe();
    out.finding(keys::PEER_GPUS, Finding::integer(n as u64, "", &how, Confidence::High));
    out.finding(
        keys::PEER_ACCESS,
        Finding::json(
            access_json,
            "",
            &format!("peer access per ordered pair (row -> column): {how}"),
            Confidence::High,
        ),
    );
    let ok = |i: usize, j: usize| i != j && access[i][j].is_enabled();
    let mut matrices = vec![];
    for (test, engine, bidir) in BANDWIDTH_TESTS {
        let mut m = Matrix {
            test: test.into(),
            unit: "bytes/s",
            cells: vec![vec![None; n]; n],
            rel_mad: vec![vec![None; n]; n],
        };
        for i in 0..n {
            for j in 0..n {
                if !ok(i, j) || (bidir && !ok(j, i)) {
                    continue;
                }
                let c = PeerCopy { src: i, dst: j, engine, bidirectional: bidir, bytes };
                l.copy_seconds(&c, 1)?; // warm-up
                let secs = l.copy_seconds(&c, reps)?;
                let rates: Vec<f64> = secs.iter().map(|s| bytes as f64 / s).collect();
                let s = Sample::new(&rates).map_err(|e| ProbeError::Failed(format!("{test} {i}->{j}: {e}")))?;
                m.cells[i][j] = Some(s.median());
                m.rel_mad[i][j] = Some(s.spread().mad / s.median());
            }
        }
        let method = format!(
            "{test}: {} of {bytes} bytes from the row GPU's memory to the column GPU's{}, a warm-up and {reps} samples per \
             pair, median; {how}",
            if engine == Engine::Ce { "copy-engine copies" } else { "copy-kernel copies" },
            if bidir { " while the column GPU copies as much back (only the row -> column copy timed)" } else { "" }
        );
        out.finding(&keys::peer_bytes_per_s(test), matrix_finding(&m, &method));
        matrices.push(m);
    }
    let mut lat = Matrix {
        test: LATENCY_TEST.into(),
        unit: "ns",
        cells: vec![vec![None; n]; n],
        rel_mad: vec![vec![None; n]; n],
    };
    for i in 0..n {
        for j in 0..n {
            if ok(i, j) {
                l.latency_ns(i, j, 1)?;
                let v = l.latency_ns(i, j, reps)?;
                let s = Sample::new(&v).map_err(|e| ProbeError::Failed(format!("latency {i}->{j}: {e}")))?;
                lat.cells[i][j] = Some(s.median());
                lat.rel_mad[i][j] = Some(s.spread().mad / s.median());
            }
        }
    }
    let method = format!(
        "{LATENCY_TEST}: the row GPU chases a dependent pointer cycle in the column GPU's memory (whole chase time / hops), \
         a warm-up and {reps} samples, median; {how}"
    );
    out.finding(keys::PEER_LATENCY_NS, matrix_finding(&lat, &method));
    matrices.push(lat);
    let outliers: Vec<Outlier> = matrices.iter().flat_map(|m| analyse(m, OUTLIER_TOLERANCE)).collect();
    let list = json!(outliers
        .iter()
        .map(|o| json!({"test": o.test, "from": o.from, "to": o.to, "value": o.value, "median": o.median, "ratio": o.ratio}))
        .collect::<Vec<_>>());
    let note = if outliers.is_empty() {
        "no link is more than 5 % worse than its matrix's median".to_string()
    } else {
        outliers
            .iter()
            .map(|o| format!("{} {}->{}: {:.1} % of the median", o.test, o.from, o.to, 100.0 * o.ratio))
            .collect::<Vec<_>>()
            .join("; ")
    };
    out.finding(
        keys::PEER_OUTLIERS,
        Finding::json(
            list,
            "",
            "per matrix, the links more than 5 % worse than the median of its measured links (bandwidth below, latency \
             above), worst first",
            Confidence::High,
        )
        .with_note(&note),
    );
    Ok(out)
}

/// Whether the target describes a host with peers, and is that host's GPU 0.
pub fn peer_applicability(info: &TargetInfo) -> Applicability {
    let Some(n) = info.details.get("host_gpus").and_then(Value::as_u64) else {
        return Applicability::Waived(
            "no peer GPUs to measure: not a GPU, or a simulated hierarchy without a `links` section".into(),
        );
    };
    if n < 2 {
        return Applicability::Waived(format!("one GPU on this host ({}): no peer pair to measure", info.id));
    }
    match info.details.get("host_gpu_index").and_then(Value::as_u64) {
        Some(0) => Applicability::Applicable,
        Some(i) => Applicability::Waived(format!(
            "the peer matrix of this host ({n} GPUs) is measured once, from its GPU 0 (this is GPU {i})"
        )),
        None => Applicability::Waived("the target does not say which GPU of its host it is".into()),
    }
}

impl Probe for PeerProbe {
    fn key(&self) -> &'static str {
        "peer"
    }
    /// Host-timed (see `Probe::runs_alone`).
    fn runs_alone(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "peer <-> peer: bandwidth matrices (copy engine and SM, uni- and bidirectional) and latency matrix of a host's GPUs"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        peer_applicability(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let quick = ctx.quick;
        let l = ctx
            .target
            .peer_links()
            .ok_or_else(|| ProbeError::Failed("this target offers no peer-link instrument".into()))?;
        measure(l, quick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_core::links::{LinksSpec, PairSpec};
    use memscope_sim::links::SimLinks;

    fn host(noise: f64, pairs: Vec<PairSpec>) -> SimLinks {
        SimLinks::new(LinksSpec { gpus: 4, noise_fraction: noise, pairs, ..Default::default() }, 3)
    }

    #[test]
    fn the_matrix_matches_the_description_and_the_slow_link_is_the_outlier() {
        let slow = PairSpec { from: 2, to: 1, bytes_per_s: Some(3.0e11), latency_ns: Some(1300.0), no_access: None };
        let mut l = host(0.01, vec![slow]);
        let out = measure(&mut l, true).unwrap();
        let m = &out.findings[&keys::peer_bytes_per_s("device_to_device_memcpy_write_ce")];
        let bytes = (32u64 << 20) as f64;
        let want = |r: f64| bytes / (5e-6 + bytes / r);
        for i in 0..4 {
            for j in 0..4 {
                let v = &m.value[i][j];
                if i == j {
                    assert!(v.is_null());
                } else {
                    let r = if (i, j) == (2, 1) { 3.0e11 } else { 4.0e11 };
                    assert!((v.as_f64().unwrap() - want(r)).abs() / want(r) < 0.02, "{i}->{j}: {v}");
                }
            }
        }
        let o = &out.findings[keys::PEER_OUTLIERS].value;
        let flagged: Vec<(String, u64, u64)> = o
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x["test"].as_str().unwrap().to_string(), x["from"].as_u64().unwrap(), x["to"].as_u64().unwrap()))
            .collect();
        // Every matrix flags 2 -> 1 and nothing else (the bidirectional ones also 1 -> 2? no: only the
        // row -> column copy is timed, and 1 -> 2 runs at the default rate).
        assert_eq!(flagged.len(), 5, "{flagged:?}");
        assert!(flagged.iter().all(|(_, f, t)| (*f, *t) == (2, 1)), "{flagged:?}");
        assert!(flagged.iter().any(|(t, _, _)| t == LATENCY_TEST));
    }

    #[test]
    fn no_access_pairs_say_why_and_are_left_out() {
        let no = PairSpec {
            from: 0,
            to: 3,
            bytes_per_s: None,
            latency_ns: None,
            no_access: Some("no P2P over this bridge".into()),
        };
        let mut l = host(0.0, vec![no]);
        let out = measure(&mut l, true).unwrap();
        assert_eq!(
            out.findings[keys::PEER_ACCESS].value[0][3],
            json!("GPU 0 cannot access GPU 3: no P2P over this bridge")
        );
        assert_eq!(out.findings[keys::PEER_ACCESS].value[3][0], json!(true));
        let m = &out.findings[&keys::peer_bytes_per_s("device_to_device_memcpy_write_ce")].value;
        assert!(m[0][3].is_null() && !m[3][0].is_null());
        // The bidirectional matrix needs both directions: 3 -> 0 is left out too.
        let b = &out.findings[&keys::peer_bytes_per_s("device_to_device_bidirectional_memcpy_write_ce")].value;
        assert!(b[0][3].is_null() && b[3][0].is_null());
        assert!(out.findings[keys::PEER_OUTLIERS].value.as_array().unwrap().is_empty());
    }

    #[test]
    fn analyse_on_synthetic_matrices() {
        let m = Matrix {
            test: "t".into(),
            unit: "bytes/s",
            cells: vec![
                vec![None, Some(100.0), Some(99.0)],
                vec![Some(101.0), None, Some(90.0)],
                vec![Some(100.0), Some(80.0), None],
            ],
            rel_mad: vec![vec![None; 3]; 3],
        };
        let o = analyse(&m, 0.05);
        assert_eq!(o.iter().map(|x| (x.from, x.to)).collect::<Vec<_>>(), vec![(2, 1), (1, 2)]);
        let lat = Matrix { unit: "ns", cells: vec![vec![None, Some(1000.0)], vec![Some(1200.0), None]], ..m.clone() };
        // (median of two cells is their mean, 1100: 1200 is 9 % above)
        assert_eq!(analyse(&lat, 0.05).iter().map(|x| (x.from, x.to)).collect::<Vec<_>>(), vec![(1, 0)]);
        assert!(analyse(&Matrix { cells: vec![vec![None]], ..m }, 0.05).is_empty());
    }

    #[test]
    fn applicability_reads_the_host_description() {
        let mut info = TargetInfo {
            kind: "cuda".into(),
            id: "cuda:0".into(),
            name: "x".into(),
            clock_hz: None,
            bypass_supported: false,
            aliasing_supported: false,
            per_hop_supported: false,
            gpu_hierarchy: true,
            units: 1,
            capabilities: memscope_core::Capabilities::cuda_gpu(),
            details: Default::default(),
        };
        assert!(matches!(peer_applicability(&info), Applicability::Waived(_)));
        info.details.insert("host_gpus".into(), json!(1));
        info.details.insert("host_gpu_index".into(), json!(0));
        let Applicability::Waived(w) = peer_applicability(&info) else { panic!() };
        assert!(w.contains("one GPU"), "{w}");
        info.details.insert("host_gpus".into(), json!(8));
        assert_eq!(peer_applicability(&info), Applicability::Applicable);
        info.details.insert("host_gpu_index".into(), json!(3));
        assert!(matches!(peer_applicability(&info), Applicability::Waived(_)));
    }
}
