//! The second instrument of the `l2.slices` probe (docs/L2_SLICES.md, "The timing check"): after
//! the hammering, the child times one first-touch lap over the sampled lines of the same page
//! from chosen SMs with the per-SM map's kernels (kernels/sm_map.cu: lines primed at their home
//! slice by reductions, one pointer chase per SM, clock64 per hop), and the probe splits each lap
//! into near and far hits (sm_map_fit.rs). A line's slice is near or far to an SM as a whole, so
//! every slice class of the counters' partition must be all near or all far from each SM, and
//! SMs of the two groups of the per-SM map must see the opposite halves.

use super::hammer::{HammerPlan, PAGE_BYTES};
use crate::gpu::{Gpu, GpuError, GpuResult, Module};
use crate::probes::sm_map_fit::{Rep, SmEntry};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One timed lap from one SM: the lines in lap order (offsets from the page base) and clock64
/// cycles per hop of the first touch (lap A) and of the same lap again (lap B, held near).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedLap {
    pub sm: u32,
    pub lines: Vec<u64>,
    pub first_touch: Vec<u32>,
    pub warm: Vec<u32>,
    /// Uninstrumented lap's cycles per hop.
    pub warm_cycles_per_hop: f64,
}

const LINE_BYTES: u64 = 128;
const L1_LINES: u64 = 16;
const L1_WARM_HOPS: u64 = 256;
const L1_HOPS: u64 = 1024;
/// kernels/sm_map.cu SM_MAP_MAX_LINES.
const MAX_LINES: usize = 2048;

