//! The vadd animation of seed 000's "Loading b" panel: a self-contained HTML page with a
//! canvas player (play, pause, step, speed, scrub) drawing the SMs with one pixel per L1 set, the
//! crossbar, the L2 slices with one pixel per set grouped by memory controller, each controller's
//! instantaneous throughput, the DRAM banks' activate / row open / precharge / refresh states and
//! the counters (in flight, retired, activates, refreshes, GB/s). The timeline is embedded as
//! columnar typed arrays in base64 and drawn incrementally, so a full wave of the 4090 (6,144
//! warps) stays smooth.

use memscope_core::timeline::{BankSpan, BankState, Geometry, Op, Request, Served, Timeline};
use std::fmt::Write;

/// Standard base64 (RFC 4648) of bytes.
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 { A[(n >> 6) as usize & 63] as char } else { '=' });
        out.push(if c.len() > 2 { A[n as usize & 63] as char } else { '=' });
    }
    out
}

fn f32s(v: impl Iterator<Item = f64>) -> String {
    base64(&v.flat_map(|x| (x as f32).to_le_bytes()).collect::<Vec<u8>>())
}

fn u16s(v: impl Iterator<Item = u32>) -> String {
    base64(&v.flat_map(|x| (x.min(65535) as u16).to_le_bytes()).collect::<Vec<u8>>())
}

fn u8s(v: impl Iterator<Item = u8>) -> String {
    base64(&v.collect::<Vec<u8>>())
}

