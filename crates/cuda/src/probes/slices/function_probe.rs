//! `l2.slices.function`: the L2 slice function within a 2 MiB page, each mapped page's share and
//! the share as a function of the frame (docs/L2_SLICES.md, "The function in a run"). A slice
//! map (map.rs: the adaptive design in a serving child reading CUPTI) labels every line set of
//! the allocation's first page (`bits:8+10-20`, 4096 lines) and a seeded subset of them (400) in
//! each of the next 7 pages, and the fits (slice_function.rs) read the labels with the partition
//! bit's mask from `l2.slices.timing_check`, which is why this probe needs `l2.slices`.
//! Diagnostics' variables override the map's defaults (pages, offsets, probe lines, SM;
//! docs/L2_SLICES.md).

use super::hammer::{self, CounterSource, HammerPlan};
use super::map::{self, SliceMap};
use super::{map_layout, ncu, slice_fit, slice_function};
use super::{LINES_FULL, PACKED_OPS, SEED, SM, UNIT, WARPS};
use crate::gpu::GpuResult;
use crate::probes::{cuda_only, run_gpu};
use crate::CudaTarget;
use memscope_core::gf2::{format_mask, parse_mask};
use memscope_core::keys;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub struct SliceFunctionProbe;

/// The map's pages by default (`MEMSCOPE_SLICES_MAP` overrides): the first with every offset of
/// `map_layout::DEFAULT_SPEC` (`MEMSCOPE_SLICES_MAP_OFFSETS` overrides), the others with
/// `DEFAULT_PROBE_LINES` of them (`MEMSCOPE_SLICES_MAP_PROBE_LINES` overrides).
pub const DEFAULT_PAGES: u64 = 8;
/// Lines of each page after the first: enough for a full page's model to give the page its share
/// in the run's naming (slice_mod.rs: on the H200, 200 left two labels unnamed on one page, 400
/// named every line).
pub const DEFAULT_PROBE_LINES: usize = 400;
/// The one-page map the estimate of a map's time scales from (results/h200/l2-slices-function:
/// 4096 line sets in 101.3 s on the H200).
const RATE_LINES: f64 = 4096.0;
const RATE_SECS: f64 = 101.3;
/// Most lines one map labels (about 40 lines a second on the H200, so this is about 14 minutes).
const MAP_MAX_LINES: usize = 1 << 15;
/// Seed of the probe lines' subset (distinct from the offsets' own shuffle).
const PROBE_SEED: u64 = SEED ^ 0x9e37;

/// What the map labels and from which SM: the defaults, or the diagnostics' variables.
#[derive(Debug, Clone, PartialEq)]
pub struct MapConfig {
    /// Adjacent 2 MiB pages of one allocation.
    pub pages: u64,
    /// The offsets' spec (map_layout.rs) and the offsets it gives: all of them in the first page.
    pub spec: String,
    pub offsets: Vec<u64>,
    /// The offsets of each page after the first: a seeded subset of `offsets` (all of them, in
    /// their order, when the subset asked for is not smaller).
    pub probe_offsets: Vec<u64>,
    /// The SM that hammers the lines (near and far slices are relative to it).
    pub sm: u32,
}

/// `n` of `offsets` chosen by a seeded shuffle, or all of them in order when `n` is not smaller.
pub fn probe_subset(offsets: &[u64], n: usize) -> Vec<u64> {
    if n >= offsets.len() {
        return offsets.to_vec();
    }
    let mut v = offsets.to_vec();
    v.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(PROBE_SEED));
    v.truncate(n);
    v
}

/// A bad value of the map's variables, named (exit with one line).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MapConfigError {
    #[error("{var}={value:?}: accepted: {accepted}")]
    Value { var: &'static str, value: String, accepted: String },
    #[error("MEMSCOPE_SLICES_MAP_OFFSETS={spec:?}: {source}")]
    Offsets { spec: String, source: map_layout::LayoutError },
    #[error(
        "MEMSCOPE_SLICES_MAP={pages} with MEMSCOPE_SLICES_MAP_OFFSETS={spec:?} ({first} offsets in the first page) and \
         MEMSCOPE_SLICES_MAP_PROBE_LINES={probe_lines} ({each} in each other page): {lines} lines, at most {MAP_MAX_LINES}"
    )]
    TooManyLines { pages: u64, spec: String, first: usize, probe_lines: usize, each: usize, lines: usize },
}

