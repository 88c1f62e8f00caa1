//! The discovered hierarchy as an SVG diagram for the HTML report: one lane per device family (the
//! GPU, the CPU), a box per level found in the findings (L1, TLB, L2, DRAM as in seed 000's path of
//! a load; CPU levels under "cpu."), each listing capacity, line, ways and sets, latency in ns and
//! cycles and whatever else the probes recorded for that level; and a lane for the SM's other
//! memories beside L1 (shared memory, the constant caches, the read-only and texture paths: issue
//! 25), drawn without arrows because they are not on the path of a load to L2.

use crate::svg::{esc, text_width, wrap};
use crate::table::quantity;
use crate::units;
use memscope_core::Finding;
use memscope_results::Results;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One level of the diagram.
#[derive(Debug, Clone)]
pub struct Level {
    /// Key prefix ("l1", "tlb.l1", "cpu.l2").
    pub prefix: String,
    /// Fields under the prefix: (field, finding).
    pub fields: Vec<(String, Finding)>,
}

impl Level {
    fn get(&self, field: &str) -> Option<&Finding> {
        self.fields.iter().find(|(k, _)| k == field).map(|(_, f)| f)
    }
    fn latency_ns(&self) -> Option<f64> {
        ["hit_latency_ns", "latency_ns", "load_latency_ns", "miss_ns"]
            .iter()
            .find_map(|k| self.get(k).and_then(Finding::as_f64))
    }
    fn rank(&self) -> f64 {
        let name = self.prefix.rsplit('.').next().unwrap_or("");
        let p = self.prefix.as_str();
        if let Some(i) = SM_MEMORIES.iter().position(|m| p == *m || p.starts_with(&format!("{m}."))) {
            // the SM-memories lane: in the order of SM_MEMORIES, levels of one memory by latency
            i as f64 + self.latency_ns().unwrap_or(0.0) / 1e4
        } else if p.contains("tlb") {
            1.5
        } else if name.starts_with("l1") {
            1.0
        } else if name.starts_with("l2") {
            2.0
        } else if name.starts_with("l3") {
            3.0
        } else if name.contains("dram") || name.contains("mem") {
            9.0
        } else {
            5.0 + self.latency_ns().unwrap_or(1e6).log10()
        }
    }
}

const LEVEL_FIELDS: &[&str] = &[
    "capacity_bytes",
    "capacity_per_sm_bytes",
    "hit_latency_ns",
    "latency_ns",
    "load_latency_ns",
    "entries",
    "miss_ns",
    "line_bytes",
    "row_bytes",
    "ways",
];

/// Key prefixes of the SM's memories beside L1, in the order their lane lists them.
const SM_MEMORIES: [&str; 3] = ["smem", "const", "tex"];

/// The lanes of the diagram, in drawing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    /// The path of a load: L1, TLB, L2, DRAM.
    Path,
    /// Shared memory, constant caches, read-only and texture paths (no arrows).
    SmMemories,
    Cpu,
}

/// The title of the SM-memories lane.
pub const SM_MEMORIES_LANE: &str = "GPU: beside L1 in each SM";

