//! The per-request timeline of a kernel replay (`memscope sim vadd --timeline FILE`), which the
//! HTML animation of seed 000's "Loading b" panel plays (SMs with one pixel per L1 set, crossbar,
//! L2 slices with one pixel per set grouped by controller, controller throughput, DRAM banks'
//! activate / row open / refresh states, counters). Pure data: the simulator's replay
//! (memscope-sim `replay`) fills it, the report's animation reads it (the report does
//! not depend on the simulator for these types).
//!
//! Compact by construction: requests and bank spans are stored as columns (one vector per field,
//! small integer types, times as f32 ns from kernel start), so a full wave of the 4090 (6,144
//! warps x 3 requests = 18,432 requests) is ~1-2 MB of JSON. Use `Timeline::request(i)` /
//! `Timeline::bank_span(i)` to read rows and `push_request` / `push_bank_span` to write them.
//!
//! JSON shape (stable; extend, never change): `{"version": 1, "title", "geometry": {...},
//! "requests": {"warp": [..], "sm": [..], ...one array per field...}, "banks": {...}, "end_ns",
//! "counters": {...}}`.

use serde::{Deserialize, Serialize};

/// Chip geometry the player lays out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Geometry {
    pub sms: u32,
    /// L1 sets per SM (one pixel each).
    pub l1_sets: u32,
    pub l2_slices: u32,
    pub l2_sets_per_slice: u32,
    pub controllers: u32,
    pub channels_per_controller: u32,
    pub banks_per_channel: u32,
    pub line_bytes: u32,
    pub clock_hz: f64,
}

/// Which instruction a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[repr(u8)]
pub enum Op {
    /// LDG of a[i].
    LoadA = 0,
    /// LDG of b[i].
    LoadB = 1,
    /// STG of c[i].
    Store = 2,
}

/// Where a request was served (for a store: `L2` if the line was present in L2, else `L2Miss`
/// meaning a slot was allocated, seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[repr(u8)]
pub enum Served {
    L1 = 0,
    L2 = 1,
    L2Far = 2,
    WriteBackFifo = 3,
    Dram = 4,
    /// A store that allocated a new L2 line.
    L2Miss = 5,
}

/// One memory request (one 128-byte line request of one warp instruction), as a row.
/// Times are ns from the kernel start; legs that did not happen repeat the previous time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    pub warp: u32,
    pub sm: u16,
    pub op: Op,
    pub served: Served,
    pub l1_set: u16,
    pub slice: u16,
    pub l2_set: u16,
    pub controller: u16,
    /// Bank within the controller (`channel * banks_per_channel + bank`), when DRAM was reached.
    pub bank: Option<u16>,
    /// DRAM row, when DRAM was reached.
    pub row: Option<u32>,
    /// The DRAM access found its row open (no activate).
    pub row_hit: bool,
    /// Sectors requested (popcount of the sector mask).
    pub sectors: u8,
    /// Issued at the SM (L1 lookup starts).
    pub issue_ns: f32,
    /// Left the SM into the crossbar (after the L1 miss and translation); = issue for L1 hits.
    pub l1_done_ns: f32,
    /// Arrived at the L2 slice.
    pub l2_arrive_ns: f32,
    /// L2 lookup done (hit: data leaves; miss: handed to the controller).
    pub l2_done_ns: f32,
    /// Data back at the slice from DRAM (= l2_done_ns when DRAM was not reached).
    pub dram_done_ns: f32,
    /// Data in the register (loads) or ack at the SM (stores): retired.
    pub retire_ns: f32,
}

/// Columns of `Request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RequestColumns {
    pub warp: Vec<u32>,
    pub sm: Vec<u16>,
    /// `Op as u8`.
    pub op: Vec<u8>,
    /// `Served as u8`.
    pub served: Vec<u8>,
    pub l1_set: Vec<u16>,
    pub slice: Vec<u16>,
    pub l2_set: Vec<u16>,
    pub controller: Vec<u16>,
    /// Bank within the controller; -1 when DRAM was not reached.
    pub bank: Vec<i32>,
    /// Row; -1 when DRAM was not reached.
    pub row: Vec<i64>,
    /// 1 if the DRAM access hit an open row.
    pub row_hit: Vec<u8>,
    pub sectors: Vec<u8>,
    pub issue_ns: Vec<f32>,
    pub l1_done_ns: Vec<f32>,
    pub l2_arrive_ns: Vec<f32>,
    pub l2_done_ns: Vec<f32>,
    pub dram_done_ns: Vec<f32>,
    pub retire_ns: Vec<f32>,
}

/// DRAM bank state of a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[repr(u8)]
pub enum BankState {
    Activate = 0,
    RowOpen = 1,
    Precharge = 2,
    Refresh = 3,
}

/// One interval of one bank in one state, as a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BankSpan {
    pub controller: u16,
    /// Bank within the controller (`channel * banks_per_channel + bank`).
    pub bank: u16,
    pub state: BankState,
    pub start_ns: f32,
    pub end_ns: f32,
}

/// Columns of `BankSpan`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BankColumns {
    pub controller: Vec<u16>,
    pub bank: Vec<u16>,
    /// `BankState as u8`.
    pub state: Vec<u8>,
    pub start_ns: Vec<f32>,
    pub end_ns: Vec<f32>,
}

/// Totals of the whole replay (not only the recorded window).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Counters {
    pub warps: u64,
    pub requests: u64,
    pub activates: u64,
    pub refreshes: u64,
    pub bytes: u64,
    /// Modeled kernel time, ns.
    pub time_ns: f64,
}

