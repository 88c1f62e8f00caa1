//! `store` and `fence`: the store path of seed 004 (kernels/store.cu). STG issue interval of one
//! warp (16 unrolled stores per round, slope over two round counts so fixed costs cancel); SM egress
//! in bytes per cycle (one block of 1024 threads storing 16 bytes each to L2-resident lines); the L1
//! write-through check (stores to L1-resident lines against L1-hit loads of the same lines); the L2
//! write-back cost (reading 4x L2 after dirtying versus after cleanly reading ~0.9x L2); fences as N
//! stores with versus without membar.cta / membar.gl / membar.sys after each, in a %globaltimer loop.

use super::{cuda_only, run_gpu, summarize};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::median;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetError, TargetInfo,
};

pub struct StoreProbe;
pub struct FenceProbe;

/// Launch one kernel that writes [c0, c1, t0, t1] (or [t0, t1, c0, c1] with `time_first`), return
/// (cycles, ns).
fn run_timed(
    t: &mut CudaTarget,
    name: &'static str,
    grid: u32,
    block: u32,
    args: &[u64],
    out: u64,
    time_first: bool,
) -> Result<(f64, f64), TargetError> {
    t.gpu.launch(Module::Store, name, grid, block, 0, args, std::ptr::null_mut())?;
    t.gpu.sync()?;
    let v: Vec<u64> = t.gpu.dtoh(out, 4)?;
    let (c, n) = if time_first {
        (v[3].wrapping_sub(v[2]), v[1].wrapping_sub(v[0]))
    } else {
        (v[1].wrapping_sub(v[0]), v[3].wrapping_sub(v[2]))
    };
    Ok((c as f64, n as f64))
}

/// Cycles per STG of one warp with `lanes` active lanes (slope over 256 and 1024 rounds of 16).
fn issue_cycles(t: &mut CudaTarget, buf: u64, out: u64, lanes: u64, reps: usize) -> Result<Vec<f64>, TargetError> {
    let mut v = Vec::new();
    run_timed(t, "store_issue", 1, 32, &[buf, 64, lanes, out], out, false)?; // warm the lines
    for _ in 0..reps {
        let (c1, _) = run_timed(t, "store_issue", 1, 32, &[buf, 256, lanes, out], out, false)?;
        let (c2, _) = run_timed(t, "store_issue", 1, 32, &[buf, 1024, lanes, out], out, false)?;
        v.push((c2 - c1) / ((1024 - 256) as f64 * 16.0));
    }
    Ok(v)
}

/// Bytes per cycle of one SM (1024 threads x 16 B x 8 per round), stores (mode 0) or L1 loads
/// (mode 1) over `span` bytes; slope over 64 and 256 rounds.
fn sm_bytes_per_cycle(
    t: &mut CudaTarget,
    buf: u64,
    out: u64,
    span: u64,
    mode: u64,
    reps: usize,
) -> Result<Vec<f64>, TargetError> {
    let mut v = Vec::new();
    let per_round = 1024.0 * 16.0 * 8.0;
    for _ in 0..reps {
        let (c1, _) = run_timed(t, "sm_traffic", 1, 1024, &[buf, span, 64, mode, out], out, false)?;
        let (c2, _) = run_timed(t, "sm_traffic", 1, 1024, &[buf, span, 256, mode, out], out, false)?;
        v.push(per_round * 192.0 / (c2 - c1));
    }
    Ok(v)
}

/// Seconds to read `rbytes` at `r` after either dirtying (write) or cleanly reading `wbytes` at `w`.
fn read_after(t: &mut CudaTarget, r: u64, rbytes: u64, w: u64, wbytes: u64, dirty: bool) -> Result<f64, TargetError> {
    t.flush()?;
    let sink = t.scratch(64)?;
    let null = std::ptr::null_mut();
    let grid = t.sms * 4;
    if dirty {
        t.gpu.launch(Module::Bw, "bw_write", grid, 512, 0, &[w, wbytes / 16, 3], null)?;
    } else {
        t.gpu.launch(Module::Bw, "bw_read", grid, 512, 0, &[w, wbytes / 16, sink], null)?;
    }
    t.gpu.sync()?;
    let ms = super::bw::timed(t, null, 1, |tt| {
        tt.gpu.launch(Module::Bw, "bw_read", grid, 512, 0, &[r, rbytes / 16, sink], null)
    })?;
    Ok(ms / 1e3)
}

use memscope_core::Target;

