//! The child side of the `l2.slices` probe (seed 000 appendix, "The L2 slice function"): the hidden
//! `memscope hammer-lines` subcommand runs here under Nsight Compute. It allocates a buffer holding
//! one 2 MiB-aligned page, compiles kernels/slices.cu with NVRTC (the registry's `Module::Slices`) and launches one `slice_hammer`
//! kernel per planned batch of line offsets, so ncu's per-slice L2 counters see only those accesses.
//! Each line of a batch carries its operation (read, write, atom, red): ncu counts each operation's
//! sectors separately, so one kernel can hold one experiment per operation. With `counters: cupti`
//! the child reads the same metrics itself through CUPTI's range profiler (no ncu: one range per
//! launch, crates/gpu/src/profiler.rs). After the hammering the child can time a first-touch lap
//! over the plan's lines from chosen SMs (timing.rs: the second instrument).

use crate::gpu::{DeviceAttr, Gpu, GpuError, GpuResult, Module, LEGACY_STREAM};
use serde::{Deserialize, Serialize};

/// Kernel name (ncu's `-k` filter).
pub const KERNEL: &str = "slice_hammer";
/// The page whose lines are sampled.
pub const PAGE_BYTES: u64 = 2 << 20;
/// Most 2 MiB pages a plan may span.
pub const MAX_PAGES: u64 = 64;
/// Most lines one kernel hammers (MAX_LINES in kernels/slices.cu).
pub const MAX_LINES_PER_KERNEL: usize = 192;

/// The operation a line is accessed with (kernels/slices.cu's op codes, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HammerOp {
    Read,
    Write,
    Atom,
    Red,
}

impl HammerOp {
    pub const ALL: [HammerOp; 4] = [HammerOp::Read, HammerOp::Write, HammerOp::Atom, HammerOp::Red];

    /// The kernel's op code.
    pub fn code(self) -> u64 {
        self as u64
    }

    /// The name in the plan and in ncu's metric (`lts__t_sectors_srcunit_tex_op_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            HammerOp::Read => "read",
            HammerOp::Write => "write",
            HammerOp::Atom => "atom",
            HammerOp::Red => "red",
        }
    }

    /// Parse a name as `name` spells it.
    pub fn parse(text: &str) -> Option<HammerOp> {
        HammerOp::ALL.into_iter().find(|o| o.name() == text)
    }
}

/// Where a plan's counters come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterSource {
    /// Nsight Compute profiles the child from outside (the child reads nothing).
    #[default]
    Ncu,
    /// The child reads `metrics` for each launch through CUPTI's range profiler.
    Cupti,
}

/// Launches beyond one per planned kernel the child may make (a launch with no block on the
/// chosen SM is made again).
pub const RETRY_LAUNCHES: usize = 64;

/// Most launches in one CUPTI session of ranges (one counter-data image).
pub const SESSION_LAUNCHES: usize = 256;

/// What the child runs: one kernel per batch; each batch lists (offset in the page, accesses, op).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HammerPlan {
    /// SM that runs the accesses (None: block 0, wherever it lands).
    pub sm: Option<u32>,
    /// Warps of the hammering block; every access count is a multiple of 8 x warps.
    pub warps: u32,
    /// Adjacent 2 MiB pages of one allocation the offsets may span (offsets count from the first
    /// page's base; 1 when absent).
    #[serde(default = "one_page")]
    pub pages: u64,
    pub kernels: Vec<Vec<(u64, u64, HammerOp)>>,
    /// Who reads the counters (ncu when absent).
    #[serde(default)]
    pub counters: CounterSource,
    /// The metrics CUPTI reads for each launch (`counters: cupti` only), as ncu names them.
    #[serde(default)]
    pub metrics: Vec<String>,
    /// SMs that time a first-touch lap over the plan's lines after the hammering, and how many laps
    /// each (timing.rs); none when empty.
    #[serde(default)]
    pub time_sms: Vec<u32>,
    #[serde(default)]
    pub time_reps: usize,
}

fn one_page() -> u64 {
    1
}

/// One launch as the child saw it, in launch order (= ncu's result order). A launch in which no
/// block landed on the chosen SM loaded nothing (`cycles` 0) and is repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HammerRecord {
    /// Index of the plan's kernel (batch) this launch ran.
    pub kernel: usize,
    pub smid: u64,
    pub cycles: u64,
}

