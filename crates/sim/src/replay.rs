//! Kernel replay with a throughput model (seed 000's vadd panel, seed 004's store path): warps are
//! placed on SMs block by block as a launch would (`sm.resident_warps` per SM, a finished block's
//! slot taken by the next block), each warp issues its independent loads, waits for them, then
//! issues its stores. Every request goes through the functional `Machine` (hits, misses, sectors,
//! write-backs) and through queues: the SM's LSU (one instruction per cycle) and crossbar egress
//! port for stores (`sm.port_bytes_per_cycle`), the L2 slice (`l2.slice_bytes_per_ns`), and the DRAM banks and
//! channels (`Dram`). Unloaded, a request costs exactly the chase latencies (15.4 / 127.4 /
//! 255.4 ns on the 4090). Write-backs occupy DRAM channels but do not stall stores (simplified).

use crate::fast::MonoQueue;
use crate::machine::{Level, Machine, Pre};
use crate::timeline::{BankSpan, BankState, Geometry, Op, Request, Served, Timeline};

/// One memory instruction of a warp: `bytes` contiguous bytes at virtual address `va` (split
/// into line requests by the coalescer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemOp {
    pub op: Op,
    pub va: u64,
    pub bytes: u64,
}

/// A kernel: per warp, independent loads, then (after they return) stores.
pub trait Kernel {
    /// Number of warps in the launch.
    fn warps(&self) -> u64;
    /// The loads and stores of warp `w`.
    fn ops(&self, w: u64, loads: &mut Vec<MemOp>, stores: &mut Vec<MemOp>);
}

/// Totals of a replay.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReplayTotals {
    /// Modeled kernel time (last retire or store ack), ns.
    pub time_ns: f64,
    pub warps: u64,
    pub requests: u64,
    /// Refresh windows that began during the kernel, all banks.
    pub refreshes: u64,
}

#[derive(Clone, Copy)]
struct Slot {
    sm: u32,
    block_slot: u32,
}

/// Replay options.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Record the requests of the first this many warps into the timeline (0: none).
    pub record_warps: u64,
    /// Use only SMs `0..sms` (None: all).
    pub sms: Option<u32>,
    /// Loads bypass L1 (ld.global.cg).
    pub bypass_l1: bool,
}