/// Why `l2.slices.timing_check` gives the map's SM no partition bit (the residue fit needs its
/// mask).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NoPartitionBit {
    #[error("{TIMING} is missing (l2.slices did not run, timed no lap, or found no partition to check): {NEED}")]
    Missing,
    #[error("{TIMING} is undetermined ({why}): {NEED}")]
    Undetermined { why: String },
    #[error("{TIMING} timed no lap from SM {sm}, the SM the map hammers from (timed: {timed:?}): {NEED}")]
    SmNotTimed { sm: u32, timed: Vec<u64> },
    #[error("{TIMING} fitted no partition bit to SM {sm}'s near/far labels: {NEED}")]
    NotFitted { sm: u32 },
    #[error("{TIMING}: SM {sm}'s far_mask {text:?} is not a hex mask")]
    BadMask { sm: u32, text: String },
}

const TIMING: &str = keys::L2_SLICES_TIMING_CHECK;
const NEED: &str = "the residue fit needs the partition bit's mask";

impl MapConfig {
    /// The defaults, each overridden by its variable where `var` has it (`std::env::var` in a
    /// run): `MEMSCOPE_SLICES_MAP` (pages), `MEMSCOPE_SLICES_MAP_OFFSETS`,
    /// `MEMSCOPE_SLICES_MAP_PROBE_LINES`, `MEMSCOPE_SLICES_MAP_SM`. Err: the bad value, named.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<MapConfig, MapConfigError> {
        let pages = match var("MEMSCOPE_SLICES_MAP") {
            Some(p) => {
                p.trim().parse::<u64>().ok().filter(|p| (1..=hammer::MAX_PAGES).contains(p)).ok_or_else(|| {
                    MapConfigError::Value {
                        var: "MEMSCOPE_SLICES_MAP",
                        value: p.clone(),
                        accepted: format!("1 to {}", hammer::MAX_PAGES),
                    }
                })?
            }
            None => DEFAULT_PAGES,
        };
        let spec = var("MEMSCOPE_SLICES_MAP_OFFSETS").unwrap_or_else(|| map_layout::DEFAULT_SPEC.to_string());
        let layout = map_layout::MapOffsets::parse(&spec)
            .map_err(|source| MapConfigError::Offsets { spec: spec.clone(), source })?;
        let probe_lines = match var("MEMSCOPE_SLICES_MAP_PROBE_LINES") {
            Some(n) => {
                n.trim().parse::<usize>().ok().filter(|n| (1..=map_layout::MAX_OFFSETS).contains(n)).ok_or_else(
                    || MapConfigError::Value {
                        var: "MEMSCOPE_SLICES_MAP_PROBE_LINES",
                        value: n.clone(),
                        accepted: format!("1 to {}", map_layout::MAX_OFFSETS),
                    },
                )?
            }
            None => DEFAULT_PROBE_LINES,
        };
        let sm = match var("MEMSCOPE_SLICES_MAP_SM") {
            Some(s) => s.trim().parse::<u32>().map_err(|_| MapConfigError::Value {
                var: "MEMSCOPE_SLICES_MAP_SM",
                value: s.clone(),
                accepted: "an SM number".into(),
            })?,
            None => SM,
        };
        let offsets = layout.offsets(SEED);
        let probe_offsets = probe_subset(&offsets, probe_lines);
        let cfg = MapConfig { pages, spec, offsets, probe_offsets, sm };
        let n = cfg.line_count();
        if n > MAP_MAX_LINES {
            return Err(MapConfigError::TooManyLines {
                pages,
                spec: cfg.spec,
                first: cfg.offsets.len(),
                probe_lines,
                each: cfg.probe_offsets.len(),
                lines: n,
            });
        }
        Ok(cfg)
    }

    /// Lines of the map: the first page's offsets and the probe offsets of each other page.
    pub fn line_count(&self) -> usize {
        self.offsets.len() + (self.pages as usize - 1) * self.probe_offsets.len()
    }

    /// The map's lines as addresses from the first page's base: every offset of the first page,
    /// then the probe offsets in each other page.
    pub fn lines(&self) -> Vec<u64> {
        let first = self.offsets.iter().copied();
        let rest = (1..self.pages).flat_map(|k| self.probe_offsets.iter().map(move |o| k * hammer::PAGE_BYTES + o));
        first.chain(rest).collect()
    }

    /// What the map should take on the H200, in seconds: its lines at the rate of the one-page
    /// map (an estimate: the layout as such has not been timed).
    pub fn estimate_secs(&self) -> f64 {
        self.line_count() as f64 * RATE_SECS / RATE_LINES
    }

    /// The layout in words.
    fn layout(&self) -> String {
        let first = format!("{}: {} offsets in the first 2 MiB page", self.spec, self.offsets.len());
        match self.pages {
            1 => first,
            2 => format!("{first}, {} of them in the next page", self.probe_offsets.len()),
            p => format!("{first}, {} of them in each of the next {} pages", self.probe_offsets.len(), p - 1),
        }
    }

    /// The findings' method.
    fn method(&self, mask: Option<u64>) -> String {
        let bit = match mask {
            Some(m) => format!("the partition bit's mask {} from l2.slices.timing_check", format_mask(m)),
            None => "the partition bit's mask from l2.slices.timing_check".to_string(),
        };
        format!(
            "slice map ({}, adjacent pages of one allocation) hammered from SM {}, CUPTI's counters read in a serving \
             child between the map's stages (map.rs); {bit}",
            self.layout(),
            self.sm
        )
    }
}

