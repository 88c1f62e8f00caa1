//! The vadd animation of seed 000's "Loading b" panel: a self-contained HTML page with a
//! canvas player (play, pause, step, speed, scrub) drawing the SMs with one pixel per L1 set, the
//! crossbar, the L2 slices with one pixel per set grouped by memory controller, each controller's
//! instantaneous throughput, the DRAM banks' activate / row open / precharge / refresh states and
//! the counters (in flight, retired, activates, refreshes, GB/s). The timeline is embedded as
//! columnar typed arrays in base64 and drawn incrementally, so a full wave of the 4090 (6,144
//! warps) stays smooth.

use std::fmt::Write;

/// Chip geometry the player lays out.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    /// Shown as the page title ("vadd on the simulated RTX 4090").
    pub title: String,
    pub sms: u32,
    pub l1_sets: u32,
    pub l2_slices: u32,
    pub l2_sets_per_slice: u32,
    pub controllers: u32,
    /// DRAM banks per controller (one chip per controller on GDDR6X).
    pub banks_per_controller: u32,
    pub dram_name: String,
    /// Where the timeline came from, shown under the title ("simulated by memscope-sim, preset
    /// rtx4090; not a measurement").
    pub note: String,
}

/// One memory request's path, times in ns from the start of the kernel. A request that hits in
/// L2 has no DRAM leg (`bank: None`, `dram_done_ns == l2_miss_ns`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    pub sm: u32,
    pub l1_set: u32,
    pub slice: u32,
    pub l2_set: u32,
    pub controller: u32,
    /// Bank within the controller.
    pub bank: Option<u32>,
    pub bytes: u32,
    /// Issued at the SM (L1 lookup starts).
    pub issue_ns: f64,
    /// Left the SM into the crossbar (L1 miss).
    pub l1_miss_ns: f64,
    /// Arrived at the L2 slice.
    pub l2_arrive_ns: f64,
    /// L2 lookup done; on a miss, handed to the controller.
    pub l2_miss_ns: f64,
    /// Data back at the slice from DRAM.
    pub dram_done_ns: f64,
    /// Data in the register: retired.
    pub retire_ns: f64,
}

/// DRAM bank state of a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BankState {
    Activate = 0,
    RowOpen = 1,
    Precharge = 2,
    Refresh = 3,
}

/// One interval of a bank in one state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BankSpan {
    pub controller: u32,
    pub bank: u32,
    pub state: BankState,
    pub start_ns: f64,
    pub end_ns: f64,
}

/// Everything the player needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Anim {
    pub geometry: Geometry,
    pub requests: Vec<Request>,
    pub banks: Vec<BankSpan>,
}

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