/// Replay `k` on `m`, starting at `t0_ns`. Returns totals and, when asked, the timeline.
pub fn replay<K: Kernel + ?Sized>(
    m: &mut Machine,
    k: &K,
    t0_ns: f64,
    opt: ReplayOptions,
) -> (ReplayTotals, Option<Timeline>) {
    let h = m.h.clone();
    let sms = opt.sms.unwrap_or(h.sm.count).clamp(1, h.sm.count);
    let warps_per_block = (h.sm.block_threads / 32).max(1);
    let blocks_per_sm = (h.sm.resident_warps / warps_per_block).max(1);
    let n_warps = k.warps();
    let n_blocks = n_warps.div_ceil(warps_per_block as u64);
    let cycle_ns = 1e9 / h.clock_hz;
    let port_ns_per_byte = 1.0 / (h.sm.port_bytes_per_cycle * h.clock_hz * 1e-9);
    let slice_ns_per_byte = 1.0 / h.l2.slice_bytes_per_ns;
    let line = h.l2.line_bytes as u64;
    let svc_line = line as f64 * slice_ns_per_byte;
    let xbar_ns = ((h.l2.hit_ns - h.l1.hit_ns - svc_line) / 2.0).max(0.0);
    let dram_extra_ns = h.dram.latency_ns - h.l2.hit_ns;
    let mut lsu_free = vec![t0_ns; sms as usize];
    let mut port_free = vec![t0_ns; sms as usize];
    let mut slice_free = vec![t0_ns; h.l2.slices as usize];
    let mut block_left = vec![0u32; (sms * blocks_per_sm) as usize];
    let mut timeline = (opt.record_warps > 0).then(|| {
        Timeline::new(
            "",
            Geometry {
                sms: h.sm.count,
                l1_sets: h.l1.sets,
                l2_slices: h.l2.slices,
                l2_sets_per_slice: h.l2.sets_per_slice,
                controllers: h.dram.controllers,
                channels_per_controller: h.dram.channels,
                banks_per_channel: h.dram.banks,
                line_bytes: h.l2.line_bytes,
                clock_hz: h.clock_hz,
            },
        )
    });
    let banks_per_ctrl = h.dram.channels * h.dram.banks;
    // events: (time, warp << 1 | phase) as one key (time << 64 | warp << 1 | phase), a warp's
    // next step, in (time, warp, phase) order; block slots start their warps
    let mut queue = MonoQueue::new();
    let mut slot_of_block: Vec<Slot> = Vec::new();
    let mut next_block = 0u64;
    let key = |t: f64| (t * 1024.0) as u64; // ns in 1/1024 steps: a total order for the queue
    let start_block =
        |b: u64, slot: Slot, t: f64, queue: &mut MonoQueue, slot_of_block: &mut Vec<Slot>, block_left: &mut [u32]| {
            let first = b * warps_per_block as u64;
            let last = (first + warps_per_block as u64).min(n_warps);
            block_left[(slot.sm * blocks_per_sm + slot.block_slot) as usize] = (last - first) as u32;
            if slot_of_block.len() <= b as usize {
                slot_of_block.resize(b as usize + 1, slot);
            }
            slot_of_block[b as usize] = slot;
            for (i, w) in (first..last).enumerate() {
                queue.push(event(key(t + i as f64 * cycle_ns), w << 1));
            }
        };
    for bs in 0..blocks_per_sm {
        for sm in 0..sms {
            if next_block < n_blocks {
                start_block(
                    next_block,
                    Slot { sm, block_slot: bs },
                    t0_ns,
                    &mut queue,
                    &mut slot_of_block,
                    &mut block_left,
                );
                next_block += 1;
            }
        }
    }
    let (l1_hit_ns, half_l2_hit_ns) = (h.l1.hit_ns, h.l2.hit_ns * 0.5);
    let (tlb_miss_ns, neg_activate_ns) = (h.tlb.miss_ns, -h.dram.activate_ns);
    let far_extra_ns = h.l2.far_hit_ns.unwrap_or(h.l2.hit_ns) - h.l2.hit_ns;
    let store_issue_ns = h.sm.store_issue_ns;
    let mut scratch = (Vec::new(), Vec::new());
    // the requests of the event being replayed and of the next one (computed ahead so the host
    // can prefetch the simulated sets they touch; speed only, no simulated state)
    let mut cur = Work::default();
    let mut next = Work::default();
    let mut end = t0_ns;
    let mut requests = 0u64;
    let mut rec_end = t0_ns;
    while let Some(ev) = queue.pop() {
        let (tk, wp) = ((ev >> 64) as u64, ev as u64);
        let (w, phase) = (wp >> 1, (wp & 1) as u8);
        let t = tk as f64 / 1024.0;
        let b = w / warps_per_block as u64;
        let slot = slot_of_block[b as usize];
        let sm = slot.sm;
        let smu = sm as usize;
        if next.ready && next.wp == wp {
            std::mem::swap(&mut cur, &mut next);
        } else {
            cur.prepare(m, k, wp, line, &mut scratch);
        }
        next.ready = false;
        if let Some(nev) = queue.peek() {
            next.prepare(m, k, nev as u64, line, &mut scratch);
            let nsm = slot_of_block[((nev as u64 >> 1) / warps_per_block as u64) as usize].sm;
            if nev & 1 == 0 {
                for p in &next.pieces {
                    m.prefetch_pre(nsm, &p.pre, true, true);
                }
            } else {
                for p in &next.pieces {
                    m.prefetch_store_pre(nsm, &p.pre);
                }
            }
        }
        let record = w < opt.record_warps;
        // phase 0: loads, issued back to back; the stores follow (phase 1) once they returned
        let mut ready = t;
        let mut issue = t;
        let load_pieces: &[Piece] = if phase == 0 { &cur.pieces } else { &[] };
        for &Piece { op, len, pre } in load_pieces {
            let ti = issue.max(lsu_free[smu]);
            lsu_free[smu] = ti + cycle_ns;
            issue = ti + cycle_ns;
            requests += 1;
            // slice queue first (the DRAM sees the request when the slice is done with it)
            let s = pre.slice() as usize;
            let l1_done = ti + l1_hit_ns;
            let arrive = l1_done + xbar_ns;
            let st = arrive.max(slice_free[s]);
            let svc = len as f64 * slice_ns_per_byte;
            let l2_done = st + svc_line.max(svc);
            let r = m.load_pre(sm, &pre, opt.bypass_l1, l2_done - half_l2_hit_ns);
            let (done, back) = if r.level == Level::L1 {
                (ti + r.latency_ns, ti)
            } else {
                let tlb = if r.tlb_miss { tlb_miss_ns } else { 0.0 };
                slice_free[s] = st + svc;
                let mut back = l2_done + tlb;
                if r.level == Level::L2Far {
                    back += far_extra_ns;
                }
                if let Some(d) = r.dram {
                    back = l2_done + tlb + dram_extra_ns + d.extra_ns.max(neg_activate_ns);
                }
                // data back to the SM (its ingress is not modeled as a queue: returns are
                // computed out of time order, and the slices and DRAM limit them first)
                (back + xbar_ns, back)
            };
            ready = ready.max(done);
            if record {
                rec_end = rec_end.max(done);
                if let Some(tl) = timeline.as_mut() {
                    let controller = m.controller_of(r.slice) as u16;
                    let mut rq = Request {
                        warp: w as u32,
                        sm: sm as u16,
                        op,
                        served: Served::L1,
                        l1_set: r.l1_set as u16,
                        slice: r.slice as u16,
                        l2_set: r.l2_set as u16,
                        controller,
                        bank: None,
                        row: None,
                        row_hit: false,
                        sectors: len.div_ceil(h.l2.sector_bytes as u64) as u8,
                        issue_ns: ti as f32,
                        l1_done_ns: ti as f32,
                        l2_arrive_ns: ti as f32,
                        l2_done_ns: ti as f32,
                        dram_done_ns: ti as f32,
                        retire_ns: done as f32,
                    };
                    if r.level != Level::L1 {
                        rq.served = match r.level {
                            Level::L2Far => Served::L2Far,
                            Level::WriteBackFifo => Served::WriteBackFifo,
                            Level::Dram => Served::Dram,
                            _ => Served::L2,
                        };
                        if let Some(d) = r.dram {
                            rq.bank = Some((d.bank % banks_per_ctrl) as u16);
                            rq.row = Some(d.row as u32);
                            rq.row_hit = d.row_hit;
                            bank_spans(tl, &h, controller, d, (d.bank % banks_per_ctrl) as u16);
                        }
                        rq.l1_done_ns = l1_done as f32;
                        rq.l2_arrive_ns = arrive as f32;
                        rq.l2_done_ns = l2_done as f32;
                        rq.dram_done_ns = back as f32;
                    }
                    tl.push_request(&rq);
                }
            }
        }
        if phase == 0 && cur.stores {
            // FADD and friends after the loads return, then the stores as their own event
            let t_store = if cur.loads { ready + 4.0 * cycle_ns } else { t };
            queue.push(event(key(t_store), w << 1 | 1));
            continue;
        }
        let mut t_store = t;
        let store_pieces: &[Piece] = if phase == 1 { &cur.pieces } else { &[] };
        for &Piece { op, len, pre } in store_pieces {
            let ti = t_store.max(lsu_free[smu]);
            lsu_free[smu] = ti + cycle_ns;
            t_store = ti + store_issue_ns;
            requests += 1;
            let r = m.store_pre(sm, &pre, ti);
            let tlb = if r.tlb_miss { tlb_miss_ns } else { 0.0 };
            let l1_done = ti + store_issue_ns + tlb;
            let pt = l1_done.max(port_free[smu]);
            port_free[smu] = pt + len as f64 * port_ns_per_byte;
            let arrive = pt + len as f64 * port_ns_per_byte + xbar_ns;
            let s = r.slice as usize;
            let st = arrive.max(slice_free[s]);
            let svc = len as f64 * slice_ns_per_byte;
            slice_free[s] = st + svc;
            let ack = st + svc + xbar_ns;
            end = end.max(ack);
            if record {
                rec_end = rec_end.max(ack);
                if let Some(tl) = timeline.as_mut() {
                    tl.push_request(&Request {
                        warp: w as u32,
                        sm: sm as u16,
                        op,
                        served: if r.l2_hit { Served::L2 } else { Served::L2Miss },
                        l1_set: r.l1_set as u16,
                        slice: r.slice as u16,
                        l2_set: r.l2_set as u16,
                        controller: m.controller_of(r.slice) as u16,
                        bank: None,
                        row: None,
                        row_hit: false,
                        sectors: len.div_ceil(h.l2.sector_bytes as u64) as u8,
                        issue_ns: ti as f32,
                        l1_done_ns: l1_done as f32,
                        l2_arrive_ns: arrive as f32,
                        l2_done_ns: (st + svc) as f32,
                        dram_done_ns: (st + svc) as f32,
                        retire_ns: ack as f32,
                    });
                }
            }
        }
        let exit = t_store.max(ready);
        end = end.max(exit);
        // block bookkeeping: the last warp of a block frees its slot for the next block
        let bi = (slot.sm * blocks_per_sm + slot.block_slot) as usize;
        block_left[bi] -= 1;
        if block_left[bi] == 0 && next_block < n_blocks {
            start_block(next_block, slot, exit, &mut queue, &mut slot_of_block, &mut block_left);
            next_block += 1;
        }
    }
    let totals = ReplayTotals {
        time_ns: end - t0_ns,
        warps: n_warps,
        requests,
        refreshes: m.dram.refreshes_between(t0_ns, end),
    };
    if let Some(tl) = timeline.as_mut() {
        tl.recorded_warps = opt.record_warps.min(n_warps);
        tl.end_ns = rec_end - t0_ns;
        tl.counters.warps = n_warps;
        tl.counters.requests = requests;
        tl.counters.time_ns = totals.time_ns;
        tl.counters.refreshes = totals.refreshes;
        if t0_ns != 0.0 {
            shift(tl, t0_ns as f32);
        }
    }
    (totals, timeline)
}