/// The child's report (JSON on stdout between markers, so ncu's own lines can be told apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HammerReport {
    /// What cuMemAlloc returned.
    pub alloc_ptr: u64,
    /// Whether that pointer was already 2 MiB aligned.
    pub alloc_2mib_aligned: bool,
    /// The 2 MiB-aligned page base inside the allocation that offsets are relative to.
    pub page_base: u64,
    pub records: Vec<HammerRecord>,
    /// With `counters: cupti`: per record (launch), the plan's metrics in its order.
    #[serde(default)]
    pub values: Vec<Vec<f64>>,
    /// With `counters: cupti`: the passes CUPTI needed per launch.
    #[serde(default)]
    pub passes: usize,
    /// The timed laps of `time_sms` (none when not asked for).
    #[serde(default)]
    pub timing: Vec<super::timing::TimedLap>,
}

/// Markers around the report on stdout.
pub const REPORT_BEGIN: &str = "MEMSCOPE-HAMMER-REPORT-BEGIN";
pub const REPORT_END: &str = "MEMSCOPE-HAMMER-REPORT-END";

impl HammerPlan {
    /// Check the plan against the kernel's limits.
    pub fn validate(&self) -> GpuResult<()> {
        if self.warps == 0 || self.warps > 32 {
            return Err(GpuError::invalid(format!("warps = {}: 1..=32", self.warps)));
        }
        if self.counters == CounterSource::Cupti && self.metrics.is_empty() {
            return Err(GpuError::invalid("counters = cupti without metrics"));
        }
        if self.pages == 0 || self.pages > MAX_PAGES {
            return Err(GpuError::invalid(format!("pages = {}: 1..={MAX_PAGES}", self.pages)));
        }
        let span = self.pages * PAGE_BYTES;
        let unit = 8 * self.warps as u64;
        for (k, batch) in self.kernels.iter().enumerate() {
            if batch.is_empty() || batch.len() > MAX_LINES_PER_KERNEL {
                return Err(GpuError::invalid(format!(
                    "kernel {k}: {} lines (1..={MAX_LINES_PER_KERNEL})",
                    batch.len()
                )));
            }
            for &(off, loads, _) in batch {
                if off >= span || !off.is_multiple_of(4) {
                    return Err(GpuError::invalid(format!(
                        "kernel {k}: offset {off:#x} outside the {} 2 MiB page(s) or not 4-byte aligned",
                        self.pages
                    )));
                }
                if loads == 0 || !loads.is_multiple_of(unit) {
                    return Err(GpuError::invalid(format!(
                        "kernel {k}: {loads} loads is not a positive multiple of {unit}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Run the plan on GPU `ordinal` (the child process, under ncu or reading CUPTI itself).
pub fn run(ordinal: usize, plan: &HammerPlan) -> GpuResult<HammerReport> {
    let pages = Pages::open(ordinal, plan.pages)?;
    pages.run(plan)
}

/// The child's GPU and its allocation, kept across the plans of one process (`serve`: the same
/// physical pages for every plan).
pub struct Pages {
    gpu: Gpu,
    alloc: u64,
    pages: u64,
    sms: u32,
    /// Device memory held before the pages were allocated ([`SKIP_PAGES_ENV`]), if any.
    filler: Option<u64>,
}

/// Environment variable (a diagnostic): how many 2 MiB pages of device memory the hammer child
/// allocates and holds before its own pages, 0..=[`MAX_SKIP_PAGES`] (default 0). Every process
/// that allocates the same sizes in the same order gets the same physical frames, so maps from
/// two processes are one pair of frames; with a skip the pages land on other frames.
pub const SKIP_PAGES_ENV: &str = "MEMSCOPE_SLICES_SKIP_PAGES";
/// Most pages [`SKIP_PAGES_ENV`] may hold (64 GiB).
pub const MAX_SKIP_PAGES: u64 = 32768;

/// The skip of [`SKIP_PAGES_ENV`] (0 when unset).
fn skip_pages() -> GpuResult<u64> {
    match std::env::var(SKIP_PAGES_ENV) {
        Err(_) => Ok(0),
        Ok(v) => v.trim().parse::<u64>().ok().filter(|&n| n <= MAX_SKIP_PAGES).ok_or_else(|| {
            GpuError::invalid(format!("{SKIP_PAGES_ENV}={v:?}: accepted: 0 to {MAX_SKIP_PAGES} pages of 2 MiB"))
        }),
    }
}

impl Pages {
    /// Open GPU `ordinal` and allocate `pages` 2 MiB pages (one more: its 2 MiB-aligned pages lie
    /// inside whatever the alignment), zeroed.
    pub fn open(ordinal: usize, pages: u64) -> GpuResult<Pages> {
        if pages == 0 || pages > MAX_PAGES {
            return Err(GpuError::invalid(format!("pages = {pages}: 1..={MAX_PAGES}")));
        }
        let gpu = Gpu::open(ordinal)?;
        let sms = gpu.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        gpu.func(Module::Slices, KERNEL)?;
        let skip = skip_pages()?;
        let filler = if skip > 0 { Some(gpu.malloc(skip * PAGE_BYTES)?) } else { None };
        let alloc = match gpu.malloc((pages + 1) * PAGE_BYTES) {
            Ok(a) => a,
            Err(e) => {
                filler.into_iter().for_each(|f| gpu.free(f));
                return Err(e);
            }
        };
        if let Err(e) = gpu.memset(alloc, (pages + 1) * PAGE_BYTES) {
            gpu.free(alloc);
            filler.into_iter().for_each(|f| gpu.free(f));
            return Err(e);
        }
        Ok(Pages { gpu, alloc, pages, sms, filler })
    }

    /// Run one plan on these pages (its `pages` at most those allocated).
    pub fn run(&self, plan: &HammerPlan) -> GpuResult<HammerReport> {
        plan.validate()?;
        if plan.pages > self.pages {
            return Err(GpuError::invalid(format!("plan spans {} pages, {} allocated", plan.pages, self.pages)));
        }
        for &sm in plan.sm.iter().chain(&plan.time_sms) {
            if sm >= self.sms {
                return Err(GpuError::invalid(format!("sm {sm}: this GPU has {} SMs", self.sms)));
            }
        }
        let lines: usize = plan.kernels.iter().map(|k| k.len()).sum();
        let slots = plan.kernels.len() + RETRY_LAUNCHES;
        let side = self.gpu.malloc(lines as u64 * 24 + slots as u64 * 40)?;
        let res = launch_all(&self.gpu, self.alloc, side, self.sms, plan);
        self.gpu.free(side);
        let mut report = res?;
        if !plan.time_sms.is_empty() {
            report.timing = super::timing::time_laps(&self.gpu, report.page_base, plan)?;
            // The lap wrote its pointers into the page: zero again for the next plan.
            self.gpu.memset(self.alloc, (self.pages + 1) * PAGE_BYTES)?;
            self.gpu.sync()?;
        }
        Ok(report)
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        self.gpu.free(self.alloc);
        if let Some(f) = self.filler {
            self.gpu.free(f);
        }
    }
}

/// `memscope hammer-lines --serve`: run the first plan, then one plan per line of `input` (JSON)
/// on the same pages, writing each report to `out` between the markers; ends at the end of
/// `input`. A plan that fails is reported as an error line between the markers.
pub fn serve(
    ordinal: usize,
    first: &HammerPlan,
    input: impl std::io::BufRead,
    mut out: impl std::io::Write,
) -> GpuResult<()> {
    let pages = Pages::open(ordinal, first.pages)?;
    let mut emit = |r: GpuResult<HammerReport>| -> GpuResult<()> {
        let text = match r {
            Ok(rep) => serde_json::to_string(&rep).map_err(|e| GpuError::invalid(e.to_string()))?,
            Err(e) => serde_json::to_string(&serde_json::json!({ "error": e.to_string() })).unwrap_or_default(),
        };
        writeln!(out, "{REPORT_BEGIN}\n{text}\n{REPORT_END}")
            .and_then(|_| out.flush())
            .map_err(|e| GpuError::invalid(e.to_string()))
    };
    emit(pages.run(first))?;
    for line in input.lines() {
        let line = line.map_err(|e| GpuError::invalid(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let plan: HammerPlan =
            serde_json::from_str(&line).map_err(|e| GpuError::invalid(format!("not a hammer plan: {e}")))?;
        emit(pages.run(&plan))?;
    }
    Ok(())
}

fn launch_all(gpu: &Gpu, alloc: u64, side: u64, sms: u32, plan: &HammerPlan) -> GpuResult<HammerReport> {
    let page_base = alloc.div_ceil(PAGE_BYTES) * PAGE_BYTES;
    let slots = plan.kernels.len() + RETRY_LAUNCHES;
    // Every kernel's plan back to back (triples of u64), then a claim word and a record (8 + 32
    // bytes) per launch slot: nothing is written between launches but the launches themselves.
    let flat: Vec<u64> = plan.kernels.iter().flatten().flat_map(|&(o, l, op)| [o, l, op.code()]).collect();
    let mut starts = Vec::with_capacity(plan.kernels.len());
    let mut at = side;
    for k in &plan.kernels {
        starts.push(at);
        at += k.len() as u64 * 24;
    }
    gpu.htod(side, &flat)?;
    let claims = at;
    let recs = claims + slots as u64 * 8;
    gpu.memset(claims, slots as u64 * 40)?;
    gpu.sync()?;
    let (grid, target) = match plan.sm {
        Some(sm) => (sms, sm as u64),
        None => (1, u64::MAX),
    };
    let mut records = Vec::new();
    // `flush` (CUPTI only) ends a session of ranges before it would hold more than SESSION_LAUNCHES.
    let mut launches = |flush: &mut dyn FnMut() -> GpuResult<()>| -> GpuResult<()> {
        let mut in_session = 0;
        for (k, batch) in plan.kernels.iter().enumerate() {
            let mut done = false;
            for _attempt in 0..4 {
                let slot = records.len() as u64;
                if slot as usize >= slots {
                    return Err(GpuError::invalid(format!(
                        "more than {RETRY_LAUNCHES} launches had no block on the SM"
                    )));
                }
                if in_session == SESSION_LAUNCHES {
                    flush()?;
                    in_session = 0;
                }
                in_session += 1;
                let (claim_d, record_d) = (claims + 8 * slot, recs + 32 * slot);
                let plan_d = starts[k];
                let args = [page_base, plan_d, batch.len() as u64, target, claim_d, record_d];
                gpu.launch(Module::Slices, KERNEL, grid, 32 * plan.warps, 0, &args, LEGACY_STREAM)?;
                gpu.sync()?;
                let rec: Vec<u64> = gpu.dtoh(record_d, 4)?;
                records.push(HammerRecord { kernel: k, smid: rec[0], cycles: rec[1] });
                if rec[1] != 0 {
                    done = true;
                    break;
                }
                // No block landed on the chosen SM (then nothing was loaded): again.
            }
            if !done {
                return Err(GpuError::invalid(format!(
                    "no block of slice_hammer ran on SM {:?} in 4 launches",
                    plan.sm
                )));
            }
        }
        Ok(())
    };
    let (values, passes) = match plan.counters {
        CounterSource::Ncu => {
            launches(&mut || Ok(()))?;
            (vec![], 0)
        }
        CounterSource::Cupti => {
            let p = crate::gpu::profiler::profile_kernels(gpu, &plan.metrics, SESSION_LAUNCHES, |f| launches(f))?;
            if p.dropped > 0 || p.values.len() != records.len() {
                return Err(GpuError::invalid(format!(
                    "CUPTI kept {} ranges ({} dropped) for {} launches",
                    p.values.len(),
                    p.dropped,
                    records.len()
                )));
            }
            (p.values, p.passes)
        }
    };
    Ok(HammerReport {
        alloc_ptr: alloc,
        alloc_2mib_aligned: alloc.is_multiple_of(PAGE_BYTES),
        page_base,
        records,
        values,
        passes,
        timing: vec![],
    })
}

/// A one-page plan with nothing in it but what a test sets (ncu counters, no timing).
#[cfg(test)]
pub(crate) fn test_plan() -> HammerPlan {
    HammerPlan {
        sm: None,
        warps: 32,
        pages: 1,
        kernels: vec![],
        counters: CounterSource::Ncu,
        metrics: vec![],
        time_sms: vec![],
        time_reps: 0,
    }
}

/// Pull the child's report out of its stdout (ncu's own lines around it are ignored).
pub fn parse_report(stdout: &str) -> Option<HammerReport> {
    let start = stdout.find(REPORT_BEGIN)? + REPORT_BEGIN.len();
    let end = stdout[start..].find(REPORT_END)? + start;
    serde_json::from_str(stdout[start..end].trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hammer_kernel_is_the_registry_entry() {
        assert_eq!(Module::Slices.functions(), &[KERNEL]);
    }

    #[test]
    fn plans_are_checked_against_the_kernel_limits() {
        use HammerOp::*;
        let ok = HammerPlan {
            sm: None,
            warps: 4,
            pages: 1,
            kernels: vec![vec![(0, 32, Read), (128, 64, Red)]],
            ..test_plan()
        };
        assert!(ok.validate().is_ok());
        let bad_loads = HammerPlan { kernels: vec![vec![(0, 33, Write)]], ..ok.clone() };
        assert!(bad_loads.validate().unwrap_err().to_string().contains("multiple of 32"));
        let bad_off = HammerPlan { kernels: vec![vec![(PAGE_BYTES, 32, Atom)]], ..ok.clone() };
        assert!(bad_off.validate().is_err());
        let too_many = HammerPlan { kernels: vec![vec![(0, 32, Read); MAX_LINES_PER_KERNEL + 1]], ..ok.clone() };
        assert!(too_many.validate().is_err());
        let second_page = HammerPlan { kernels: vec![vec![(PAGE_BYTES + 128, 32, Read)]], ..ok.clone() };
        assert!(second_page.validate().is_err());
        assert!(HammerPlan { pages: 2, ..second_page }.validate().is_ok());
        assert!(HammerPlan { pages: 0, ..ok }.validate().is_err());
    }

    #[test]
    fn ops_are_named_in_the_plan_and_coded_for_the_kernel() {
        let plan = HammerPlan {
            sm: Some(0),
            warps: 32,
            pages: 1,
            kernels: vec![vec![(128, 256, HammerOp::Atom)]],
            ..test_plan()
        };
        let text = serde_json::to_string(&plan).unwrap();
        assert!(text.contains("[128,256,\"atom\"]"), "{text}");
        assert_eq!(serde_json::from_str::<HammerPlan>(&text).unwrap(), plan);
        let without_pages = text.replace("\"pages\":1,", "");
        assert_eq!(serde_json::from_str::<HammerPlan>(&without_pages).unwrap(), plan, "one page by default");
        let codes: Vec<u64> = HammerOp::ALL.iter().map(|o| o.code()).collect();
        assert_eq!(codes, [0, 1, 2, 3], "kernels/slices.cu: 0 read, 1 write, 2 atom, 3 red");
        for op in HammerOp::ALL {
            assert_eq!(HammerOp::parse(op.name()), Some(op));
        }
        assert_eq!(HammerOp::parse("load"), None);
    }

    /// The hammer kernel compiles for sm_90 and really loads past L1 (8 chains of ld.volatile.global); runs
    /// when MEMSCOPE_NVRTC_AVAILABLE=1 (scripts/test.sh), skips otherwise.
    #[test]
    fn the_hammer_kernel_compiles_and_bypasses_l1() {
        if std::env::var("MEMSCOPE_NVRTC_AVAILABLE").as_deref() != Ok("1") {
            eprintln!("skipped: MEMSCOPE_NVRTC_AVAILABLE is not 1");
            return;
        }
        let ptx = Module::Slices.compile("sm_90").unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.contains(&format!(".entry {KERNEL}(")));
        assert!(ptx.matches("ld.volatile.global.u32").count() >= 8, "8 chains of volatile loads per warp");
        assert!(ptx.matches("st.volatile.global.u32").count() >= 8, "8 volatile stores per round");
        assert!(ptx.matches("atom.global.add.u32").count() >= 8, "8 chains of atomics");
        assert!(ptx.matches("red.global.add.u32").count() >= 8, "8 reductions per round");
        assert!(!ptx.contains("ld.global.ca.u32"), "the hammer must not load through L1");
        assert!(!ptx.contains(".local"), "no local-memory spill");
    }

    #[test]
    fn the_report_is_found_between_ncu_lines() {
        let r = HammerReport {
            alloc_ptr: 0x7f00_0020_0000,
            alloc_2mib_aligned: true,
            page_base: 0x7f00_0020_0000,
            records: vec![],
            values: vec![vec![1.0, 2.5]],
            passes: 1,
            timing: vec![],
        };
        let text = format!(
            "==PROF== Connected to process 1\n{REPORT_BEGIN}\n{}\n{REPORT_END}\n==PROF== Disconnected\n",
            serde_json::to_string(&r).unwrap()
        );
        assert_eq!(parse_report(&text), Some(r));
        assert_eq!(parse_report("nothing"), None);
    }
}