/// The partition bit that `l2.slices.timing_check` fitted to one SM's near/far labels (timing.rs,
/// `summary_json`): far from that SM when parity(offset & mask) is `far_when_parity_is`, on the
/// page `l2.slices` sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedBit {
    pub sm: u32,
    pub mask: u64,
    pub far_when_parity_is: Option<u64>,
    /// Independent equations among the timed lines.
    pub rank: Option<u64>,
    /// Held-out timed lines predicted, of those held out.
    pub held_out: Option<(u64, u64)>,
}

impl TimedBit {
    /// What the bit says, for the function's note.
    pub fn text(&self) -> String {
        let mask = format_mask(self.mask);
        let when = match self.far_when_parity_is {
            Some(v) => format!("when parity(offset & {mask}) is {v}"),
            None => format!("by parity(offset & {mask})"),
        };
        let rank = self.rank.map(|r| format!("{r} independent equations among the timed lines"));
        let held = self.held_out.map(|(ok, n)| format!("fitted on half of them: {ok} of {n} held-out lines predicted"));
        let how: Vec<String> = [rank, held].into_iter().flatten().collect();
        format!(
            "the partition bit (l2.slices.timing_check): on the page l2.slices sampled, a line is far from SM {} by \
             timing {when}{}; that page's frame sets the constant, and each mapped page has its own (p)",
            self.sm,
            if how.is_empty() { String::new() } else { format!(" ({})", how.join(", ")) }
        )
    }
}

/// The partition bit of SM `sm` from the earlier findings' `l2.slices.timing_check`, or why there
/// is none (the check missing or undetermined, the SM not timed, no bit fitted to its labels).
pub fn timed_partition_bit(earlier: &BTreeMap<String, Finding>, sm: u32) -> Result<TimedBit, NoPartitionBit> {
    let Some(f) = earlier.get(TIMING) else {
        return Err(NoPartitionBit::Missing);
    };
    if f.confidence == Confidence::Undetermined {
        return Err(NoPartitionBit::Undetermined { why: f.note.as_deref().unwrap_or("no reason given").to_string() });
    }
    let sms = f.value.get("sms").and_then(|v| v.as_array()).map(Vec::as_slice).unwrap_or_default();
    let Some(entry) = sms.iter().find(|s| s.get("sm").and_then(|v| v.as_u64()) == Some(sm as u64)) else {
        let timed: Vec<u64> = sms.iter().filter_map(|s| s.get("sm").and_then(|v| v.as_u64())).collect();
        return Err(NoPartitionBit::SmNotTimed { sm, timed });
    };
    let Some(text) = entry.get("far_mask").and_then(|v| v.as_str()) else {
        return Err(NoPartitionBit::NotFitted { sm });
    };
    let mask = parse_mask(text).ok_or_else(|| NoPartitionBit::BadMask { sm, text: text.to_string() })?;
    let held_out = entry.get("far_mask_held_out").and_then(|v| v.as_array()).and_then(|a| match a.as_slice() {
        [ok, n] => Some((ok.as_u64()?, n.as_u64()?)),
        _ => None,
    });
    Ok(TimedBit {
        sm,
        mask,
        far_when_parity_is: entry.get("far_when_parity_is").and_then(|v| v.as_u64()),
        rank: entry.get("far_mask_rank").and_then(|v| v.as_u64()),
        held_out,
    })
}

