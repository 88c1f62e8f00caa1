//! `l2.partition`: the L2 partition bit over whole 2 MiB pages (docs/L2_SLICES.md, "The partition
//! probe"; kernels/partition.cu): per page, every line primed at its home slice, then one lap of
//! first touches over all the page's lines from SM 0 and from an SM of the other partition group
//! (found by laps over the first page), labelled near/far and fitted as far = parity(offset & mask)
//! XOR c(page), checked on held-out pages (partition_fit.rs). Not in a `--quick` run.

use super::partition_fit::{analyze, is_other_group, label_lap, LapLabels, Method, Undetermined};
use super::slices::partition_pages::PAGE_LINES;
use super::{cuda_only_sim_lacks, run_gpu};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::{Applicability, Probe, ProbeContext, ProbeError, ProbeOutput, Progress, TargetInfo};
use rand::seq::SliceRandom;
use rand::SeedableRng;

pub struct PartitionProbe;

const PAGE_BYTES: u64 = 2 << 20;
const LINE_BYTES: u64 = 128;
/// The warm-up cycle's lines (kernels/partition.cu PARTITION_WARM_LINES).
const WARM_LINES: u64 = 64;
/// SMs tried, in order, for the other partition group (SM 1 upward).
const MAX_CANDIDATES: u32 = 32;

/// Pages measured.
fn pages(quick: bool) -> u64 {
    if quick {
        16
    } else {
        32
    }
}

impl Probe for PartitionProbe {
    fn key(&self) -> &'static str {
        "l2.partition"
    }
    fn description(&self) -> &'static str {
        "the L2 partition bit over whole 2 MiB pages: near/far first touches from two SMs, the offset mask, held-out accuracy"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        cuda_only_sim_lacks(info, "the probe primes lines with reductions and times first touches in its own kernel")
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let progress = ctx.progress;
        run_gpu(ctx, |t, quick| measure(t, quick, progress))
    }
}

/// The device side: the pages (each with the same cycle), the warm-up cycle, the lap's output.
struct Layout {
    buf: u64,
    base: u64,
    warm: u64,
    /// The cycle as line indices (hop i loads line order[i]); the lap starts at order[0].
    order: Vec<usize>,
}

fn place(t: &mut CudaTarget, pages: u64) -> Result<Layout, ProbeError> {
    let buf = t.gpu.malloc((pages + 1) * PAGE_BYTES)?;
    let base = buf.div_ceil(PAGE_BYTES) * PAGE_BYTES;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x1a2b_9a77);
    let mut order: Vec<usize> = (0..PAGE_LINES).collect();
    order.shuffle(&mut rng);
    let words = (LINE_BYTES / 8) as usize;
    for p in 0..pages {
        let page = base + p * PAGE_BYTES;
        let mut image = vec![0u64; (PAGE_BYTES / 8) as usize];
        for (i, &x) in order.iter().enumerate() {
            image[x * words] = page + order[(i + 1) % PAGE_LINES] as u64 * LINE_BYTES;
        }
        t.gpu.htod(page, &image)?;
    }
    let warm = t.gpu.malloc(WARM_LINES * LINE_BYTES)?;
    let mut w = vec![0u64; (WARM_LINES * LINE_BYTES / 8) as usize];
    for i in 0..WARM_LINES {
        w[(i * LINE_BYTES / 8) as usize] = warm + ((i + 1) % WARM_LINES) * LINE_BYTES;
    }
    t.gpu.htod(warm, &w)?;
    t.gpu.sync()?;
    Ok(Layout { buf, base, warm, order })
}

