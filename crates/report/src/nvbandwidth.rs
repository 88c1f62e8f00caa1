//! `memscope export nvbandwidth RESULTS.json`: the interconnect findings (docs/INTERCONNECT.md) printed in
//! nvbandwidth's matrix layout (NVIDIA/nvbandwidth README, "Running host_to_device_memcpy_ce." then
//! "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)" and the rows), so a user can compare line
//! by line. GB/s = 1e9 bytes/s. Host tests: one CPU row, one column per GPU of the file (a merged
//! file's members by their `host_gpu_index`); peer tests: the matrix as measured, N/A on the
//! diagonal and where there is no peer access. nvbandwidth sums both directions in its
//! bidirectional SM peer test: so does this export (the finding itself keeps each direction).
//! Tests memscope adds (pageable host memory) are printed with a note that nvbandwidth has none.

use memscope_core::keys;
use memscope_results::Results;
use serde_json::Value;
use std::fmt::Write;

/// Host tests: (name, engine label, arrow, unit line suffix).
const HOST: [(&str, &str, &str); 10] = [
    ("host_to_device_memcpy_ce", "CE", "->"),
    ("device_to_host_memcpy_ce", "CE", "<-"),
    ("host_to_device_bidirectional_memcpy_ce", "CE", "<->"),
    ("device_to_host_bidirectional_memcpy_ce", "CE", "<->"),
    ("host_to_device_memcpy_sm", "SM", "->"),
    ("device_to_host_memcpy_sm", "SM", "<-"),
    ("host_to_device_bidirectional_memcpy_sm", "SM", "<->"),
    ("device_to_host_bidirectional_memcpy_sm", "SM", "<->"),
    ("host_to_device_memcpy_ce_pageable", "CE", "->"),
    ("device_to_host_memcpy_ce_pageable", "CE", "<-"),
];

/// The host test names, in print order.
pub const HOST_TESTS: [&str; 10] =
    [HOST[0].0, HOST[1].0, HOST[2].0, HOST[3].0, HOST[4].0, HOST[5].0, HOST[6].0, HOST[7].0, HOST[8].0, HOST[9].0];

/// The peer bandwidth test names.
pub const PEER_TESTS: [&str; 4] = [PEER[0].0, PEER[1].0, PEER[2].0, PEER[3].0];

const PEER: [(&str, &str, &str); 4] = [
    ("device_to_device_memcpy_write_ce", "CE", "->"),
    ("device_to_device_bidirectional_memcpy_write_ce", "CE", "<->"),
    ("device_to_device_memcpy_write_sm", "SM", "->"),
    ("device_to_device_bidirectional_memcpy_write_sm", "SM", "<->"),
];

/// Most GPUs of one host the export lays out (GPU indices and peer matrices; docs/CONTRACTS.md,
/// "Limits"): the table is as wide as the largest index.
pub const MAX_HOST_GPUS: usize = 256;

/// The documents of a file with their GPU column: a merged file's members, else the file itself.
/// An error names a `host_gpu_index` that is not an integer below `MAX_HOST_GPUS`.
fn columns(r: &Results) -> Result<Vec<(usize, &Results)>, String> {
    let docs: Vec<(String, &Results)> = if r.fleet.is_empty() {
        vec![(String::new(), r)]
    } else {
        r.fleet.iter().enumerate().map(|(i, m)| (format!("fleet[{i}].results."), &m.results)).collect()
    };
    docs.into_iter()
        .enumerate()
        .map(|(k, (at, d))| match d.target.details.get("host_gpu_index") {
            None => Ok((k.min(MAX_HOST_GPUS - 1), d)),
            Some(v) => match v.as_u64().filter(|&i| i < MAX_HOST_GPUS as u64) {
                Some(i) => Ok((i as usize, d)),
                None => Err(format!(
                    "{at}target.details.host_gpu_index = {}: must be an integer from 0 to {}",
                    crate::hygiene::terminal(&v.to_string().chars().take(40).collect::<String>()),
                    MAX_HOST_GPUS - 1
                )),
            },
        })
        .collect()
}

fn cell(v: Option<f64>) -> String {
    match v {
        Some(x) => format!("{x:>10.2}"),
        None => format!("{:>10}", "N/A"),
    }
}

fn table(out: &mut String, rows: &[(String, Vec<Option<f64>>)], ncols: usize) {
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(1);
    let mut head = " ".repeat(w);
    for j in 0..ncols {
        let _ = write!(head, "{j:>10}");
    }
    let _ = writeln!(out, "{head}");
    for (label, vals) in rows {
        let _ = write!(out, "{label:<w$}");
        for v in vals {
            out.push_str(&cell(*v));
        }
        out.push('\n');
    }
    out.push('\n');
}

/// A peer matrix, at most `MAX_HOST_GPUS` rows and columns (the table is square in its rows).
fn matrix(v: &Value, key: &str) -> Result<Option<Vec<Vec<Option<f64>>>>, String> {
    let Some(rows) = v.as_array() else { return Ok(None) };
    if rows.len() > MAX_HOST_GPUS || rows.iter().any(|r| r.as_array().is_some_and(|c| c.len() > MAX_HOST_GPUS)) {
        return Err(format!(
            "findings[{:?}].value: a peer matrix of more than {MAX_HOST_GPUS} GPUs",
            crate::hygiene::terminal(key)
        ));
    }
    Ok(Some(
        rows.iter().map(|r| r.as_array().map(|c| c.iter().map(Value::as_f64).collect()).unwrap_or_default()).collect(),
    ))
}