/// The plan's distinct lines (line-aligned offsets), in a fixed scrambled order.
pub fn lap_lines(plan: &HammerPlan) -> Vec<u64> {
    let mut v: Vec<u64> = plan.kernels.iter().flatten().map(|&(o, _, _)| o & !(LINE_BYTES - 1)).collect();
    v.sort_unstable();
    v.dedup();
    // Multiplicative scramble: neighbours in the page are not neighbours in the lap.
    v.sort_by_key(|&o| (o / LINE_BYTES).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    v
}

/// Time the laps of `plan.time_sms` over the plan's lines (the page already hammered; its words
/// are overwritten with the chase's pointers).
pub fn time_laps(gpu: &Gpu, page_base: u64, plan: &HammerPlan) -> GpuResult<Vec<TimedLap>> {
    let lines = lap_lines(plan);
    let n = lines.len();
    if !(8..=MAX_LINES).contains(&n) {
        return Err(GpuError::invalid(format!("timing lap: {n} lines (8..={MAX_LINES})")));
    }
    let sms = gpu.attr(crate::gpu::DeviceAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
    // The cycle: each line's first word points at the next line; one TLB line per page outside it.
    let span = plan.pages * PAGE_BYTES;
    let mut image = vec![0u64; (span / 8) as usize];
    for (i, &o) in lines.iter().enumerate() {
        image[(o / 8) as usize] = page_base + lines[(i + 1) % n];
    }
    let mut tlb: Vec<u64> = Vec::new();
    for p in 0..plan.pages {
        let free = (0..PAGE_BYTES / LINE_BYTES)
            .map(|i| p * PAGE_BYTES + (PAGE_BYTES / LINE_BYTES - 1 - i) * LINE_BYTES)
            .find(|o| !lines.contains(o));
        tlb.extend(free);
    }
    for (i, &o) in tlb.iter().enumerate() {
        image[(o / 8) as usize] = page_base + tlb[(i + 1) % tlb.len()];
    }
    gpu.htod(page_base, &image)?;
    let l1_buf = gpu.malloc(L1_LINES * LINE_BYTES)?;
    let aux = gpu.malloc(8 * n as u64 + 4096 + 8 * n as u64);
    let res = aux.and_then(|aux| {
        let r = (|| {
            let mut l1_image = vec![0u64; (L1_LINES * LINE_BYTES / 8) as usize];
            for i in 0..L1_LINES {
                l1_image[(i * LINE_BYTES / 8) as usize] = l1_buf + ((i + 1) % L1_LINES) * LINE_BYTES;
            }
            gpu.htod(l1_buf, &l1_image)?;
            let abs: Vec<u64> = lines.iter().map(|o| page_base + o).collect();
            let lines_d = aux;
            gpu.htod(lines_d, &abs)?;
            let (claim, out_d, rec_d) = (aux + 8 * n as u64, aux + 8 * n as u64 + 256, aux + 8 * n as u64 + 4096);
            let mut laps = Vec::new();
            for _ in 0..plan.time_reps.max(1) {
                for &sm in &plan.time_sms {
                    laps.push(one_lap(gpu, sms, &abs, page_base, &tlb, l1_buf, lines_d, [claim, out_d, rec_d], sm)?);
                    laps.last_mut().unwrap().lines.clone_from(&lines);
                }
            }
            Ok(laps)
        })();
        gpu.free(aux);
        r
    });
    gpu.free(l1_buf);
    res
}

#[allow(clippy::too_many_arguments)]
fn one_lap(
    gpu: &Gpu,
    sms: u32,
    abs: &[u64],
    page_base: u64,
    tlb: &[u64],
    l1_buf: u64,
    lines_d: u64,
    [claim, out_d, rec_d]: [u64; 3],
    sm: u32,
) -> GpuResult<TimedLap> {
    let n = abs.len() as u64;
    let null = std::ptr::null_mut();
    gpu.launch(Module::SmMap, "sm_map_prime", 8, 256, 0, &[lines_d, n], null)?;
    for _ in 0..4 {
        gpu.memset(claim, 8)?;
        gpu.memset(out_d, 12 * 8)?;
        let args = [
            abs[0],
            n,
            page_base + tlb[0],
            tlb.len() as u64,
            l1_buf,
            L1_WARM_HOPS,
            L1_HOPS,
            sm as u64,
            claim,
            out_d,
            rec_d,
        ];
        gpu.launch(Module::SmMap, "sm_map_chase", sms * 4, 32, 0, &args, null)?;
        gpu.sync()?;
        let o: Vec<u64> = gpu.dtoh(out_d, 12)?;
        if o[11] == 0 {
            continue;
        }
        if o[10] != sm as u64 || o[8] != abs[0] {
            return Err(GpuError::invalid(format!(
                "timing lap on SM {sm}: ran on SM {}, ended at {:#x} (expected {:#x})",
                o[10], o[8], abs[0]
            )));
        }
        let rec: Vec<u32> = gpu.dtoh(rec_d, 2 * n as usize)?;
        return Ok(TimedLap {
            sm,
            lines: vec![],
            first_touch: rec[..n as usize].to_vec(),
            warm: rec[n as usize..].to_vec(),
            warm_cycles_per_hop: o[1].wrapping_sub(o[0]) as f64 / n as f64,
        });
    }
    Err(GpuError::invalid(format!("timing lap: no block was scheduled on SM {sm} in 4 launches")))
}

/// One timed SM: per sampled line far (true), near (false) or undetermined, by the votes of its
/// laps (each split in two modes), and the median near and far first touch (cycles, recording
/// cost included) over the laps that split.
#[derive(Debug, Clone, PartialEq)]
pub struct SmLabels {
    pub sm: u32,
    pub far: Vec<Option<bool>>,
    pub near_cycles: f64,
    pub far_cycles: f64,
}

/// The labels of every timed SM. `lines` are the sampled offsets.
pub fn far_labels(lines: &[u64], laps: &[TimedLap]) -> Vec<SmLabels> {
    let mut sms: Vec<u32> = laps.iter().map(|l| l.sm).collect();
    sms.sort_unstable();
    sms.dedup();
    sms.into_iter()
        .map(|sm| {
            let reps: Vec<Rep> = laps
                .iter()
                .filter(|l| l.sm == sm)
                .map(|l| {
                    // Per sampled line, in the sample's order (a line missing from the lap: NaN).
                    let at = |v: &[u32]| -> Vec<f64> {
                        lines
                            .iter()
                            .map(|o| l.lines.iter().position(|x| x == o).map(|i| v[i] as f64).unwrap_or(f64::NAN))
                            .collect()
                    };
                    Rep {
                        first_touch: at(&l.first_touch),
                        warm_recorded: at(&l.warm),
                        warm_cycles: l.warm_cycles_per_hop,
                        warm_ns: f64::NAN,
                        l1_cycles: f64::NAN,
                        l1_ns: f64::NAN,
                    }
                })
                .collect();
            let e = SmEntry::new(sm, &reps);
            let o: Vec<f64> = e.overhead.clone();
            let back = |v: &[f64]| {
                let w: Vec<f64> = v.iter().zip(&o).map(|(x, o)| x + o).collect();
                if w.is_empty() {
                    f64::NAN
                } else {
                    memscope_core::stats::median(&w)
                }
            };
            SmLabels { sm, far: e.far_lines(), near_cycles: back(&e.near), far_cycles: back(&e.far) }
        })
        .collect()
}

/// Address bits a page offset's partition bit is fitted over (the line's bits 7..20).
const PAGE_BITS: u64 = ((1 << 21) - 1) & !(LINE_BYTES - 1);

/// An affine GF(2) function of a page offset: far = parity(offset & mask) XOR constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionBit {
    pub mask: u64,
    pub constant: u8,
    /// Independent equations among the labelled lines (15 determine mask and constant fully).
    pub rank: usize,
}

/// Fit far = parity(offset & mask) ^ constant over bits 7..20 to labelled lines; None when no such
/// function fits every line (bit 0 of a row stands for the constant: offsets are line-aligned).
pub fn fit_partition_bit(points: &[(u64, bool)]) -> Option<PartitionBit> {
    let rows = points.iter().map(|&(o, far)| ((o & PAGE_BITS) | 1, far));
    let (x, rank) = memscope_core::gf2::solve_equations(rows)?;
    Some(PartitionBit { mask: x & PAGE_BITS, constant: (x & 1) as u8, rank })
}

impl PartitionBit {
    pub fn far(&self, offset: u64) -> bool {
        (memscope_core::gf2::parity(offset & self.mask) ^ self.constant) == 1
    }
}

/// The partition bit of one SM's labels: fitted on every other labelled line (in offset order) and
/// checked on the rest (held out: correct, total), then fitted on all. None when either fit fails.
pub fn partition_bit(lines: &[u64], far: &[Option<bool>]) -> Option<(PartitionBit, (usize, usize))> {
    let mut pts: Vec<(u64, bool)> = lines.iter().zip(far).filter_map(|(&o, f)| Some((o, (*f)?))).collect();
    pts.sort_unstable();
    let train: Vec<(u64, bool)> = pts.iter().step_by(2).copied().collect();
    let test: Vec<(u64, bool)> = pts.iter().skip(1).step_by(2).copied().collect();
    let half = fit_partition_bit(&train)?;
    let correct = test.iter().filter(|&&(o, f)| half.far(o) == f).count();
    Some((fit_partition_bit(&pts)?, (correct, test.len())))
}

/// How one SM's near/far labels sit on the counters' partition.
#[derive(Debug, Clone, PartialEq)]
pub struct SmCheck {
    pub sm: u32,
    /// Lines with both a class and a label.
    pub lines: usize,
    pub far_lines: usize,
    /// Classes with at least two labelled lines, and of them those with near and far lines both.
    pub classes_tested: usize,
    pub classes_mixed: usize,
    /// Classes whose labelled lines are all near / all far.
    pub near_classes: usize,
    pub far_classes: usize,
}

/// Check each SM's labels against the partition (`class` per sampled line).
pub fn check(class: &[Option<usize>], labels: &[SmLabels]) -> Vec<SmCheck> {
    labels
        .iter()
        .map(|SmLabels { sm, far: lab, .. }| {
            let mut per: std::collections::BTreeMap<usize, (usize, usize)> = Default::default();
            for (c, l) in class.iter().zip(lab) {
                if let (Some(c), Some(f)) = (c, l) {
                    let e = per.entry(*c).or_default();
                    if *f {
                        e.1 += 1
                    } else {
                        e.0 += 1
                    }
                }
            }
            let lines = per.values().map(|(a, b)| a + b).sum();
            SmCheck {
                sm: *sm,
                lines,
                far_lines: per.values().map(|p| p.1).sum(),
                classes_tested: per.values().filter(|(a, b)| a + b >= 2).count(),
                classes_mixed: per.values().filter(|(a, b)| *a > 0 && *b > 0).count(),
                near_classes: per.values().filter(|(a, b)| *a > 0 && *b == 0).count(),
                far_classes: per.values().filter(|(a, b)| *b > 0 && *a == 0).count(),
            }
        })
        .collect()
}

/// Lines labelled by both SMs, and of them those the two label oppositely.
pub fn opposite(a: &[Option<bool>], b: &[Option<bool>]) -> (usize, usize) {
    let both: Vec<(bool, bool)> = a.iter().zip(b).filter_map(|(x, y)| Some(((*x)?, (*y)?))).collect();
    (both.len(), both.iter().filter(|(x, y)| x != y).count())
}

/// The finding's value: per SM its check, and for every pair of SMs the lines they label
/// oppositely.
pub fn summary_json(checks: &[SmCheck], labels: &[SmLabels], lines: &[u64]) -> Value {
    let mut pairs = Vec::new();
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            let (n, d) = opposite(&a.far, &b.far);
            pairs.push(json!({"sms": [a.sm, b.sm], "lines_both": n, "lines_opposite": d}));
        }
    }
    let cycles = |sm: u32| labels.iter().find(|l| l.sm == sm).map(|l| (l.near_cycles, l.far_cycles));
    json!({
        "sms": checks.iter().map(|c| {
            let (near, far) = cycles(c.sm).unwrap_or((f64::NAN, f64::NAN));
            let bit = labels.iter().find(|l| l.sm == c.sm).and_then(|l| partition_bit(lines, &l.far));
            json!({
                "far_mask": bit.map(|(b, _)| memscope_core::gf2::format_mask(b.mask)),
                "far_when_parity_is": bit.map(|(b, _)| 1 - b.constant),
                "far_mask_rank": bit.map(|(b, _)| b.rank),
                "far_mask_held_out": bit.map(|(_, h)| [h.0, h.1]),
                "sm": c.sm, "lines": c.lines, "far_lines": c.far_lines, "classes_tested": c.classes_tested,
                "classes_mixed": c.classes_mixed, "near_classes": c.near_classes, "far_classes": c.far_classes,
                "near_first_touch_cycles": near.is_finite().then_some(near),
                "far_first_touch_cycles": far.is_finite().then_some(far),
            })
        }).collect::<Vec<_>>(),
        "pairs": pairs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A known partition: slice s is far from group-1 SMs when s is odd, and the other way round
    /// for group 2. Laps with two clear modes and jitter: every class is all near or all far, the
    /// two groups see opposite halves; a partition that splits a slice shows up as a mixed class.
    #[test]
    fn labels_sit_on_the_partition_and_groups_see_opposite_halves() {
        let lines: Vec<u64> = (0..96u64).map(|i| i * 128 * 37).collect();
        let slice = |o: u64| ((o / 128) % 24) as usize;
        let lap = |sm: u32, far: &dyn Fn(usize) -> bool, jitter: u32| TimedLap {
            sm,
            lines: lines.clone(),
            first_touch: lines
                .iter()
                .enumerate()
                .map(|(i, &o)| if far(slice(o)) { 460 } else { 280 } + (i as u32 * jitter) % 9)
                .collect(),
            warm: lines.iter().map(|_| 280).collect(),
            warm_cycles_per_hop: 270.0,
        };
        let g1 = |s: usize| s % 2 == 1;
        let g2 = |s: usize| s.is_multiple_of(2);
        let laps = vec![lap(0, &g1, 3), lap(2, &g2, 5), lap(0, &g1, 7), lap(2, &g2, 1)];
        let labels = far_labels(&lines, &laps);
        assert_eq!(labels.len(), 2);
        let class: Vec<Option<usize>> = lines.iter().map(|&o| Some(slice(o))).collect();
        let checks = check(&class, &labels);
        for c in &checks {
            assert_eq!(c.lines, 96);
            assert_eq!(c.classes_mixed, 0, "{c:?}");
            assert_eq!((c.near_classes, c.far_classes), (12, 12), "{c:?}");
        }
        assert_eq!(opposite(&labels[0].far, &labels[1].far), (96, 96));
        assert!(
            (labels[0].near_cycles - 284.0).abs() < 5.0 && (labels[0].far_cycles - 464.0).abs() < 5.0,
            "{:?}",
            labels[0]
        );
        // A wrong partition: slices 0 and 1 merged into one class.
        let merged: Vec<Option<usize>> = lines.iter().map(|&o| Some(slice(o).max(1))).collect();
        assert_eq!(check(&merged, &labels)[0].classes_mixed, 1);
        let v = summary_json(&checks, &labels, &lines);
        assert_eq!(v["pairs"][0]["lines_opposite"], json!(96));
    }

    /// The partition bit of a known affine function is recovered and predicts held-out lines; one
    /// wrong label makes it unfittable.
    #[test]
    fn an_affine_partition_bit_is_fitted_and_checked_on_held_out_lines() {
        let lines: Vec<u64> = (0..128u64).map(|i| (i * 0x9e37_79b9) % (1 << 14) * 128).collect();
        let truth = |o: u64| memscope_core::gf2::parity(o & 0xab000) == 0;
        let far: Vec<Option<bool>> = lines.iter().map(|&o| Some(truth(o))).collect();
        let (b, held) = partition_bit(&lines, &far).unwrap();
        assert_eq!((b.mask, b.constant, b.rank), (0xab000, 1, 15));
        assert_eq!(held.0, held.1);
        assert!(lines.iter().all(|&o| b.far(o) == truth(o)));
        let mut wrong = far.clone();
        wrong[7] = wrong[7].map(|f| !f);
        assert!(
            fit_partition_bit(&lines.iter().zip(&wrong).map(|(&o, f)| (o, f.unwrap())).collect::<Vec<_>>()).is_none()
        );
    }

    #[test]
    fn lap_lines_are_the_distinct_lines_of_the_plan() {
        use super::super::hammer::HammerOp::*;
        let plan = HammerPlan {
            sm: Some(0),
            warps: 32,
            pages: 1,
            kernels: vec![vec![(256, 256, Read), (128, 256, Atom)], vec![(256, 512, Red), (0, 256, Read)]],
            counters: Default::default(),
            metrics: vec![],
            time_sms: vec![0],
            time_reps: 1,
        };
        let mut l = lap_lines(&plan);
        l.sort_unstable();
        assert_eq!(l, vec![0, 128, 256]);
    }
}
