//! The interconnect section of the HTML report (docs/INTERCONNECT.md): the host link (PCIe generation and
//! width, nominal rate, each host <-> device test's plateau and its fraction of nominal; the
//! bandwidth-by-size curves are the `link` plot of the measurements) and the peer matrices
//! (GB/s, ns), the links flagged by the peer probe's outlier analysis marked.

use crate::svg::esc;
use memscope_core::keys;
use memscope_results::Results;
use serde_json::Value;
use std::fmt::Write;

fn num(r: &Results, key: &str) -> Option<f64> {
    r.findings.get(key).and_then(|f| f.as_f64())
}

fn matrix_table(title: &str, m: &[Value], scale: f64, unit: &str, flagged: &[(u64, u64)]) -> String {
    let n = m.len();
    let mut h = format!(
        "<div class=\"scroll\"><table class=\"peer\"><caption>{}</caption><tr><th>row -> column</th>",
        esc(title)
    );
    for j in 0..n {
        let _ = write!(h, "<th>GPU {j}</th>");
    }
    h.push_str("</tr>");
    for (i, row) in m.iter().enumerate() {
        let _ = write!(h, "<tr><th>GPU {i}</th>");
        for (j, c) in row.as_array().into_iter().flatten().enumerate() {
            match c.as_f64() {
                Some(v) => {
                    let bad = flagged.contains(&(i as u64, j as u64));
                    let _ = write!(
                        h,
                        "<td{}>{:.2}{}</td>",
                        if bad {
                            " class=\"outlier\" title=\"more than 5 % worse than this matrix's median\""
                        } else {
                            ""
                        },
                        v / scale,
                        if bad { " !" } else { "" }
                    );
                }
                None => h.push_str("<td class=\"na\">N/A</td>"),
            }
        }
        h.push_str("</tr>");
    }
    let _ = write!(h, "</table></div><p class=\"note\">{}</p>", esc(unit));
    h
}

/// The section, when the file holds interconnect findings.
pub fn section(r: &Results) -> Option<String> {
    let has = r
        .findings
        .keys()
        .any(|k| k.starts_with("link.") || k.starts_with("peer.") || k == keys::BW_COPY_CE_BYTES_PER_S);
    let waived_peer = r.probes.iter().find(|(k, p)| k.starts_with("peer@") && p.reason.is_some());
    if !has && waived_peer.is_none() {
        return None;
    }
    let mut h = String::from("<section id=\"interconnect\"><h2>Interconnect</h2>");
    let gen = num(r, keys::LINK_PCIE_GEN);
    let width = num(r, keys::LINK_PCIE_WIDTH);
    let nominal = num(r, keys::LINK_NOMINAL_BYTES_PER_S);
    if let (Some(g), Some(w)) = (gen, width) {
        let _ = write!(
            h,
            "<p>Host link: PCIe gen {g} x{w}{}.</p>",
            nominal
                .map(|n| format!(", nominal {:.2} GB/s per direction after line encoding", n / 1e9))
                .unwrap_or_default()
        );
    }
    let mut rows = String::new();
    for name in crate::nvbandwidth::HOST_TESTS {
        if let Some(v) = num(r, &keys::link_bytes_per_s(name)) {
            let frac = nominal.map(|n| format!("{:.1} %", 100.0 * v / n)).unwrap_or_else(|| "-".into());
            let _ = write!(rows, "<tr><td><code>{}</code></td><td>{:.2}</td><td>{frac}</td></tr>", esc(name), v / 1e9);
        }
    }
    if let Some(v) = num(r, keys::BW_COPY_CE_BYTES_PER_S) {
        let _ = write!(
            rows,
            "<tr><td><code>device_local_copy</code> (bw.copy_ce)</td><td>{:.2}</td><td>-</td></tr>",
            v / 1e9
        );
    }
    if !rows.is_empty() {
        let _ = write!(
            h,
            "<div class=\"scroll\"><table class=\"links\"><tr><th>test (nvbandwidth's name)</th><th>plateau GB/s</th><th>of nominal</th></tr>{rows}</table></div>"
        );
    }
    for (key, label) in [
        (keys::LINK_HOST_DEVICE_LATENCY_NS, "host_device_latency_sm"),
        (keys::LINK_HOST_ROUND_TRIP_NS, "8-byte host round trip"),
    ] {
        if let Some(v) = num(r, key) {
            let _ = write!(h, "<p>{}: {:.0} ns</p>", esc(label), v);
        }
    }
    let flagged: Vec<(String, u64, u64)> = r
        .findings
        .get(keys::PEER_OUTLIERS)
        .and_then(|f| f.value.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|o| Some((o["test"].as_str()?.to_string(), o["from"].as_u64()?, o["to"].as_u64()?)))
        .collect();
    let pick = |test: &str| flagged.iter().filter(|f| f.0 == test).map(|f| (f.1, f.2)).collect::<Vec<_>>();
    for test in crate::nvbandwidth::PEER_TESTS {
        if let Some(m) = r.findings.get(&keys::peer_bytes_per_s(test)).and_then(|f| f.value.as_array()) {
            h.push_str(&matrix_table(
                test,
                m,
                1e9,
                "GB/s, the row -> column copy (N/A: the diagonal or no peer access)",
                &pick(test),
            ));
        }
    }
    if let Some(m) = r.findings.get(keys::PEER_LATENCY_NS).and_then(|f| f.value.as_array()) {
        h.push_str(&matrix_table(
            "device_to_device_latency_sm",
            m,
            1.0,
            "ns per dependent load, row GPU over column GPU's memory",
            &pick("device_to_device_latency_sm"),
        ));
    }
    if let Some((_, p)) = waived_peer {
        let _ = write!(h, "<p class=\"note\">Peer matrix: {}</p>", esc(p.reason.as_deref().unwrap_or("")));
    }
    h.push_str("</section>");
    Some(h)
}