/// The data block the script reads: JSON with geometry, counts and base64 columns, requests
/// sorted by issue time and bank spans by start (the player walks both forward).
pub fn data_json(t: &Timeline) -> String {
    let g = &t.geometry;
    let r = &t.requests;
    let b = &t.banks;
    let mut order: Vec<usize> = (0..t.len()).collect();
    order.sort_by(|&i, &j| r.issue_ns[i].total_cmp(&r.issue_ns[j]));
    let mut border: Vec<usize> = (0..t.bank_spans()).collect();
    border.sort_by(|&i, &j| b.start_ns[i].total_cmp(&b.start_ns[j]));
    let banks_per_mc = (g.channels_per_controller * g.banks_per_channel).max(1);
    let sector_bytes = (g.line_bytes / 4).max(1);
    let f = |col: &Vec<f32>| f32s(order.iter().map(|&i| col[i] as f64));
    let u = |col: &Vec<u16>| u16s(order.iter().map(|&i| col[i] as u32));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"{{"sms":{},"l1Sets":{},"slices":{},"l2Sets":{},"mcs":{},"banksPerMc":{},"n":{},"nb":{},"endNs":{}"#,
        g.sms.max(1),
        g.l1_sets.max(1),
        g.l2_slices.max(1),
        g.l2_sets_per_slice.max(1),
        g.controllers.max(1),
        banks_per_mc,
        t.len(),
        t.bank_spans(),
        t.end_ns
    );
    for (k, col) in [
        ("t0", &r.issue_ns),
        ("t1", &r.l1_done_ns),
        ("t2", &r.l2_arrive_ns),
        ("t3", &r.l2_done_ns),
        ("t4", &r.dram_done_ns),
        ("t5", &r.retire_ns),
    ] {
        let _ = write!(s, r#","{k}":"{}""#, f(col));
    }
    for (k, col) in [("sm", &r.sm), ("l1", &r.l1_set), ("sl", &r.slice), ("l2", &r.l2_set), ("mc", &r.controller)] {
        let _ = write!(s, r#","{k}":"{}""#, u(col));
    }
    let _ = write!(
        s,
        r#","bk":"{}","by":"{}","op":"{}","sv":"{}""#,
        u16s(order.iter().map(|&i| if r.bank[i] < 0 { 65535 } else { r.bank[i] as u32 })),
        u16s(order.iter().map(|&i| r.sectors[i] as u32 * sector_bytes)),
        u8s(order.iter().map(|&i| r.op[i])),
        u8s(order.iter().map(|&i| r.served[i]))
    );
    let _ = write!(
        s,
        r#","bBank":"{}","bState":"{}","bT0":"{}","bT1":"{}"}}"#,
        u16s(border.iter().map(|&i| b.controller[i] as u32 * banks_per_mc + b.bank[i] as u32)),
        u8s(border.iter().map(|&i| b.state[i])),
        f32s(border.iter().map(|&i| b.start_ns[i] as f64)),
        f32s(border.iter().map(|&i| b.end_ns[i] as f64))
    );
    s
}

const PLAYER_JS: &str = include_str!("animation.js");

const PLAYER_CSS: &str = r#"
body{margin:0;background:#101418;color:#e8e8e8;font:13px/1.4 system-ui,sans-serif}
main{max-width:1360px;margin:0 auto;padding:12px 18px}
h1{font-size:18px;margin:4px 0}.sub{color:#9aa;margin:0 0 8px;font-size:12px}
#ctl{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:6px 0}
button,select{background:#26303a;color:#eee;border:1px solid #445;border-radius:4px;padding:3px 10px;font:inherit;cursor:pointer}
input[type=range]{flex:1;min-width:160px;max-width:100%}
canvas{image-rendering:pixelated;image-rendering:crisp-edges;width:100%;background:#000;border:1px solid #333}
#counters{display:flex;flex-wrap:wrap;gap:8px 22px;font-variant-numeric:tabular-nums;margin:6px 0;font-size:14px}
#counters b{color:#fff}.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
"#;

/// The animation page for a replay's timeline (what `memscope sim vadd --html FILE` writes).
pub fn render(timeline: &Timeline) -> Vec<u8> {
    let note = "Simulated by memscope-sim (a model calibrated from the seeds or from measurements), not a measurement.";
    render_with_note(timeline, note)
}

/// The page, with `note` under the title saying where the timeline came from.
pub fn render_with_note(t: &Timeline, note: &str) -> Vec<u8> {
    let g = &t.geometry;
    let esc = crate::svg::esc;
    let title = esc(if t.title.is_empty() { "memscope replay" } else { &t.title });
    let c = &t.counters;
    let totals = if c.requests > 0 {
        format!(
            " Whole replay: {} warps, {} requests, {} activates, {} refreshes, {} in {}; the first {} warps are recorded here.",
            crate::units::grouped(c.warps as i64),
            crate::units::grouped(c.requests as i64),
            crate::units::grouped(c.activates as i64),
            crate::units::grouped(c.refreshes as i64),
            crate::units::bytes(c.bytes as f64),
            crate::units::number(c.time_ns, "ns"),
            crate::units::grouped(t.recorded_warps as i64)
        )
    } else {
        String::new()
    };
    let mut h = String::with_capacity(t.len() * 48 + 20_000);
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title><style>{PLAYER_CSS}</style></head><body><main>
<h1>{title}</h1>
<p class="sub">{} requests from {} SMs ({} L1 sets each, one pixel per set) through the crossbar to {} L2 slices ({} sets each, one pixel per set, grouped by {} memory controllers), the controllers' instantaneous throughput and the DRAM banks ({} channels × {} banks per controller). {}{}</p>
<div id="ctl"><button id="play">play</button><button id="step">step</button><button id="restart">restart</button>
<label>speed <select id="speed"><option value="0.1">0.1×</option><option value="0.25">0.25×</option><option value="0.5">0.5×</option><option value="1" selected>1×</option><option value="2">2×</option><option value="4">4×</option><option value="8">8×</option></select></label>
<label>requests <select id="ops"><option value="all">all</option><option value="0">load a</option><option value="1">load b</option><option value="2">store c</option></select></label>
<input id="scrub" type="range" min="0" max="1000" value="0"><span id="clock">0 ns</span></div>
<canvas id="cv"></canvas>
<div id="counters">in flight <b id="c-flight">0</b> retired <b id="c-retired">0</b> activates <b id="c-act">0</b> refreshes <b id="c-ref">0</b> GB/s <b id="c-gbs">0</b></div>
<div class="legend">L1/L2 set: <span style="background:#ff9f1c"></span>miss lookup<span style="background:#2ec4b6"></span>data returning / hit · DRAM bank: <span style="background:#e71d36"></span>activate<span style="background:#3a86ff"></span>row open<span style="background:#8338ec"></span>precharge<span style="background:#ffbe0b"></span>refresh</div>
</main><script id="tl" type="application/json">"#,
        crate::units::grouped(t.len() as i64),
        g.sms,
        g.l1_sets,
        g.l2_slices,
        g.l2_sets_per_slice,
        g.controllers,
        g.channels_per_controller,
        g.banks_per_channel,
        esc(note),
        esc(&totals)
    );
    h.push_str(&data_json(t).replace("</", "<\\/"));
    h.push_str("</script><script>");
    h.push_str(PLAYER_JS);
    h.push_str("</script></body></html>\n");
    h.into_bytes()
}

/// A synthetic timeline (for trying the player without the simulator): `warps` loads of b
/// spread over the SMs on a fixed made-up path, an activate / row-open / precharge per miss and
/// a refresh per controller. Not a simulation.
pub fn synthetic(warps: u32) -> Timeline {
    let g = Geometry {
        sms: 128,
        l1_sets: 256,
        l2_slices: 36,
        l2_sets_per_slice: 1024,
        controllers: 12,
        channels_per_controller: 2,
        banks_per_channel: 16,
        line_bytes: 128,
        clock_hz: 2.6e9,
    };
    let mut t = Timeline::new(&format!("synthetic timeline ({warps} warps, not a simulation)"), g.clone());
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let banks = g.channels_per_controller * g.banks_per_channel;
    let mut end = 0f32;
    for w in 0..warps {
        let issue = (w / g.sms) as f32 * 6.0 + (rnd() % 20) as f32;
        let slice = (rnd() % g.l2_slices as u64) as u16;
        let controller = slice / (g.l2_slices / g.controllers) as u16;
        let bank = (rnd() % banks as u64) as u16;
        let t2 = issue + 55.4;
        let t3 = t2 + 30.0;
        let t4 = t3 + 150.0 + (rnd() % 200) as f32;
        t.push_request(&Request {
            warp: w,
            sm: (w % g.sms) as u16,
            op: Op::LoadB,
            served: Served::Dram,
            l1_set: (rnd() % g.l1_sets as u64) as u16,
            slice,
            l2_set: (rnd() % g.l2_sets_per_slice as u64) as u16,
            controller,
            bank: Some(bank),
            row: Some(0),
            row_hit: false,
            sectors: 4,
            issue_ns: issue,
            l1_done_ns: issue + 15.4,
            l2_arrive_ns: t2,
            l2_done_ns: t3,
            dram_done_ns: t4,
            retire_ns: t4 + 60.0,
        });
        for (state, a, b) in [
            (BankState::Activate, t3, t3 + 20.0),
            (BankState::RowOpen, t3 + 20.0, t4 - 15.0),
            (BankState::Precharge, t4 - 15.0, t4),
        ] {
            t.push_bank_span(&BankSpan { controller, bank, state, start_ns: a, end_ns: b });
        }
        end = end.max(t4 + 60.0);
    }
    for c in 0..g.controllers as u16 {
        let s = 100.0 + c as f32 * 37.0;
        t.push_bank_span(&BankSpan {
            controller: c,
            bank: c % 32,
            state: BankState::Refresh,
            start_ns: s,
            end_ns: s + 210.0,
        });
    }
    t.recorded_warps = warps as u64;
    t.end_ns = end as f64;
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn page_embeds_columns_and_stays_compact() {
        let a = synthetic(6144);
        let page = String::from_utf8(render_with_note(&a, "synthetic")).unwrap();
        assert!(page.contains("\"n\":6144"));
        assert!(page.contains("id=\"cv\""));
        // 6 f32 + 7 u16 + 2 u8 columns per request: 40 bytes, 4/3 in base64, plus bank spans.
        assert!(page.len() < 6144 * 56 + 3 * 6144 * 16 + 40_000, "page is {} bytes", page.len());
        assert!(!page.contains("http://") && !page.contains("https://"));
    }
}