/// One line request of a memory instruction, with its state-independent indices (`Machine::pre`).
#[derive(Clone, Copy)]
struct Piece {
    op: Op,
    len: u64,
    pre: Pre,
}

/// The queue key of an event at time key `tk` (`key`) of `wp` (warp << 1 | phase).
#[inline(always)]
fn event(tk: u64, wp: u64) -> u128 {
    (tk as u128) << 64 | wp as u128
}

/// The line requests of one event (a warp's loads, or its stores), computed when it is next in
/// the queue. Speed only.
#[derive(Default)]
struct Work {
    /// `wp` of the event (warp << 1 | phase).
    wp: u64,
    /// `pieces` hold `wp`'s requests.
    ready: bool,
    /// The warp has loads, stores (phase 0: whether a store event follows).
    loads: bool,
    stores: bool,
    pieces: Vec<Piece>,
}

impl Work {
    /// The requests of event `wp` of kernel `k` (`scratch`: the kernel's op lists).
    fn prepare<K: Kernel + ?Sized>(
        &mut self,
        m: &Machine,
        k: &K,
        wp: u64,
        line: u64,
        scratch: &mut (Vec<MemOp>, Vec<MemOp>),
    ) {
        let (loads, stores) = scratch;
        loads.clear();
        stores.clear();
        k.ops(wp >> 1, loads, stores);
        (self.wp, self.ready, self.loads, self.stores) = (wp, true, !loads.is_empty(), !stores.is_empty());
        pieces(m, if wp & 1 == 0 { loads } else { stores }, line, &mut self.pieces);
    }
}