/// One lap over page `p` from SM `sm`: prime, then the lap kernel there (launched again, up to 4
/// times, while no block landed on it). The cycles of each line's first touch, indexed by line.
fn one_lap(t: &mut CudaTarget, l: &Layout, p: u64, sm: u32) -> Result<Vec<u16>, ProbeError> {
    let page = l.base + p * PAGE_BYTES;
    let start = page + l.order[0] as u64 * LINE_BYTES;
    let scratch = t.scratch(4096 + 2 * PAGE_LINES as u64)?;
    let (ticket, status, out) = (scratch, scratch + 256, scratch + 4096);
    let null = std::ptr::null_mut();
    t.gpu.launch(Module::Partition, "partition_prime", 64, 256, 0, &[page], null)?;
    for _ in 0..4 {
        t.gpu.memset(ticket, 8)?;
        t.gpu.memset(status, 4 * 8)?;
        let args = [page, start, l.warm, sm as u64, ticket, out, status];
        t.gpu.launch(Module::Partition, "partition_lap", t.sms * 2, 32, 0, &args, null)?;
        t.gpu.sync()?;
        let s: Vec<u64> = t.gpu.dtoh(status, 4)?;
        if s[3] == 0 {
            continue;
        }
        if s[2] != sm as u64 {
            return Err(ProbeError::Failed(format!("the partition lap ran on SM {} instead of {sm}", s[2])));
        }
        if s[0] != start || s[1] != l.warm {
            return Err(ProbeError::Failed(format!(
                "the partition lap on SM {sm}, page {p}, ended at {:#x} / {:#x}, expected {start:#x} / {:#x}: a cycle \
                 was not followed",
                s[0], s[1], l.warm
            )));
        }
        return Ok(t.gpu.dtoh(out, PAGE_LINES)?);
    }
    Err(ProbeError::Failed(format!("the partition lap: no block was scheduled on SM {sm} in 4 launches")))
}

/// The first SM (1 upward) whose labels of page 0 are opposite to SM 0's.
fn find_other(
    t: &mut CudaTarget,
    l: &Layout,
    sm0_page0: &LapLabels,
    start: usize,
) -> Result<Result<u32, Undetermined>, ProbeError> {
    let last = t.sms.min(MAX_CANDIDATES + 1);
    for sm in 1..last {
        let c = one_lap(t, l, 0, sm)?;
        if let Some(lab) = label_lap(sm, &[c], &[start]) {
            if is_other_group(&sm0_page0.labels, &lab.labels) {
                return Ok(Ok(sm));
            }
        }
    }
    Ok(Err(Undetermined::NoOtherGroup { tried: format!("1..{}", last.saturating_sub(1)) }))
}

fn measure(t: &mut CudaTarget, quick: bool, progress: &dyn Progress) -> Result<ProbeOutput, ProbeError> {
    let started = std::time::Instant::now();
    let n = pages(quick);
    let l = place(t, n)?;
    let res = (|| -> Result<ProbeOutput, ProbeError> {
        let start = l.order[0];
        let starts = vec![start; n as usize];
        progress.start(2 * n, "L2 partition laps");
        let first = one_lap(t, &l, 0, 0)?;
        let sm0_page0 = label_lap(0, std::slice::from_ref(&first), &[start]);
        let other = match &sm0_page0 {
            Some(s) => find_other(t, &l, s, start)?,
            None => Err(Undetermined::NoModes { sm: 0 }),
        };
        let mut c0 = vec![first];
        let mut c1 = Vec::new();
        for p in 0..n {
            if p > 0 {
                c0.push(one_lap(t, &l, p, 0)?);
            }
            progress.advance(1);
            if let Ok(sm) = other {
                c1.push(one_lap(t, &l, p, sm)?);
            }
            progress.advance(1);
        }
        let a = label_lap(0, &c0, &starts);
        let b = match other {
            Ok(sm) => label_lap(sm, &c1, &starts).ok_or(Undetermined::NoModes { sm }),
            Err(e) => Err(e),
        };
        let method = Method { pages: n as usize, quick };
        let mut hop_of_line = vec![0; PAGE_LINES];
        for (hop, &x) in l.order.iter().enumerate() {
            hop_of_line[x] = hop;
        }
        let secs = started.elapsed().as_secs_f64();
        Ok(analyze(a.as_ref(), b.as_ref().map_err(Clone::clone), &method, &hop_of_line, secs))
    })();
    t.gpu.free(l.buf);
    t.gpu.free(l.warm);
    res
}
