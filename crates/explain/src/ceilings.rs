//! The measured ceilings `explain` bounds real ops with, read from a memscope results file (its
//! `bw.*`, `l2.*`, `peak.*` and `launch.*` findings), and the hierarchical bound of one op: the
//! bandwidth of the level its working set fits in, the peak of the unit its shape and type let the
//! library use, and the per-kernel floor (docs/MODEL.md, "Real programs").
//!
//! Rules, each a lower bound on the op's device time:
//! - memory: all bytes pass through L2 (`bytes / l2.bandwidth_bytes_per_s`), and at most the L2's
//!   capacity can be served from it, the rest from DRAM (`(bytes - l2.capacity_bytes) / DRAM`);
//!   DRAM is the fastest of `bw.read`, `bw.write`, `bw.copy`. Without L2 findings: DRAM alone.
//! - compute: fp16/bf16 products and attention at the measured tensor-core peak (`peak.fp16`,
//!   `peak.bf16`); cuBLAS has tensor-core kernels for rows of any alignment, so the bound holds for
//!   all, and rows whose K and N are not multiples of 8 elements (16 bytes) are marked unaligned:
//!   they run its narrow-load kernels. fp32 products at `peak.fp32` (cuBLAS SGEMM, FMA units,
//!   PyTorch's default with TF32 off) unless the kernel's name shows TF32 tensor cores, then at
//!   `peak.fp16` (TF32's rate is not measured; the fp16 rate is above it, so the bound holds).
//!   Other ops' FLOPs at `peak.fp32`.
//! - floor: each kernel at least `launch.graph_floor_s` (device time of an empty kernel in a graph).

use crate::ops::{kernel_uses_tf32, Dtype, OpClass, OpCost};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One ceiling value and the finding it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    pub key: String,
    pub value: f64,
    pub unit: String,
}

/// The ceilings of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// The fastest DRAM pattern (bytes/s).
    pub dram: Ceiling,
    pub l2_bandwidth: Option<Ceiling>,
    pub l2_capacity: Option<Ceiling>,
    /// By precision: fp32, fp16, bf16 (FLOP/s).
    pub peaks: BTreeMap<String, Ceiling>,
    /// Device time of an empty kernel in a graph (s).
    pub kernel_floor: Option<Ceiling>,
    /// One launch and a synchronisation, memscope's own driver call (s; reported beside the
    /// framework's dispatch floor).
    pub launch_floor: Option<Ceiling>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CeilingsError {
    #[error("{0}: not a memscope results file (no findings object)")]
    NotResults(String),
    #[error("{0}: no DRAM bandwidth (bw.read_bytes_per_s, bw.write_bytes_per_s or bw.copy_bytes_per_s): measure it with `memscope run -p bw,l2bw,peak,launch` on the GPU")]
    NoBandwidth(String),
}

fn finding(findings: &serde_json::Map<String, Value>, key: &str, unit: &str) -> Option<Ceiling> {
    let f = findings.get(key)?;
    let value = f.get("value")?.as_f64()?;
    let u = f.get("unit").and_then(Value::as_str).unwrap_or("");
    (value.is_finite() && value > 0.0 && u == unit).then(|| Ceiling { key: key.into(), value, unit: unit.into() })
}

/// The ceilings from a results document; `name` names it in errors.
pub fn from_results(doc: &Value, name: &str) -> Result<Ceilings, CeilingsError> {
    let findings =
        doc.get("findings").and_then(Value::as_object).ok_or_else(|| CeilingsError::NotResults(name.into()))?;
    let dram = ["bw.read_bytes_per_s", "bw.write_bytes_per_s", "bw.copy_bytes_per_s"]
        .iter()
        .filter_map(|k| finding(findings, k, "bytes/s"))
        .max_by(|a, b| a.value.total_cmp(&b.value))
        .ok_or_else(|| CeilingsError::NoBandwidth(name.into()))?;
    let mut peaks = BTreeMap::new();
    for p in ["fp32", "fp16", "bf16"] {
        if let Some(c) = finding(findings, &format!("peak.{p}_flops_per_s"), "flops/s") {
            peaks.insert(p.to_string(), c);
        }
    }
    Ok(Ceilings {
        dram,
        l2_bandwidth: finding(findings, "l2.bandwidth_bytes_per_s", "bytes/s"),
        l2_capacity: finding(findings, "l2.capacity_bytes", "bytes"),
        peaks,
        kernel_floor: finding(findings, "launch.graph_floor_s", "s"),
        launch_floor: finding(findings, "launch.floor_s", "s"),
    })
}