/// Levels grouped into lanes: ("GPU"/"CPU"/..., levels in path order).
pub fn levels(results: &Results) -> Vec<(String, Vec<Level>)> {
    let mut by_prefix: BTreeMap<String, Vec<(String, Finding)>> = BTreeMap::new();
    for (k, f) in &results.findings {
        if let Some((prefix, field)) = k.rsplit_once('.') {
            by_prefix.entry(prefix.to_string()).or_default().push((field.to_string(), f.clone()));
        }
    }
    let mut lanes: BTreeMap<Lane, Vec<Level>> = BTreeMap::new();
    for (prefix, fields) in by_prefix {
        if !fields.iter().any(|(f, _)| LEVEL_FIELDS.contains(&f.as_str())) {
            continue;
        }
        let top = prefix.split('.').next().unwrap_or("");
        // (tex.l1_ca is L1 again, timed by the texture probe's instrument: the L1 box has it)
        let lane = if top == "cpu" {
            Lane::Cpu
        } else if SM_MEMORIES.contains(&top) && prefix != "tex.l1_ca" {
            Lane::SmMemories
        } else if ["l1", "l2", "l3", "tlb", "dram", "llc", "mem"].contains(&top) {
            Lane::Path
        } else {
            continue;
        };
        lanes.entry(lane).or_default().push(Level { prefix, fields });
    }
    let gpu_name = if results.target.capabilities.host_cores { "Target" } else { "GPU" };
    lanes
        .into_iter()
        .map(|(lane, mut v)| {
            v.sort_by(|a, b| a.rank().total_cmp(&b.rank()).then(a.prefix.cmp(&b.prefix)));
            let title = match lane {
                Lane::Path => gpu_name.to_string(),
                Lane::SmMemories => SM_MEMORIES_LANE.to_string(),
                Lane::Cpu => "CPU".to_string(),
            };
            (title, v)
        })
        .collect()
}

fn box_lines(l: &Level, clock_hz: Option<f64>) -> Vec<String> {
    let mut lines = vec![];
    let show = |f: &Finding| units::value(&f.value, &f.unit);
    if let Some(c) = l.get("capacity_bytes") {
        lines.push(format!("capacity {}", show(c)));
    }
    if let Some(c) = l.get("entries") {
        if c.value.is_null() {
            lines.push("entries undetermined".into());
        } else {
            lines.push(format!("{} entries", units::value(&c.value, "")));
        }
    }
    let line = l.get("line_bytes").map(show);
    let sector = l.get("sector_bytes").map(show);
    match (line, sector) {
        (Some(a), Some(b)) => lines.push(format!("line {a}, sector {b}")),
        (Some(a), None) => lines.push(format!("line {a}")),
        _ => {}
    }
    let ways = l.get("ways").map(|f| units::value(&f.value, ""));
    let sets = l.get("sets").map(|f| units::value(&f.value, ""));
    match (ways, sets) {
        (Some(w), Some(s)) => lines.push(format!("{w} ways × {s} sets")),
        (Some(w), None) if w == "undetermined" => lines.push("ways undetermined".into()),
        (Some(w), None) => lines.push(format!("{w} ways")),
        (None, Some(s)) => lines.push(format!("{s} sets")),
        _ => {}
    }
    if let Some(c) = l.get("capacity_per_sm_bytes") {
        lines.push(format!("{} per SM", show(c)));
    }
    if let (Some(b), Some(w)) = (l.get("banks"), l.get("bank_width_bytes")) {
        lines.push(format!("{} banks × {}", units::value(&b.value, ""), show(w)));
    }
    for key in ["hit_latency_ns", "latency_ns", "load_latency_ns", "miss_ns", "far_hit_latency_ns"] {
        if let Some(f) = l.get(key) {
            let cyc = f.cycles.or_else(|| f.as_f64().zip(clock_hz).map(|(ns, hz)| ns * 1e-9 * hz));
            let label = match key {
                "miss_ns" => "miss +",
                "far_hit_latency_ns" => "far hit",
                _ => "latency",
            };
            let c = cyc.map(|c| format!(" ({} cyc)", units::sig(c, 3))).unwrap_or_default();
            if f.value.is_null() {
                lines.push(format!("{} undetermined", label.trim_end_matches(" +")));
            } else {
                lines.push(format!("{label} {}{c}", show(f)));
            }
        }
    }
    let used = [
        "capacity_bytes",
        "capacity_per_sm_bytes",
        "banks",
        "bank_width_bytes",
        "load_latency_ns",
        "entries",
        "line_bytes",
        "sector_bytes",
        "ways",
        "sets",
        "hit_latency_ns",
        "latency_ns",
        "miss_ns",
        "far_hit_latency_ns",
    ];
    for (k, f) in &l.fields {
        // Probe bookkeeping (eviction-set chases, hops) is not a property of the level.
        if used.contains(&k.as_str()) || crate::table::is_bookkeeping(&format!("x.{k}")) {
            continue;
        }
        match &f.value {
            // Which storage a memory shares (mt4g's "sharedWith"): the names, or none.
            serde_json::Value::Array(a) if k == "shared_with" => {
                let names: Vec<&str> = a.iter().filter_map(|v| v.as_str()).collect();
                lines.push(format!("shared with {}", if names.is_empty() { "none".into() } else { names.join(", ") }))
            }
            // A list (the XOR index masks) by its length; the masks are in the findings table.
            serde_json::Value::Array(a) => lines.push(format!("{} {}", a.len(), quantity(k))),
            _ => lines.push(format!("{} {}", quantity(k), show(f))),
        }
    }
    lines.truncate(8);
    // Undetermined values read "ways undetermined", not "undetermined ways"; long lines wrap at
    // spaces (the box widens to its widest line).
    lines
        .into_iter()
        .map(|l| match l.strip_prefix("undetermined ") {
            Some(rest) => format!("{rest} undetermined"),
            None => l,
        })
        .flat_map(|l| wrap(&l, MAX_LINE_PX, LINE_PX))
        .collect()
}