/// The line requests of `ops`, in issue order, into `out` (the coalescer: one request per line
/// each instruction touches).
fn pieces(m: &Machine, ops: &[MemOp], line: u64, out: &mut Vec<Piece>) {
    out.clear();
    let pow2 = line.is_power_of_two();
    for op in ops {
        let (mut a, end) = (op.va, op.va + op.bytes);
        while a < end {
            let next = if pow2 { (a | (line - 1)) + 1 } else { ((a / line) + 1) * line };
            let len = next.min(end) - a;
            out.push(Piece { op: op.op, len, pre: pre_of(m, a, len) });
            a = next;
        }
    }
}

/// `m.pre(va, len)`, out of line (inlined, the compiler keeps the machine's fields it reads in
/// spilled registers across the coalescer's loop).
#[inline(never)]
fn pre_of(m: &Machine, va: u64, len: u64) -> Pre {
    m.pre(va, len)
}

fn bank_spans(
    tl: &mut Timeline,
    h: &crate::hierarchy::Hierarchy,
    controller: u16,
    d: crate::dram::DramAccess,
    bank: u16,
) {
    let mut push = |state, s: f64, e: f64| {
        tl.push_bank_span(&BankSpan { controller, bank, state, start_ns: s as f32, end_ns: e as f32 })
    };
    if d.refresh_stall_ns > 0.0 {
        push(BankState::Refresh, d.start_ns - d.refresh_stall_ns, d.start_ns);
    }
    let open_from = if d.row_hit {
        d.start_ns
    } else {
        push(BankState::Activate, d.start_ns, d.start_ns + h.dram.activate_ns);
        d.start_ns + h.dram.activate_ns
    };
    push(BankState::RowOpen, open_from, open_from + h.dram.column_ns + h.dram.row_open_ns);
}

fn shift(tl: &mut Timeline, t0: f32) {
    let r = &mut tl.requests;
    for v in [
        &mut r.issue_ns,
        &mut r.l1_done_ns,
        &mut r.l2_arrive_ns,
        &mut r.l2_done_ns,
        &mut r.dram_done_ns,
        &mut r.retire_ns,
    ] {
        v.iter_mut().for_each(|x| *x -= t0);
    }
    tl.banks.start_ns.iter_mut().for_each(|x| *x -= t0);
    tl.banks.end_ns.iter_mut().for_each(|x| *x -= t0);
}