/// An op's bound and what sets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub bound_s: f64,
    /// The binding term: `l2`, `dram`, `compute`, `floor`.
    pub ceiling: String,
    /// The finding of the binding term.
    pub ceiling_key: String,
    /// Every term, seconds.
    pub terms: BTreeMap<String, f64>,
    /// Where the working set lives: `l2` when its bytes fit the L2's capacity, else `dram`.
    pub level: String,
    /// Products: whether K and N meet the 16-byte alignment rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aligned: Option<bool>,
}

impl Ceilings {
    /// The peak an op's FLOPs run at, with its key and whether it is the tensor-core one.
    fn peak_for(&self, cost: &OpCost, kernels: &[&str]) -> Option<&Ceiling> {
        let products = matches!(cost.class, OpClass::Matmul | OpClass::Attention) && cost.gemm.is_some();
        let half = |d: Dtype| match d {
            Dtype::Bf16 => self.peaks.get("bf16").or_else(|| self.peaks.get("fp16")),
            _ => self.peaks.get("fp16"),
        };
        match (products, cost.dtype) {
            (true, Some(d @ (Dtype::Fp16 | Dtype::Bf16))) => half(d),
            (true, Some(Dtype::Fp32)) if kernels.iter().any(|k| kernel_uses_tf32(k)) => self.peaks.get("fp16"),
            (_, Some(Dtype::Fp64 | Dtype::Fp8)) => None,
            _ => self.peaks.get("fp32"),
        }
    }

    /// The bound of one op that ran as `kernels` (their names).
    pub fn bound(&self, cost: &OpCost, kernels: &[&str]) -> Bound {
        let mut terms = BTreeMap::new();
        let mut keys = BTreeMap::new();
        let bytes = cost.bytes.max(0.0);
        let dram = bytes / self.dram.value;
        let level = match (&self.l2_bandwidth, &self.l2_capacity) {
            (Some(bw), Some(cap)) => {
                let through_l2 = bytes / bw.value;
                let spill = (bytes - cap.value).max(0.0) / self.dram.value;
                terms.insert("l2".to_string(), through_l2);
                keys.insert("l2", bw.key.clone());
                if spill > 0.0 {
                    terms.insert("dram".to_string(), spill);
                    keys.insert("dram", self.dram.key.clone());
                }
                if bytes <= cap.value {
                    "l2"
                } else {
                    "dram"
                }
            }
            _ => {
                terms.insert("dram".to_string(), dram);
                keys.insert("dram", self.dram.key.clone());
                "dram"
            }
        };
        if let Some(p) = self.peak_for(cost, kernels) {
            terms.insert("compute".to_string(), cost.flops / p.value);
            keys.insert("compute", p.key.clone());
        }
        if let Some(f) = &self.kernel_floor {
            terms.insert("floor".to_string(), kernels.len().max(1) as f64 * f.value);
            keys.insert("floor", f.key.clone());
        }
        let (ceiling, bound_s) = terms
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, v)| (k.clone(), *v))
            .unwrap_or(("none".into(), 0.0));
        Bound {
            bound_s,
            ceiling_key: keys.get(ceiling.as_str()).cloned().unwrap_or_default(),
            ceiling,
            terms,
            level: level.into(),
            aligned: cost.gemm.filter(|g| g.dtype != Dtype::Fp32).map(|g| g.aligned_16_bytes()),
        }
    }
}