/// A replay's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Timeline {
    /// Format version (1).
    pub version: u32,
    /// "vadd n=16777216 on simulated RTX 4090".
    pub title: String,
    pub geometry: Geometry,
    /// Requests of the recorded warps (the first `recorded_warps` warps of the launch).
    pub requests: RequestColumns,
    /// Bank activity during the recorded window.
    pub banks: BankColumns,
    /// Warps whose requests are recorded.
    pub recorded_warps: u64,
    /// End of the recorded window, ns.
    pub end_ns: f64,
    pub counters: Counters,
}

fn opt_i32(v: i32) -> Option<u16> {
    (v >= 0).then_some(v as u16)
}

impl Op {
    pub fn from_u8(v: u8) -> Op {
        match v {
            0 => Op::LoadA,
            1 => Op::LoadB,
            _ => Op::Store,
        }
    }
}
impl Served {
    pub fn from_u8(v: u8) -> Served {
        match v {
            0 => Served::L1,
            1 => Served::L2,
            2 => Served::L2Far,
            3 => Served::WriteBackFifo,
            4 => Served::Dram,
            _ => Served::L2Miss,
        }
    }
}
impl BankState {
    pub fn from_u8(v: u8) -> BankState {
        match v {
            0 => BankState::Activate,
            1 => BankState::RowOpen,
            2 => BankState::Precharge,
            _ => BankState::Refresh,
        }
    }
}

impl Timeline {
    /// An empty timeline.
    pub fn new(title: &str, geometry: Geometry) -> Self {
        Timeline { version: 1, title: title.into(), geometry, ..Timeline::default() }
    }

    /// Number of requests.
    pub fn len(&self) -> usize {
        self.requests.warp.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append a request.
    pub fn push_request(&mut self, r: &Request) {
        let c = &mut self.requests;
        c.warp.push(r.warp);
        c.sm.push(r.sm);
        c.op.push(r.op as u8);
        c.served.push(r.served as u8);
        c.l1_set.push(r.l1_set);
        c.slice.push(r.slice);
        c.l2_set.push(r.l2_set);
        c.controller.push(r.controller);
        c.bank.push(r.bank.map_or(-1, i32::from));
        c.row.push(r.row.map_or(-1, i64::from));
        c.row_hit.push(u8::from(r.row_hit));
        c.sectors.push(r.sectors);
        c.issue_ns.push(r.issue_ns);
        c.l1_done_ns.push(r.l1_done_ns);
        c.l2_arrive_ns.push(r.l2_arrive_ns);
        c.l2_done_ns.push(r.l2_done_ns);
        c.dram_done_ns.push(r.dram_done_ns);
        c.retire_ns.push(r.retire_ns);
    }

    /// Request `i` as a row.
    pub fn request(&self, i: usize) -> Request {
        let c = &self.requests;
        Request {
            warp: c.warp[i],
            sm: c.sm[i],
            op: Op::from_u8(c.op[i]),
            served: Served::from_u8(c.served[i]),
            l1_set: c.l1_set[i],
            slice: c.slice[i],
            l2_set: c.l2_set[i],
            controller: c.controller[i],
            bank: opt_i32(c.bank[i]),
            row: (c.row[i] >= 0).then_some(c.row[i] as u32),
            row_hit: c.row_hit[i] != 0,
            sectors: c.sectors[i],
            issue_ns: c.issue_ns[i],
            l1_done_ns: c.l1_done_ns[i],
            l2_arrive_ns: c.l2_arrive_ns[i],
            l2_done_ns: c.l2_done_ns[i],
            dram_done_ns: c.dram_done_ns[i],
            retire_ns: c.retire_ns[i],
        }
    }

    /// Number of bank spans.
    pub fn bank_spans(&self) -> usize {
        self.banks.controller.len()
    }

    /// Append a bank span.
    pub fn push_bank_span(&mut self, s: &BankSpan) {
        let b = &mut self.banks;
        b.controller.push(s.controller);
        b.bank.push(s.bank);
        b.state.push(s.state as u8);
        b.start_ns.push(s.start_ns);
        b.end_ns.push(s.end_ns);
    }

    /// Bank span `i` as a row.
    pub fn bank_span(&self, i: usize) -> BankSpan {
        let b = &self.banks;
        BankSpan {
            controller: b.controller[i],
            bank: b.bank[i],
            state: BankState::from_u8(b.state[i]),
            start_ns: b.start_ns[i],
            end_ns: b.end_ns[i],
        }
    }

    /// Compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a timeline always serializes")
    }

    /// Parse JSON written by `to_json`.
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("not a memscope timeline: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rows_round_trip_through_columns_and_json() {
        let mut t = Timeline::new("t", Geometry { sms: 2, ..Geometry::default() });
        let r = Request {
            warp: 7,
            sm: 1,
            op: Op::LoadB,
            served: Served::Dram,
            l1_set: 3,
            slice: 35,
            l2_set: 1023,
            controller: 11,
            bank: Some(31),
            row: Some(65535),
            row_hit: true,
            sectors: 4,
            issue_ns: 1.5,
            l1_done_ns: 16.9,
            l2_arrive_ns: 60.0,
            l2_done_ns: 120.0,
            dram_done_ns: 250.0,
            retire_ns: 258.5,
        };
        t.push_request(&r);
        t.push_bank_span(&BankSpan { controller: 1, bank: 2, state: BankState::Refresh, start_ns: 1.0, end_ns: 211.0 });
        let back = Timeline::from_json(&t.to_json()).unwrap();
        assert_eq!(back.request(0), r);
        assert_eq!(back.bank_span(0).state, BankState::Refresh);
        assert_eq!(back, t);
    }
}