/// The three findings undetermined, with the reason.
fn undetermined_all(out: &mut ProbeOutput, method: &str, why: &str) {
    out.finding(keys::L2_SLICES_FUNCTION, Finding::undetermined("", method, why));
    out.finding(keys::L2_SLICES_HELD_OUT_ACCURACY, Finding::undetermined("ratio", method, why));
    out.finding(keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY, Finding::undetermined("ratio", method, why));
}

/// One map as run: its lines (addresses from the first page's base), their labels or why there
/// are none, and the seconds it took.
#[derive(Debug, Clone)]
pub struct MapRun {
    pub lines: Vec<u64>,
    pub labels: GpuResult<SliceMap>,
    pub secs: f64,
}

/// What the map says in a line: lines labelled, slices seen, per page (pages by `lines`, the
/// addresses the labels are of), its work and time.
pub fn map_summary(cfg: &MapConfig, lines: &[u64], res: &GpuResult<SliceMap>, secs: f64) -> String {
    match res {
        Ok(m) => {
            let mut seen: BTreeMap<u64, std::collections::BTreeSet<usize>> = BTreeMap::new();
            for (&a, l) in lines.iter().zip(&m.label) {
                let page = seen.entry(a / hammer::PAGE_BYTES).or_default();
                page.extend(l);
            }
            let per_page: Vec<usize> = seen.values().map(|s| s.len()).collect();
            format!(
                "slice labels over {} adjacent page(s) ({}) from SM {}: {} of {} lines labelled, {} slices seen in \
                 all, per page {per_page:?}; {} kernels in {} stages, {secs:.1} s",
                cfg.pages,
                cfg.layout(),
                cfg.sm,
                m.label.iter().flatten().count(),
                m.label.len(),
                m.labels,
                m.kernels,
                m.stages
            )
        }
        Err(e) => format!("slice labels over {} page(s): not measured ({e})", cfg.pages),
    }
}

/// The three findings from the map's labels (pure given its inputs): the residue fit with the
/// timed partition bit's mask and the frame function over the pages, or all undetermined with
/// the map's summary and why.
pub fn function_from_map(out: &mut ProbeOutput, cfg: &MapConfig, bit: &TimedBit, run: &MapRun) {
    let summary = map_summary(cfg, &run.lines, &run.labels, run.secs);
    let method = cfg.method(Some(bit.mask));
    let fitted = match &run.labels {
        Ok(m) => {
            let points: Vec<slice_fit::Point> = run
                .lines
                .iter()
                .zip(&m.label)
                .filter_map(|(&a, l)| {
                    l.map(|label| slice_fit::Point {
                        page: (a / hammer::PAGE_BYTES) as usize,
                        offset: a % hammer::PAGE_BYTES,
                        label,
                    })
                })
                .collect();
            slice_function::function_findings(&points, bit.mask, &method).map_err(|e| e.to_string())
        }
        Err(_) => Err("no labels".to_string()),
    };
    match fitted {
        Ok(f) => {
            let note = format!("{}. {}. {summary}", f.function.note.clone().unwrap_or_default(), bit.text());
            out.finding(keys::L2_SLICES_FUNCTION, f.function.with_note(&note));
            out.finding(keys::L2_SLICES_HELD_OUT_ACCURACY, f.accuracy);
            out.finding(keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY, f.frame_accuracy);
        }
        Err(why) => undetermined_all(out, &method, &format!("{summary}; {why}")),
    }
}