/// The text; empty input (no interconnect findings) says so. An error names a GPU index or peer
/// matrix beyond `MAX_HOST_GPUS`.
pub fn export(r: &Results) -> Result<String, String> {
    let mut out = String::new();
    let cols = columns(r)?;
    let ncols = cols.iter().map(|c| c.0 + 1).max().unwrap_or(0);
    for (name, engine, arrow) in HOST {
        let key = keys::link_bytes_per_s(name);
        let mut vals = vec![None; ncols];
        let mut any = false;
        for (j, d) in &cols {
            if let Some(v) = d.findings.get(&key).and_then(|f| f.as_f64()) {
                vals[*j] = Some(v / 1e9);
                any = true;
            }
        }
        if !any {
            continue;
        }
        let _ = writeln!(out, "Running {name}.");
        if name.ends_with("pageable") {
            let _ = writeln!(out, "(memscope's own test: pageable host memory; nvbandwidth copies pinned memory only)");
        }
        let _ = writeln!(out, "memcpy {engine} CPU(row) {arrow} GPU(column) bandwidth (GB/s)");
        table(&mut out, &[("0".into(), vals)], ncols);
    }
    let mut lat = vec![None; ncols];
    for (j, d) in &cols {
        lat[*j] = d.findings.get(keys::LINK_HOST_DEVICE_LATENCY_NS).and_then(|f| f.as_f64());
    }
    if lat.iter().any(Option::is_some) {
        let _ = writeln!(out, "Running host_device_latency_sm.");
        let _ = writeln!(out, "memory latency SM CPU(row) <-> GPU(column) (ns)");
        table(&mut out, &[("0".into(), lat)], ncols);
    }
    // The peer matrices: from the document (or member) that measured them.
    for (_, d) in &cols {
        for (name, engine, arrow) in PEER {
            let key = keys::peer_bytes_per_s(name);
            let Some(m) = d.findings.get(&key).map(|f| matrix(&f.value, &key)).transpose()?.flatten() else {
                continue;
            };
            let n = m.len();
            let summed = name.ends_with("_sm") && name.contains("bidirectional");
            let rows: Vec<(String, Vec<Option<f64>>)> = (0..n)
                .map(|i| {
                    let vals = (0..n)
                        .map(|j| {
                            let v = m[i].get(j).copied().flatten()?;
                            if summed {
                                Some((v + m.get(j)?.get(i).copied().flatten()?) / 1e9)
                            } else {
                                Some(v / 1e9)
                            }
                        })
                        .collect();
                    (i.to_string(), vals)
                })
                .collect();
            let _ = writeln!(out, "Running {name}.");
            if summed {
                let _ = writeln!(out, "(both directions summed, as nvbandwidth reports its bidirectional SM tests)");
            }
            let _ = writeln!(out, "memcpy {engine} GPU(row) {arrow} GPU(column) bandwidth (GB/s)");
            table(&mut out, &rows, n);
        }
        let peer_lat = d.findings.get(keys::PEER_LATENCY_NS).map(|f| matrix(&f.value, keys::PEER_LATENCY_NS));
        if let Some(m) = peer_lat.transpose()?.flatten() {
            let _ = writeln!(out, "Running device_to_device_latency_sm.");
            let _ = writeln!(out, "Device to Device Latency SM GPU(row) <-> GPU(column) (ns)");
            let n = m.len();
            let rows: Vec<(String, Vec<Option<f64>>)> =
                m.iter().enumerate().map(|(i, r)| (i.to_string(), r.clone())).collect();
            table(&mut out, &rows, n);
        }
        if let Some(f) = d.findings.get(keys::PEER_ACCESS) {
            if let Some(rows) = f.value.as_array() {
                for (i, r) in rows.iter().enumerate().take(MAX_HOST_GPUS) {
                    for (j, a) in r.as_array().into_iter().flatten().enumerate().take(MAX_HOST_GPUS) {
                        if let Some(why) = a.as_str() {
                            let _ = writeln!(out, "no peer access {i} -> {j}: {}", crate::hygiene::terminal(why));
                        }
                    }
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("no interconnect findings in this file (run the link or peer probe)\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_core::{Confidence, Finding};
    use serde_json::json;

    #[test]
    fn layout_matches_nvbandwidth() {
        let mut details = serde_json::Map::new();
        details.insert("host_gpu_index".into(), json!(0));
        let target = memscope_core::TargetInfo {
            kind: "cuda".into(),
            id: "cuda:0".into(),
            name: "g".into(),
            clock_hz: None,
            bypass_supported: false,
            aliasing_supported: false,
            per_hop_supported: false,
            gpu_hierarchy: true,
            units: 1,
            capabilities: memscope_core::Capabilities::cuda_gpu(),
            details,
        };
        let tool: memscope_results::ToolInfo =
            serde_json::from_value(json!({"name": "memscope", "version": "0"})).unwrap();
        let mut r = Results::new(tool, target, serde_json::Map::new());
        r.findings.insert(
            keys::link_bytes_per_s("host_to_device_memcpy_ce"),
            Finding::number(55.214e9, "bytes/s", "m", Confidence::High),
        );
        r.findings.insert(
            keys::peer_bytes_per_s("device_to_device_bidirectional_memcpy_write_sm"),
            Finding::json(json!([[null, 1.0e11], [2.0e11, null]]), "bytes/s", "m", Confidence::High),
        );
        let t = export(&r).unwrap();
        assert!(t.contains("Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n          0\n0     55.21\n"), "{t}");
        assert!(t.contains("0       N/A    300.00\n1    300.00       N/A\n"), "{t}");
    }
}
