//! The clock each target's cycles are counted in, one line for every report's header: in a
//! results file with a GPU and the CPU, each target's findings use that target's own clock.

use crate::units;
use memscope_core::TargetInfo;
use memscope_results::Results;
use serde_json::Value;

/// "cpu 4.091 GHz (dependent imul r64 chain; OS nominal 2.6 GHz: agrees)".
pub fn target_clock(t: &TargetInfo) -> String {
    let check = t.details.get("clock").and_then(|c| c.get("check"));
    let verdict = check.and_then(|c| c.get("verdict")).and_then(Value::as_str);
    let nominal = check.and_then(|c| c.get("nominal_hz")).and_then(Value::as_f64);
    let method = t.details.get("clock").and_then(|c| c.get("method")).and_then(Value::as_str);
    match t.clock_hz {
        Some(hz) => {
            let mut extra = Vec::new();
            if let Some(m) = method {
                extra.push(m.split(" (").next().unwrap_or(m).to_string());
            }
            match (nominal, verdict) {
                (Some(n), Some(v)) => extra.push(format!("OS nominal {}: {v}", units::si(n, "Hz"))),
                (None, Some(v)) => extra.push(v.to_string()),
                _ => {}
            }
            if extra.is_empty() {
                format!("{} {}", t.id, units::si(hz, "Hz"))
            } else {
                format!("{} {} ({})", t.id, units::si(hz, "Hz"), extra.join("; "))
            }
        }
        None => match verdict {
            Some(v) => format!("{} no cycles (measured clock {v})", t.id),
            None => format!("{} no cycles (clock unknown)", t.id),
        },
    }
}

/// "cycles at: cuda:0 1.98 GHz · cpu 4.091 GHz (...)" for a file with several targets; None
/// for one target (the header's clock is then its own).
pub fn clocks_line(results: &Results) -> Option<String> {
    (results.targets.len() > 1)
        .then(|| format!("cycles at: {}", results.targets.iter().map(target_clock).collect::<Vec<_>>().join(" · ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(id: &str, hz: Option<f64>, details: Value) -> TargetInfo {
        TargetInfo {
            kind: if id == "cpu" { "cpu".into() } else { "cuda".into() },
            id: id.into(),
            name: id.into(),
            clock_hz: hz,
            bypass_supported: false,
            aliasing_supported: false,
            per_hop_supported: false,
            gpu_hierarchy: id != "cpu",
            units: 1,
            capabilities: if id == "cpu" {
                memscope_core::Capabilities::host_cpu()
            } else {
                memscope_core::Capabilities::cuda_gpu()
            },
            details: details.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn every_target_gets_its_clock() {
        let gpu = target("cuda:0", Some(1.98e9), serde_json::json!({}));
        let cpu = target(
            "cpu",
            Some(4.091e9),
            serde_json::json!({"clock": {"method": "dependent imul r64 chain (3 cycles each on x86-64)",
                "check": {"verdict": "agrees", "nominal_hz": 2.6e9}}}),
        );
        let tool = memscope_results::ToolInfo {
            name: "memscope".into(),
            version: "0".into(),
            git_commit: None,
            command: vec![],
        };
        let mut r = Results::new(tool, gpu.clone(), Default::default());
        assert!(clocks_line(&r).is_none());
        r.targets.push(cpu);
        let line = clocks_line(&r).unwrap();
        assert!(
            line.starts_with(
                "cycles at: cuda:0 1.98 GHz · cpu 4.091 GHz (dependent imul r64 chain; OS nominal 2.6 GHz: agrees)"
            ),
            "{line}"
        );
        let bad = target("cpu", None, serde_json::json!({"clock": {"check": {"verdict": "above the reported range"}}}));
        assert_eq!(target_clock(&bad), "cpu no cycles (measured clock above the reported range)");
    }
}