fn measure_store(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 7 };
    let hz = t.clock_hz();
    let buf = t.gpu.malloc(1 << 20)?;
    let out_d = t.scratch(4096)?;
    let mut out = ProbeOutput::default();
    let res = (|| -> Result<(), ProbeError> {
        let full = issue_cycles(t, buf, out_d, 32, reps)?;
        let one = issue_cycles(t, buf, out_d, 1, reps)?;
        let (m, s) = summarize(&full, "issue interval")?;
        let mut f = Finding::number(m, "cycles", &format!(
            "one warp, 32 lanes x 4 B stores (st.global.u32) to 8 L2-resident lines, 16 unrolled per round, clock64 slope over 256 vs 1024 rounds, median of {reps}"), Confidence::High)
            .with_spread(s)
            .with_note(&format!("with 1 active lane: {:.2} cycles", median(&one)));
        if let Some(hz) = hz {
            f = f.with_note(&format!(
                "with 1 active lane: {:.2} cycles; {:.2} ns at the measured {:.0} MHz",
                median(&one),
                m / hz * 1e9,
                hz / 1e6
            ));
        }
        out.finding(keys::STORE_ISSUE_CYCLES, f);

        let st_l2 = sm_bytes_per_cycle(t, buf, out_d, 1 << 20, 0, reps)?;
        let (m_eg, s) = summarize(&st_l2, "egress")?;
        out.finding(keys::STORE_EGRESS_BYTES_PER_CYCLE, Finding::number(m_eg, "bytes/cycle",
            &format!("one block of 1024 threads on one SM, st.global.v4.u32 (16 B) over 1 MiB of L2-resident lines, membar.gl at the end, clock64 slope over 64 vs 256 rounds of 8, median of {reps}"),
            Confidence::High).with_spread(s));

        let st_l1 = sm_bytes_per_cycle(t, buf, out_d, 16 << 10, 0, reps)?;
        let ld_l1 = sm_bytes_per_cycle(t, buf, out_d, 16 << 10, 1, reps)?;
        let (s16, l16) = (median(&st_l1), median(&ld_l1));
        let method = format!("one SM: stores to 16 KiB of L1-resident lines {s16:.1} B/cycle, stores to 1 MiB {m_eg:.1} B/cycle, ld.global.ca hits on the same 16 KiB {l16:.1} B/cycle (median of {reps})");
        let wt = (s16 - m_eg).abs() <= 0.25 * m_eg && l16 > 1.5 * s16;
        out.finding(keys::STORE_L1_WRITE_THROUGH, if wt {
            Finding::text("write-through", &method, Confidence::Medium).with_note("stores to lines that are in L1 run at the SM's egress rate, not at the L1 rate: every store leaves the SM (seed 004)")
        } else {
            Finding::undetermined("", &method, "the store rates to L1-resident and L2-resident lines do not separate from the L1 load rate as a write-through L1 predicts")
        });

        // L2 write-back cost.
        let l2 = t.l2_bytes;
        let wbytes = (l2 * 9 / 10) / (1 << 20) * (1 << 20);
        let rbytes = 4 * l2.div_ceil(1 << 20) * (1 << 20);
        let w = t.gpu.malloc(wbytes)?;
        let r = match t.gpu.malloc(rbytes) {
            Ok(r) => r,
            Err(e) => {
                t.gpu.free(w);
                return Err(e.into());
            }
        };
        let wb = (|| -> Result<(Vec<f64>, Vec<f64>), TargetError> {
            let (mut dirty, mut clean) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                dirty.push(read_after(t, r, rbytes, w, wbytes, true)?);
                clean.push(read_after(t, r, rbytes, w, wbytes, false)?);
            }
            Ok((dirty, clean))
        })();
        t.gpu.free(w);
        t.gpu.free(r);
        let (dirty, clean) = wb?;
        let (d, c) = (median(&dirty), median(&clean));
        let sc = memscope_core::stats::Sample::new(&clean).map_err(|e| ProbeError::Failed(e.to_string()))?;
        let noise = (sc.max() - sc.min()).max(sc.mad() * 3.0);
        let lines = wbytes as f64 / 128.0;
        let method = format!("read {} MiB after writing {} MiB (dirty L2) vs after reading it (clean), flush before each, events, median of {reps}: {:.1} us vs {:.1} us",
            rbytes >> 20, wbytes >> 20, d * 1e6, c * 1e6);
        out.finding(keys::STORE_L2_WRITEBACK_EXPOSED_NS_PER_LINE, if d - c > noise {
            Finding::number((d - c) * 1e9 / lines, "ns", &method, Confidence::Low)
                .with_note(&format!("extra read time per dirty 128-byte line evicted ({:.0}% slower read); write-backs overlap the reads, so this is the exposed cost, not the latency", (d / c - 1.0) * 100.0))
        } else {
            Finding::undetermined("ns", &method, "the dirty and clean runs differ by less than the spread of the clean runs")
        });
        Ok(())
    })();
    t.gpu.free(buf);
    res.map(|_| out)
}

fn measure_fence(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 7 };
    let buf = t.gpu.malloc(1 << 20)?;
    let out_d = t.scratch(4096)?;
    let mut out = ProbeOutput::default();
    let res = (|| -> Result<(), ProbeError> {
        for (key, name, n) in [("cta", "fence_cta", 4096u64), ("gpu", "fence_gl", 256), ("sys", "fence_sys", 64)] {
            run_timed(t, "fence_none", 1, 1, &[buf, n, out_d], out_d, true)?;
            run_timed(t, name, 1, 1, &[buf, n, out_d], out_d, true)?;
            let (mut ns, mut cyc) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let (c0, n0) = run_timed(t, "fence_none", 1, 1, &[buf, n, out_d], out_d, true)?;
                let (c1, n1) = run_timed(t, name, 1, 1, &[buf, n, out_d], out_d, true)?;
                let k = (n * 8) as f64;
                ns.push((n1 - n0) / k);
                cyc.push((c1 - c0) / k);
            }
            let (m, s) = summarize(&ns, "fence")?;
            let ptx = match key {
                "cta" => "membar.cta",
                "gpu" => "membar.gl",
                _ => "membar.sys",
            };
            out.finding(&keys::fence_ns(key), Finding::number(m, "ns",
                &format!("one thread, {} stores each followed by {ptx} minus the same stores without fences, %globaltimer, per fence, median of {reps}", n * 8),
                Confidence::High).with_spread(s).with_cycles(median(&cyc)));
        }
        Ok(())
    })();
    t.gpu.free(buf);
    res.map(|_| out)
}

impl Probe for StoreProbe {
    fn key(&self) -> &'static str {
        "store"
    }
    fn description(&self) -> &'static str {
        "GPU store path: STG issue interval, SM egress bytes/cycle, L1 write-through, L2 write-back cost"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure_store)
    }
}

impl Probe for FenceProbe {
    fn key(&self) -> &'static str {
        "fence"
    }
    fn description(&self) -> &'static str {
        "GPU fence cost: membar.cta, membar.gl and membar.sys after a store"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure_fence)
    }
}