/// The map on the GPU: a serving child reading CUPTI labels `cfg`'s lines; the labels go to the
/// keep directory (map.json). Err: the child could not be set up.
fn slice_map(
    mut child: std::process::Command,
    device: usize,
    cfg: &MapConfig,
    keep: Option<&Path>,
) -> Result<MapRun, ProbeError> {
    let started = Instant::now();
    let lines = cfg.lines();
    let mut path: Vec<PathBuf> = crate::gpu::profiler::cupti_library_dirs();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.extend(std::env::split_paths(&old).filter(|d| !path.contains(d)).collect::<Vec<_>>());
    }
    if let Ok(joined) = std::env::join_paths(path) {
        child.env("LD_LIBRARY_PATH", joined);
    }
    let metrics: Vec<String> = ncu::metric_list(&PACKED_OPS).split(',').map(String::from).collect();
    let template = HammerPlan {
        sm: Some(cfg.sm),
        warps: WARPS,
        pages: cfg.pages,
        kernels: vec![],
        counters: CounterSource::Cupti,
        metrics,
        time_sms: vec![],
        time_reps: 0,
    };
    let slots: Vec<usize> = PACKED_OPS.iter().map(|o| o.code() as usize).collect();
    let mut server = map::ServingChild::new(child, device, template)?;
    let res = map::map_lines(&mut server, &lines, LINES_FULL, UNIT, &slots);
    let secs = started.elapsed().as_secs_f64();
    if let Some(k) = keep {
        let v = json!({
            "lines": lines.iter().map(|o| format!("{o:#x}")).collect::<Vec<_>>(),
            "label": res.as_ref().map(|m| m.label.clone()).unwrap_or_default(),
            "page_base": server.reports_kept.first().map(|r| r.page_base),
            "sm": cfg.sm,
            "offsets": cfg.spec,
            "pages": cfg.pages,
            "probe_lines": cfg.probe_offsets.len(),
            "seconds": secs,
            "summary": map_summary(cfg, &lines, &res, secs),
        });
        let _ = std::fs::write(k.join("map.json"), v.to_string());
    }
    Ok(MapRun { lines, labels: res, secs })
}

/// The probe body on a CUDA target, the partition bit in hand.
fn measure(
    t: &mut CudaTarget,
    cfg: &MapConfig,
    bit: &TimedBit,
    keep: Option<PathBuf>,
) -> Result<ProbeOutput, ProbeError> {
    let started = Instant::now();
    let mut out = ProbeOutput::default();
    let Some(child) = memscope_core::helper::self_command() else {
        undetermined_all(&mut out, &cfg.method(Some(bit.mask)), memscope_core::helper::NO_SELF_COMMAND);
        return Ok(out);
    };
    if let Some(k) = &keep {
        let _ = std::fs::create_dir_all(k);
    }
    let run = slice_map(child, t.gpu.ordinal, cfg, keep.as_deref())?;
    function_from_map(&mut out, cfg, bit, &run);
    let secs = started.elapsed().as_secs_f64();
    out.finding(
        keys::L2_SLICES_FUNCTION_PROBE_SECONDS,
        Finding::number(
            (secs * 10.0).round() / 10.0,
            "s",
            "wall time of the probe (the serving child and the map included)",
            Confidence::High,
        ),
    );
    Ok(out)
}

impl Probe for SliceFunctionProbe {
    fn key(&self) -> &'static str {
        "l2.slices.function"
    }
    fn description(&self) -> &'static str {
        "GPU L2 slice function within a 2 MiB page and over the frames of 8 pages, from a slice map (178-188 s on \
         the H200)"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn needs(&self) -> &'static [&'static str] {
        &["l2.slices"]
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let cfg = MapConfig::from_vars(|k| std::env::var(k).ok()).map_err(|e| ProbeError::Failed(e.to_string()))?;
        let keep = std::env::var_os("MEMSCOPE_SLICES_KEEP").map(PathBuf::from);
        let bit = match timed_partition_bit(ctx.earlier, cfg.sm) {
            Ok(b) => b,
            Err(why) => {
                let mut out = ProbeOutput::default();
                undetermined_all(&mut out, &cfg.method(None), &why.to_string());
                return Ok(out);
            }
        };
        ctx.progress.message(&format!(
            "l2.slices.function: slice map of {} lines ({}) from SM {}; about {:.0} s on the H200 (an estimate from \
             the one-page map's rate, 4096 line sets in 101.3 s)",
            cfg.line_count(),
            cfg.layout(),
            cfg.sm,
            cfg.estimate_secs()
        ));
        run_gpu(ctx, |t, _quick| measure(t, &cfg, &bit, keep))
    }
}