/// The data block the script reads: JSON with geometry, counts and base64 columns. Requests are
/// sorted by issue time, bank spans by start.
pub fn data_json(anim: &Anim) -> String {
    let g = &anim.geometry;
    let mut req = anim.requests.clone();
    req.sort_by(|a, b| a.issue_ns.total_cmp(&b.issue_ns));
    let mut banks = anim.banks.clone();
    banks.sort_by(|a, b| a.start_ns.total_cmp(&b.start_ns));
    let end_ns = req.iter().map(|r| r.retire_ns).chain(banks.iter().map(|b| b.end_ns)).fold(0.0, f64::max);
    let times = [
        ("t0", req.iter().map(|r| r.issue_ns).collect::<Vec<_>>()),
        ("t1", req.iter().map(|r| r.l1_miss_ns).collect()),
        ("t2", req.iter().map(|r| r.l2_arrive_ns).collect()),
        ("t3", req.iter().map(|r| r.l2_miss_ns).collect()),
        ("t4", req.iter().map(|r| r.dram_done_ns).collect()),
        ("t5", req.iter().map(|r| r.retire_ns).collect()),
    ];
    let mut s = String::new();
    let _ = write!(
        s,
        r#"{{"title":{},"sms":{},"l1Sets":{},"slices":{},"l2Sets":{},"mcs":{},"banksPerMc":{},"dram":{},"n":{},"nb":{},"endNs":{}"#,
        serde_json::Value::from(g.title.clone()),
        g.sms,
        g.l1_sets,
        g.l2_slices,
        g.l2_sets_per_slice,
        g.controllers,
        g.banks_per_controller,
        serde_json::Value::from(g.dram_name.clone()),
        req.len(),
        banks.len(),
        end_ns
    );
    for (k, v) in times {
        let _ = write!(s, r#","{k}":"{}""#, f32s(v.into_iter()));
    }
    let cols: [(&str, Vec<u32>); 7] = [
        ("sm", req.iter().map(|r| r.sm).collect()),
        ("l1", req.iter().map(|r| r.l1_set).collect()),
        ("sl", req.iter().map(|r| r.slice).collect()),
        ("l2", req.iter().map(|r| r.l2_set).collect()),
        ("mc", req.iter().map(|r| r.controller).collect()),
        ("bk", req.iter().map(|r| r.bank.unwrap_or(65535)).collect()),
        ("by", req.iter().map(|r| r.bytes).collect()),
    ];
    for (k, v) in cols {
        let _ = write!(s, r#","{k}":"{}""#, u16s(v.into_iter()));
    }
    let _ = write!(
        s,
        r#","bBank":"{}","bState":"{}","bT0":"{}","bT1":"{}"}}"#,
        u16s(banks.iter().map(|b| b.controller * g.banks_per_controller + b.bank)),
        u8s(banks.iter().map(|b| b.state as u8)),
        f32s(banks.iter().map(|b| b.start_ns)),
        f32s(banks.iter().map(|b| b.end_ns))
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
input[type=range]{flex:1;min-width:200px}
canvas{image-rendering:pixelated;image-rendering:crisp-edges;width:100%;background:#000;border:1px solid #333}
#counters{display:flex;gap:22px;font-variant-numeric:tabular-nums;margin:6px 0;font-size:14px}
#counters b{color:#fff}.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
"#;

/// The animation page for `anim`.
pub fn render_anim(anim: &Anim) -> Vec<u8> {
    let g = &anim.geometry;
    let title = crate::svg::esc(&g.title);
    let mut h = String::with_capacity(anim.requests.len() * 40 + 20_000);
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{PLAYER_CSS}</style></head><body><main>
<h1>{title}: loading b</h1>
<p class="sub">{} requests from {} SMs ({} L1 sets each, one pixel per set) through the crossbar to {} L2 slices ({} sets each, one pixel per set, grouped by {} memory controllers), the controllers' instantaneous throughput and {} with {} banks per controller. {}</p>
<div id="ctl"><button id="play">play</button><button id="step">step</button><button id="restart">restart</button>
<label>speed <select id="speed"><option value="0.1">0.1×</option><option value="0.25">0.25×</option><option value="0.5">0.5×</option><option value="1" selected>1×</option><option value="2">2×</option><option value="4">4×</option><option value="8">8×</option></select></label>
<input id="scrub" type="range" min="0" max="1000" value="0"><span id="clock">0 ns</span></div>
<canvas id="cv"></canvas>
<div id="counters">in flight <b id="c-flight">0</b> retired <b id="c-retired">0</b> activates <b id="c-act">0</b> refreshes <b id="c-ref">0</b> GB/s <b id="c-gbs">0</b></div>
<div class="legend">L1/L2 set: <span style="background:#ff9f1c"></span>miss lookup<span style="background:#2ec4b6"></span>data returning · DRAM bank: <span style="background:#e71d36"></span>activate<span style="background:#3a86ff"></span>row open<span style="background:#8338ec"></span>precharge<span style="background:#ffbe0b"></span>refresh</div>
</main><script id="tl" type="application/json">"#,
        anim.requests.len(),
        g.sms,
        g.l1_sets,
        g.l2_slices,
        g.l2_sets_per_slice,
        g.controllers,
        crate::svg::esc(&g.dram_name),
        g.banks_per_controller,
        crate::svg::esc(&g.note)
    );
    h.push_str(&data_json(anim).replace("</", "<\\/"));
    h.push_str("</script><script>");
    h.push_str(PLAYER_JS);
    h.push_str("</script></body></html>\n");
    h.into_bytes()
}

/// A small synthetic timeline (for tests and for trying the player without the simulator):
/// `warps` requests spread over the SMs, a fixed-latency path, one DRAM activate and row-open
/// span per miss and a refresh per controller. Not a simulation; the page says "simulated
/// timeline" only when fed by `memscope sim vadd`.
pub fn synthetic(warps: u32) -> Anim {
    let g = Geometry {
        title: format!("synthetic timeline ({warps} warps)"),
        sms: 128,
        l1_sets: 256,
        l2_slices: 36,
        l2_sets_per_slice: 1024,
        controllers: 12,
        banks_per_controller: 32,
        dram_name: "GDDR6X, 12 chips".into(),
        note: "Synthetic timeline with fixed made-up latencies: a test of the player, not a simulation.".into(),
    };
    let mut requests = vec![];
    let mut banks = vec![];
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for w in 0..warps {
        let issue = (w / g.sms) as f64 * 6.0 + (rnd() % 20) as f64;
        let slice = (rnd() % g.l2_slices as u64) as u32;
        let controller = slice / (g.l2_slices / g.controllers);
        let bank = (rnd() % g.banks_per_controller as u64) as u32;
        let dram = 150.0 + (rnd() % 200) as f64;
        let t2 = issue + 15.4 + 40.0;
        let t3 = t2 + 30.0;
        let t4 = t3 + dram;
        requests.push(Request {
            sm: w % g.sms,
            l1_set: (rnd() % g.l1_sets as u64) as u32,
            slice,
            l2_set: (rnd() % g.l2_sets_per_slice as u64) as u32,
            controller,
            bank: Some(bank),
            bytes: 128,
            issue_ns: issue,
            l1_miss_ns: issue + 15.4,
            l2_arrive_ns: t2,
            l2_miss_ns: t3,
            dram_done_ns: t4,
            retire_ns: t4 + 60.0,
        });
        banks.push(BankSpan { controller, bank, state: BankState::Activate, start_ns: t3, end_ns: t3 + 20.0 });
        banks.push(BankSpan { controller, bank, state: BankState::RowOpen, start_ns: t3 + 20.0, end_ns: t4 - 15.0 });
        banks.push(BankSpan { controller, bank, state: BankState::Precharge, start_ns: t4 - 15.0, end_ns: t4 });
    }
    for c in 0..g.controllers {
        let t = 100.0 + c as f64 * 37.0;
        banks.push(BankSpan { controller: c, bank: c % 32, state: BankState::Refresh, start_ns: t, end_ns: t + 210.0 });
    }
    Anim { geometry: g, requests, banks }
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
        let page = String::from_utf8(render_anim(&a)).unwrap();
        assert!(page.contains("\"n\":6144"));
        assert!(page.contains("id=\"cv\""));
        // 6 f32 + 7 u16 columns per request: 38 bytes, 4/3 in base64, plus bank spans.
        assert!(page.len() < 6144 * 60 + 3 * 6144 * 16 + 40_000, "page is {} bytes", page.len());
        assert!(!page.contains("http://") && !page.contains("https://"));
    }
}