/// Font size of a box's lines (the report's CSS `svg.diagram .bl`).
const LINE_PX: f64 = 11.5;
/// Width of a box's bold title per character, as `svg::text_width` counts it (13 px bold).
const TITLE_PX: f64 = 13.0 * 1.08;
/// Widest a line of a box grows before it wraps.
const MAX_LINE_PX: f64 = 300.0;
/// Room left and right of the widest text inside a box.
const BOX_PAD_PX: f64 = 16.0;

/// The width of a box holding `title` (bold) and `lines`, at least `min`.
fn box_width(title: &str, lines: &[String], min: f64) -> f64 {
    lines
        .iter()
        .map(|l| text_width(l, LINE_PX))
        .chain([text_width(title, TITLE_PX)])
        .fold(min, |a, b| a.max(b + BOX_PAD_PX))
}

/// The diagram as an inline `<svg id="hierarchy">`.
pub fn render(results: &Results) -> String {
    let lanes = levels(results);
    let gap = 34.0;
    let lh = 15.0;
    let mut lane_svgs = vec![];
    let mut width: f64 = 400.0;
    let mut y = 10.0;
    for (lane, lv) in &lanes {
        let clock = if lane == "CPU" { None } else { results.target.clock_hz };
        // A level named like the lane itself ("cpu.line_bytes") describes the whole device: its
        // lines go into the source box.
        let (root, lv): (Vec<&Level>, Vec<&Level>) =
            lv.iter().partition(|l| !l.prefix.contains('.') && l.prefix == "cpu");
        let src_lines: Vec<String> = root.iter().flat_map(|l| box_lines(l, clock)).collect();
        let boxes: Vec<(String, Vec<String>)> =
            lv.iter().map(|l| (l.prefix.to_uppercase(), box_lines(l, clock))).collect();
        let max_lines = boxes.iter().map(|b| b.1.len()).chain([src_lines.len() + 1]).max().unwrap_or(1).max(2) as f64;
        let bh = 30.0 + max_lines * lh;
        let mut s = String::new();
        let src_w = box_width("", &src_lines, 90.0);
        let src_x = 10.0 + src_w / 2.0;
        // the source of loads
        let units_n = if lane == "CPU" {
            results.targets.iter().find(|t| t.capabilities.host_cores).map(|t| t.units).unwrap_or(0)
        } else {
            results.target.units
        };
        let src = if lane == "CPU" { "core" } else { "SM" };
        let _ = write!(
            s,
            r#"<g class="lane"><text x="10" y="{:.1}" class="lane-t">{}</text><rect x="10" y="{:.1}" width="{src_w:.1}" height="{bh:.1}" rx="6" class="src"/><text x="{src_x:.1}" y="{:.1}" class="bt">{src}</text><text x="{src_x:.1}" y="{:.1}" class="bl">{} {src}s</text>"#,
            y + 12.0,
            esc(lane),
            y + 20.0,
            y + 44.0,
            y + 62.0,
            if units_n > 0 { units_n.to_string() } else { "?".into() }
        );
        for (j, line) in src_lines.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text x="{src_x:.1}" y="{:.1}" class="bl">{}</text>"#,
                y + 77.0 + j as f64 * lh,
                esc(line)
            );
        }
        let mut x = 10.0 + src_w + gap;
        for (i, (title, lines)) in boxes.iter().enumerate() {
            let bw = box_width(title, lines, 196.0);
            let class = if title.contains("TLB") {
                "lvl tlb"
            } else if title.contains("DRAM") {
                "lvl dram"
            } else {
                "lvl"
            };
            if lane != SM_MEMORIES_LANE {
                let _ = write!(
                    s,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" class="arrow" marker-end="url(#arr)"/>"#,
                    x - gap + 2.0,
                    y + 20.0 + bh / 2.0,
                    x - 4.0,
                    y + 20.0 + bh / 2.0
                );
            }
            let _ = write!(
                s,
                r#"<g class="{class}" data-level="{}"><rect x="{x:.1}" y="{:.1}" width="{bw}" height="{bh:.1}" rx="6"/><text x="{:.1}" y="{:.1}" class="bt">{}</text>"#,
                esc(&lv[i].prefix),
                y + 20.0,
                x + bw / 2.0,
                y + 40.0,
                esc(title)
            );
            for (j, line) in lines.iter().enumerate() {
                let _ = write!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" class="bl">{}</text>"#,
                    x + bw / 2.0,
                    y + 60.0 + j as f64 * lh,
                    esc(line)
                );
            }
            s.push_str("</g>");
            x += bw + gap;
        }
        s.push_str("</g>");
        width = width.max(x);
        lane_svgs.push(s);
        y += bh + 40.0;
    }
    if lanes.is_empty() {
        lane_svgs
            .push(r#"<text x="10" y="30" class="bl-left">No cache level was found in the findings.</text>"#.into());
        y = 50.0;
    }
    format!(
        r##"<svg id="hierarchy" class="diagram" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0} {y:.0}" width="{width:.0}" height="{y:.0}" role="img" aria-label="discovered memory hierarchy"><defs><marker id="arr" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>{}</svg>"##,
        lane_svgs.join("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_levels_in_path_order() {
        let r = memscope_results::sample::results();
        let lanes = levels(&r);
        let gpu: Vec<&str> = lanes[0].1.iter().map(|l| l.prefix.as_str()).collect();
        assert_eq!(gpu, ["l1", "tlb.l1", "l2", "dram"]);
        assert_eq!(lanes[1].0, "CPU");
        let svg = render(&r);
        assert!(svg.contains("4 ways × 256 sets"), "{svg}");
        assert!(svg.contains("latency 15.4 ns (38.8 cyc)"), "{svg}");
    }

    /// Every text of every box (the source box and each level's) lies inside its box: its width
    /// as `svg::text_width` counts it (which leans high), centred on its x, and its baseline.
    #[test]
    fn no_text_overflows_its_box() {
        use memscope_core::Confidence;
        let mut r = memscope_results::sample::results();
        let long =
            "a long finding text that would run past a box of fixed width unless the box grows or the text wraps";
        for (k, f) in [
            ("l2.partition_mode_of_the_far_side", Finding::text(long, "test", Confidence::High)),
            ("l2.replacement_policy_description", Finding::text("tree-PLRU-like", "test", Confidence::Low)),
            ("cpu.line_bytes", Finding::integer(64, "bytes", "test", Confidence::High)),
            ("cpu.prefetcher_description", Finding::text(long, "test", Confidence::Low)),
        ] {
            r.findings.insert(k.into(), f);
        }
        let svg = render(&r);
        let attr = |t: &str, name: &str| -> f64 {
            let k = format!("{name}=\"");
            let at = t.find(&k).unwrap_or_else(|| panic!("{name} in {t}")) + k.len();
            t[at..at + t[at..].find('"').unwrap()].parse().unwrap()
        };
        let mut checked = 0;
        for chunk in svg.split("<rect ").skip(1).map(|c| format!(" {c}")) {
            let (x0, w, y0, h) =
                (attr(&chunk, " x"), attr(&chunk, " width"), attr(&chunk, " y"), attr(&chunk, " height"));
            let end = ["<line", "<g ", "</g>"].iter().filter_map(|e| chunk.find(e)).min().unwrap_or(chunk.len());
            for t in chunk[..end].split("<text ").skip(1).map(|t| format!(" {t}")) {
                let text = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
                let px = if t.contains("class=\"bt\"") { TITLE_PX } else { LINE_PX };
                let (cx, base, tw) = (attr(&t, " x"), attr(&t, " y"), text_width(text, px));
                let inside = cx - tw / 2.0 >= x0 && cx + tw / 2.0 <= x0 + w && base - px >= y0 && base + 3.0 <= y0 + h;
                assert!(inside, "\"{text}\" ({tw:.0} px wide at {cx}, {base}) overflows its box {:?}", (x0, w, y0, h));
                assert!(!text.contains('…'), "\"{text}\" is cut");
                checked += 1;
            }
        }
        assert!(checked > 20, "{checked} texts checked\n{svg}");
        assert!(svg.contains(">partition mode of the far side a long<"), "the long line wraps whole: {svg}");
    }

    #[test]
    fn sm_memories_get_a_lane_of_their_own_without_arrows() {
        use memscope_core::Confidence;
        let mut r = memscope_results::sample::results();
        let n = |v: f64, unit: &str| Finding::number(v, unit, "test", Confidence::High);
        let i = |v: u64, unit: &str| Finding::integer(v, unit, "test", Confidence::High);
        for (k, f) in [
            ("smem.load_latency_ns", n(11.6, "ns")),
            ("smem.capacity_per_sm_bytes", i(233472, "bytes")),
            ("smem.banks", i(32, "banks")),
            ("smem.bank_width_bytes", i(4, "bytes")),
            ("const.l1.hit_latency_ns", n(14.3, "ns")),
            ("const.l1.capacity_bytes", i(2048, "bytes")),
            ("const.l1_5.hit_latency_ns", n(51.7, "ns")),
            ("tex.texture.hit_latency_ns", n(44.7, "ns")),
            ("tex.l1_ca.hit_latency_ns", n(16.2, "ns")),
        ] {
            r.findings.insert(k.into(), f);
        }
        let lanes = levels(&r);
        let titles: Vec<&str> = lanes.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(titles, ["GPU", SM_MEMORIES_LANE, "CPU"]);
        // the path of a load is unchanged; the SM's memories in their order, the L1 seen again
        // through the texture probe left to the L1 box
        let path: Vec<&str> = lanes[0].1.iter().map(|l| l.prefix.as_str()).collect();
        assert_eq!(path, ["l1", "tlb.l1", "l2", "dram"]);
        let side: Vec<&str> = lanes[1].1.iter().map(|l| l.prefix.as_str()).collect();
        assert_eq!(side, ["smem", "const.l1", "const.l1_5", "tex.texture"]);
        let svg = render(&r);
        assert!(svg.contains("228 KiB per SM") || svg.contains("228.0 KiB per SM"), "{svg}");
        assert!(svg.contains("32 banks × 4 B"), "{svg}");
        // arrows: the GPU path (4 boxes) and the CPU lane, none in the SM-memories lane
        let lane_svgs: Vec<&str> = svg.split(r#"<g class="lane">"#).skip(1).collect();
        assert_eq!(lane_svgs.len(), 3);
        assert_eq!(lane_svgs[0].matches("class=\"arrow\"").count(), 4);
        assert_eq!(lane_svgs[1].matches("class=\"arrow\"").count(), 0);
        assert!(lane_svgs[1].contains("SMEM") && lane_svgs[1].contains("CONST.L1_5"));
    }
}
