//! Hand-built SVG plots for the HTML report: line/point series on linear or log axes with unit
//! tick labels, vertical marks (knees), horizontal reference lines (detected levels), bar
//! histograms and free polylines (roofline ceilings). Self-contained markup, no scripts, so the
//! report needs nothing from a network.

use crate::units;
use std::fmt::Write;

/// Colours for successive series (colour-blind-friendly Okabe-Ito order).
pub const PALETTE: &[&str] = &["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"];

/// Colours after the first eight, so a plot of up to 16 series never draws two in one colour
/// (Paul Tol's muted scheme, distinct from the palette above).
const MORE_COLOURS: &[&str] = &["#882255", "#44AA99", "#999933", "#AA4499", "#332288", "#117733", "#88CCEE", "#DDCC77"];

/// The colour of the `i`-th series of a plot: 16 distinct colours, then the cycle repeats.
pub fn series_colour(i: usize) -> &'static str {
    let n = PALETTE.len() + MORE_COLOURS.len();
    let i = i % n;
    if i < PALETTE.len() {
        PALETTE[i]
    } else {
        MORE_COLOURS[i - PALETTE.len()]
    }
}

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Polyline with point markers.
    LinePoints,
    /// Markers only.
    Points,
    /// Bars from the x axis (histograms).
    Bars,
    /// A dashed reference line without markers (ceilings).
    Dashed,
}

/// One data set on a plot.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub color: String,
    pub style: Style,
    pub points: Vec<(f64, f64)>,
    /// Per-point hover text (same length as `points`, or empty).
    pub labels: Vec<String>,
}

/// An axis: label, unit (for tick formatting) and scale.
#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub unit: String,
    pub log: bool,
}

/// A plot.
#[derive(Debug, Clone)]
pub struct Plot {
    pub id: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    /// Vertical marks: (x, label).
    pub vmarks: Vec<(f64, String)>,
    /// Horizontal reference lines: (y, label).
    pub hmarks: Vec<(f64, String)>,
    pub width: f64,
    pub height: f64,
}

impl Plot {
    pub fn new(id: &str, title: &str, x: Axis, y: Axis) -> Self {
        Plot {
            id: id.into(),
            title: title.into(),
            x,
            y,
            lines: vec![],
            vmarks: vec![],
            hmarks: vec![],
            width: 592.0,
            height: 360.0,
        }
    }
}

/// Approximate width in pixels of `text` at `font_px` (sans-serif averages about 0.56 em a
/// character; digits and capitals are wider, so this leans high). Used to keep labels apart.
pub fn text_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * 0.6
}

/// Break `text` into lines of at most `max_px` at `font_px`, at spaces (a word longer than a line
/// stays whole).
pub fn wrap(text: &str, max_px: f64, font_px: f64) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    let mut cur = String::new();
    for word in text.split(' ') {
        let candidate = if cur.is_empty() { word.to_string() } else { format!("{cur} {word}") };
        if !cur.is_empty() && text_width(&candidate, font_px) > max_px {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        } else {
            cur = candidate;
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Boxes of labels already placed on a plot, and the mark lines drawn across it, so a new label
/// can move until it overlaps no label, is crossed by no mark line and stays inside the frame.
#[derive(Default)]
struct Placer {
    boxes: Vec<(f64, f64, f64, f64)>,
    /// x of each vertical mark line.
    vlines: Vec<f64>,
    /// y of each horizontal mark line.
    hlines: Vec<f64>,
    /// The plot frame (x0, y0, x1, y1) a label stays inside.
    frame: (f64, f64, f64, f64),
}

impl Placer {
    fn free(&self, b: (f64, f64, f64, f64)) -> bool {
        let f = self.frame;
        b.0 >= f.0
            && b.2 <= f.2
            && b.1 >= f.1
            && b.3 <= f.3
            && self.boxes.iter().all(|o| b.2 <= o.0 || b.0 >= o.2 || b.3 <= o.1 || b.1 >= o.3)
            && self.vlines.iter().all(|&x| x <= b.0 || x >= b.2)
            && self.hlines.iter().all(|&y| y <= b.1 || y >= b.3)
    }
    /// The box of a text of `width` with its baseline at (x, y), anchored at its start or end.
    fn text_box(x: f64, y: f64, width: f64, end_anchor: bool, font_px: f64) -> (f64, f64, f64, f64) {
        let x0 = if end_anchor { x - width } else { x };
        (x0 - 1.0, y - font_px, x0 + width + 1.0, y + 3.0)
    }
    /// The first candidate (x, y, end_anchor) whose box is free, taken; else the first one.
    fn place(&mut self, candidates: &[(f64, f64, bool)], width: f64, font_px: f64) -> (f64, f64, bool) {
        let pick = candidates
            .iter()
            .copied()
            .find(|&(x, y, e)| self.free(Self::text_box(x, y, width, e, font_px)))
            .unwrap_or(candidates[0]);
        self.boxes.push(Self::text_box(pick.0, pick.1, width, pick.2, font_px));
        pick
    }
}

/// Escape text for XML/HTML (`hygiene::html`: markup, quotes, control characters).
pub fn esc(s: &str) -> String {
    crate::hygiene::html(s)
}

/// Most marks of each kind (level lines, knees) one plot draws.
pub const MAX_PLOT_MARKS: usize = 1000;
/// Most mark labels one plot places (each is checked against those placed before).
const MAX_MARK_LABELS: usize = 64;

/// Bound on a linear axis's ticks (6-8 in practice).
const MAX_LINEAR_TICKS: usize = 16;

struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    a: f64,
    b: f64,
}

impl Scale {
    fn new(lo: f64, hi: f64, log: bool, a: f64, b: f64) -> Self {
        Scale { lo, hi, log, a, b }
    }
    fn map(&self, v: f64) -> f64 {
        let (l, h, v) =
            if self.log { (self.lo.log10(), self.hi.log10(), v.max(1e-300).log10()) } else { (self.lo, self.hi, v) };
        let t = if h > l { (v - l) / (h - l) } else { 0.5 };
        self.a + t * (self.b - self.a)
    }
    fn ticks(&self, unit: &str) -> Vec<f64> {
        // (a range near f64::MAX gives an infinite end: keep the ends finite, so exponents stay
        // within about +-1100 and the tick count is bounded whatever the data)
        let (slo, shi) = (self.lo.clamp(-f64::MAX, f64::MAX), self.hi.clamp(-f64::MAX, f64::MAX));
        if self.log {
            let binary = matches!(unit, "bytes" | "B");
            let (slo, shi) = (slo.max(f64::MIN_POSITIVE), shi.max(f64::MIN_POSITIVE));
            let (base, lo, hi) = if binary {
                (2f64, slo.log2().ceil() as i32, shi.log2().floor() as i32)
            } else {
                (10f64, slo.log10().ceil() as i32, shi.log10().floor() as i32)
            };
            let n = (hi - lo + 1).max(1);
            let step = ((n + 7) / 8).max(1);
            let step = if binary && step > 1 && step % 2 == 1 { step + 1 } else { step };
            let start = if binary { lo + (lo.rem_euclid(step) != 0) as i32 * (step - lo.rem_euclid(step)) } else { lo };
            let mut t: Vec<f64> = (start..=hi).step_by(step as usize).map(|e| base.powi(e)).collect();
            if !binary && shi / slo < 1e4 {
                // Few decades: 1-2-5 ticks so the axis has more than one or two labels.
                let (a, b) = (slo.log10().floor() as i32, shi.log10().ceil() as i32);
                t = (a..=b)
                    .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
                    .filter(|v| *v >= self.lo && *v <= self.hi)
                    .collect();
            }
            if t.is_empty() {
                t = vec![self.lo, self.hi];
            }
            t
        } else {
            let span = shi - slo;
            if !(span > 0.0 && span.is_finite()) {
                return vec![slo];
            }
            let raw = span / 6.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
            let mut v = (slo / step).ceil() * step;
            let mut t = vec![];
            // (at most a dozen: a step below the spacing of floats near lo would never advance v)
            while v <= shi + step * 1e-9 && t.len() < MAX_LINEAR_TICKS {
                t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                let next = v + step;
                if next <= v {
                    break;
                }
                v = next;
            }
            if t.is_empty() {
                t.push(slo);
            }
            t
        }
    }
}

fn range(vals: impl Iterator<Item = f64>, log: bool, zero: bool) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in vals.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        if hi / lo < 1.01 {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo / 1.15, hi * 1.15)
        }
    } else {
        let lo = if zero && lo > 0.0 { 0.0 } else { lo };
        let pad = ((hi - lo) * 0.06).max(hi.abs() * 0.01).max(1e-12);
        (if zero && lo == 0.0 { 0.0 } else { lo - pad }, hi + pad)
    }
}

/// Render a plot as an inline `<svg>` element.
pub fn render(p: &Plot) -> String {
    let (w, h) = (p.width, p.height);
    // Legend rows: wrap names so none runs off the right edge.
    let named: Vec<&Line> = p.lines.iter().filter(|l| !l.name.is_empty()).collect();
    let show_legend = named.len() > 1 || named.iter().any(|l| l.style == Style::Dashed);
    let mut legend = vec![];
    let (mut lx, mut row) = (78.0, 0usize);
    for l in &named {
        let wd = 24.0 + 6.5 * l.name.chars().count() as f64;
        if lx + wd > w - 8.0 && lx > 78.0 {
            lx = 78.0;
            row += 1;
        }
        legend.push((lx, row, *l));
        lx += wd;
    }
    let rows = if show_legend { row as f64 + 1.0 } else { 0.0 };
    // The title wraps instead of running past the edges (13 px bold).
    let title_lines = wrap(&p.title, w - 24.0, 13.0 * 1.08);
    let extra_title = (title_lines.len() as f64 - 1.0) * 16.0;
    let h = h + rows.max(1.0) * 16.0 - 16.0 + extra_title;
    let (ml, mr, mt, mb) = (78.0, 16.0, 30.0 + extra_title, 56.0 + rows * 16.0);
    let bars = p.lines.iter().any(|l| l.style == Style::Bars);
    let xs = p.lines.iter().flat_map(|l| l.points.iter().map(|q| q.0)).chain(p.vmarks.iter().map(|m| m.0));
    let ys = p.lines.iter().flat_map(|l| l.points.iter().map(|q| q.1)).chain(p.hmarks.iter().map(|m| m.0));
    let (x0, x1) = range(xs, p.x.log, false);
    let (y0, y1) = range(ys, p.y.log, bars || !p.y.log);
    let sx = Scale::new(x0, x1, p.x.log, ml, w - mr);
    let sy = Scale::new(y0, y1, p.y.log, h - mb, mt);
    // Widen the left margin so the longest y tick label clears the rotated axis label.
    let widest = sy.ticks(&p.y.unit).iter().map(|t| units::tick(*t, &p.y.unit).chars().count()).max().unwrap_or(4);
    let ml_needed = 30.0 + 6.2 * widest as f64;
    let (ml, sx, sy) = if ml_needed > ml {
        (ml_needed, Scale::new(x0, x1, p.x.log, ml_needed, w - mr), Scale::new(y0, y1, p.y.log, h - mb, mt))
    } else {
        (ml, sx, sy)
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="plot" id="{}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">"#,
        esc(&p.id),
        esc(&p.title)
    );
    for (i, line) in title_lines.iter().enumerate() {
        let _ = write!(s, r#"<text x="{}" y="{}" class="pt">{}</text>"#, w / 2.0, 18.0 + 16.0 * i as f64, esc(line));
    }
    // grid and ticks
    for t in sx.ticks(&p.x.unit) {
        let x = sx.map(t);
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" y1="{mt}" x2="{x:.1}" y2="{:.1}" class="grid"/><text x="{x:.1}" y="{:.1}" class="tx">{}</text>"#,
            h - mb,
            h - mb + 16.0,
            esc(&units::tick(t, &p.x.unit))
        );
    }
    for t in sy.ticks(&p.y.unit) {
        let y = sy.map(t);
        let _ = write!(
            s,
            r#"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" class="grid"/><text x="{:.1}" y="{:.1}" class="ty">{}</text>"#,
            w - mr,
            ml - 5.0,
            y + 4.0,
            esc(&units::tick(t, &p.y.unit))
        );
    }
    let _ =
        write!(s, r#"<rect x="{ml}" y="{mt}" width="{:.1}" height="{:.1}" class="frame"/>"#, w - ml - mr, h - mt - mb);
    let xl = if p.x.log { format!("{} (log scale)", p.x.label) } else { p.x.label.clone() };
    let _ =
        write!(s, r#"<text x="{:.1}" y="{:.1}" class="xl">{}</text>"#, (ml + w - mr) / 2.0, h - mb + 34.0, esc(&xl));
    let yl = if p.y.log { format!("{} (log scale)", p.y.label) } else { p.y.label.clone() };
    let _ = write!(
        s,
        r#"<text transform="translate(16,{:.1}) rotate(-90)" class="yl">{}</text>"#,
        (mt + h - mb) / 2.0,
        esc(&yl)
    );
    // marks: level lines first (their labels sit on their line, right or left end, above or
    // below), then knees (their labels move down the line until they overlap nothing placed).
    // (linear in marks: at most MAX_PLOT_MARKS of each kind drawn, and only the first
    // MAX_MARK_LABELS labelled, so the overlap search stays bounded; docs/CONTRACTS.md "Limits")
    const MARK_PX: f64 = 10.0;
    let mut placer = Placer {
        vlines: p.vmarks.iter().take(MAX_MARK_LABELS).map(|m| sx.map(m.0)).collect(),
        hlines: p.hmarks.iter().take(MAX_MARK_LABELS).map(|m| sy.map(m.0)).collect(),
        frame: (ml, mt, w - mr, h - mb),
        ..Placer::default()
    };
    let left_out = p.hmarks.len().saturating_sub(MAX_PLOT_MARKS) + p.vmarks.len().saturating_sub(MAX_PLOT_MARKS);
    if left_out > 0 {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="hl">{left_out} more marks not drawn</text>"#,
            ml + 4.0,
            h - 4.0
        );
    }
    for (v, label) in p.hmarks.iter().take(MAX_PLOT_MARKS) {
        let y = sy.map(*v);
        if placer.boxes.len() >= MAX_MARK_LABELS {
            let _ = write!(
                s,
                r#"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" class="hmark"><title>{}</title></line>"#,
                w - mr,
                esc(label)
            );
            continue;
        }
        let wd = text_width(label, MARK_PX);
        let (r, l) = (w - mr - 4.0, ml + 4.0);
        // at either end, above or below the line; else beside a knee line, so none crosses it
        let mut cands = vec![(r, y - 4.0, true), (r, y + 12.0, true), (l, y - 4.0, false), (l, y + 12.0, false)];
        for &vx in &placer.vlines {
            for ty in [y - 4.0, y + 12.0] {
                cands.extend([(vx - 3.0, ty, true), (vx + 3.0, ty, false)]);
            }
        }
        let (x, ty, end) = placer.place(&cands, wd, MARK_PX);
        let _ = write!(
            s,
            r#"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" class="hmark"/><text x="{x:.1}" y="{ty:.1}" class="hl" text-anchor="{}">{}</text>"#,
            w - mr,
            if end { "end" } else { "start" },
            esc(label)
        );
    }
    for (v, label) in p.vmarks.iter().take(MAX_PLOT_MARKS) {
        let x = sx.map(*v);
        if placer.boxes.len() >= MAX_MARK_LABELS {
            let _ = write!(
                s,
                r#"<line x1="{x:.1}" y1="{mt}" x2="{x:.1}" y2="{:.1}" class="vmark"><title>{}</title></line>"#,
                h - mb,
                esc(label)
            );
            continue;
        }
        let wd = text_width(label, MARK_PX);
        // right of the line, or left of it where the right would pass the frame; down the line
        // until free, then on the other side; where knees stand too close for a label between
        // them, beside the nearest other knee line that leaves room
        let right = x + 3.0 + wd <= w - mr;
        let mut sides = vec![(x, right), (x, !right)];
        let mut others: Vec<f64> = placer.vlines.iter().copied().filter(|vx| *vx != x).collect();
        others.sort_by(|a, b| (a - x).abs().total_cmp(&(b - x).abs()));
        for vx in others {
            sides.extend([(vx, vx > x), (vx, vx < x)]);
        }
        let mut cands = vec![];
        for (vx, side_right) in sides {
            let lx = if side_right { vx + 3.0 } else { vx - 3.0 };
            let mut y = mt + 12.0;
            while y < h - mb - 2.0 {
                cands.push((lx, y, !side_right));
                y += 12.0;
            }
        }
        if cands.is_empty() {
            cands.push((if right { x + 3.0 } else { x - 3.0 }, mt + 12.0, !right));
        }
        let (tx, ty, end) = placer.place(&cands, wd, MARK_PX);
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" y1="{mt}" x2="{x:.1}" y2="{:.1}" class="vmark"><title>{}</title></line><text x="{tx:.1}" y="{ty:.1}" class="ml" text-anchor="{}">{}</text>"#,
            h - mb,
            esc(label),
            if end { "end" } else { "start" },
            esc(label)
        );
    }
    // data
    let nbar = p.lines.iter().filter(|l| l.style == Style::Bars).count().max(1) as f64;
    let mut bar_i = 0.0;
    for l in &p.lines {
        let pts: Vec<(f64, f64, usize)> = l
            .points
            .iter()
            .enumerate()
            .filter(|(_, q)| q.0.is_finite() && q.1.is_finite() && (!p.x.log || q.0 > 0.0) && (!p.y.log || q.1 > 0.0))
            .map(|(i, q)| (sx.map(q.0), sy.map(q.1), i))
            .collect();
        let tip = |i: usize| {
            l.labels.get(i).cloned().unwrap_or_else(|| {
                let q = l.points[i];
                format!("{}: {} → {}", l.name, units::tick(q.0, &p.x.unit), units::tick(q.1, &p.y.unit))
            })
        };
        match l.style {
            Style::Bars => {
                let n = pts.len().max(1) as f64;
                let bw = ((w - ml - mr) / n * 0.8 / nbar).max(1.0);
                let base = sy.map(if p.y.log { y0 } else { 0f64.max(y0) });
                for &(x, y, i) in &pts {
                    let _ = write!(
                        s,
                        r#"<rect x="{:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                        x - bw * nbar / 2.0 + bw * bar_i,
                        y.min(base),
                        (base - y).abs().max(0.5),
                        l.color,
                        esc(&tip(i))
                    );
                }
                bar_i += 1.0;
            }
            _ => {
                if matches!(l.style, Style::LinePoints | Style::Dashed) && pts.len() > 1 {
                    let d: Vec<String> = pts.iter().map(|(x, y, _)| format!("{x:.1},{y:.1}")).collect();
                    let dash = if l.style == Style::Dashed { r#" stroke-dasharray="6 4""# } else { "" };
                    let _ = write!(
                        s,
                        r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                        d.join(" "),
                        l.color
                    );
                }
                if l.style != Style::Dashed {
                    let r = if l.style == Style::Points { 4.0 } else { 2.5 };
                    for &(x, y, i) in &pts {
                        let _ = write!(
                            s,
                            r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{}"><title>{}</title></circle>"#,
                            l.color,
                            esc(&tip(i))
                        );
                    }
                }
            }
        }
    }
    // legend
    if show_legend {
        for (lx, row, l) in legend {
            let ly = h - mb + 50.0 + row as f64 * 16.0;
            let _ = write!(
                s,
                r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="4" fill="{}"/><text x="{:.1}" y="{ly:.1}" class="lg">{}</text>"#,
                ly - 5.0,
                l.color,
                lx + 16.0,
                esc(&l.name)
            );
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A latency-versus-footprint plot with one line through `points` (the tests' common plot).
    fn latency_plot(title: &str, points: Vec<(f64, f64)>) -> Plot {
        let mut p = Plot::new(
            "t",
            title,
            Axis { label: "footprint [bytes]".into(), unit: "bytes".into(), log: true },
            Axis { label: "latency [ns]".into(), unit: "ns".into(), log: false },
        );
        p.lines.push(Line {
            name: "a".into(),
            color: PALETTE[0].into(),
            style: Style::LinePoints,
            points,
            labels: vec![],
        });
        p
    }

    #[test]
    fn plot_has_axes_marks_and_points() {
        let mut p = latency_plot("latency", vec![(4096.0, 15.0), (1048576.0, 120.0), (1e9, 250.0)]);
        p.vmarks.push((131072.0, "knee 128K".into()));
        let svg = render(&p);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("class=\"vmark\""));
        assert!(svg.contains(">1M<"), "log byte ticks expected: {svg}");
        assert!(svg.contains("(log scale)"));
    }

    /// Values near f64::MAX (and a range that overflows to infinity) give a few
    /// ticks on log and linear axes, binary and decimal, instead of billions.
    #[test]
    fn extreme_values_give_bounded_ticks() {
        for (xlog, ylog, unit) in [(true, true, "bytes"), (true, true, "ns"), (false, false, "ns"), (true, false, "B")]
        {
            for pts in [
                vec![(1.0, 1.0), (f64::MAX, f64::MAX)],
                vec![(f64::MIN_POSITIVE, 5e-324), (f64::MAX / 2.0, 1e308)],
                vec![(1e300, 1e300), (1e300 * (1.0 + 1e-15), 1e300 * (1.0 + 1e-15))],
                vec![(-f64::MAX, -f64::MAX), (f64::MAX, f64::MAX)],
            ] {
                let mut p = Plot::new(
                    "x",
                    "extreme",
                    Axis { label: "x".into(), unit: unit.into(), log: xlog },
                    Axis { label: "y".into(), unit: "ns".into(), log: ylog },
                );
                p.lines.push(Line {
                    name: "a".into(),
                    color: PALETTE[0].into(),
                    style: Style::LinePoints,
                    points: pts.clone(),
                    labels: vec![],
                });
                p.vmarks.push((f64::MAX, "far".into()));
                let svg = render(&p);
                assert!(svg.ends_with("</svg>"));
                assert!(svg.len() < 64 * 1024, "{} bytes for {pts:?}", svg.len());
            }
        }
    }

    /// The label boxes (x0, x1, y) of the marks, as placed.
    fn mark_labels(svg: &str) -> Vec<(f64, f64, f64)> {
        svg.split("<text ")
            .filter(|t| t.contains("class=\"ml\"") || t.contains("class=\"hl\""))
            .map(|t| {
                let attr = |name: &str| -> f64 {
                    let k = format!("{name}=\"");
                    let at = t.find(&k).unwrap() + k.len();
                    t[at..at + t[at..].find('"').unwrap()].parse().unwrap()
                };
                let text = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
                let w = text_width(text, 10.0);
                let (x, y) = (attr("x"), attr("y"));
                if t.contains("text-anchor=\"end\"") {
                    (x - w, x, y)
                } else {
                    (x, x + w, y)
                }
            })
            .collect()
    }

    #[test]
    fn mark_labels_do_not_overlap_and_long_titles_wrap() {
        let mut p = latency_plot("cpu.latency: CPU pointer-chase latency versus footprint (fastest of all repeats; y_spread = MAD of all repeats)", vec![(4096.0, 25.0), (33554432.0, 256.0), (67108864.0, 349.0)]);
        // The H200 case: a knee near the right edge under the DRAM level line, and knees close together.
        p.vmarks = vec![(28215680.0, "knee 26.91M".into()), (30000000.0, "knee 28.6M".into())];
        p.hmarks = vec![(349.0, "DRAM 349 ns".into()), (256.1, "L2 256.1 ns".into()), (250.0, "L2 250 ns".into())];
        let svg = render(&p);
        let boxes = mark_labels(&svg);
        assert_eq!(boxes.len(), 5);
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                let apart = a.1 <= b.0 || b.1 <= a.0 || (a.2 - b.2).abs() >= 11.0;
                assert!(apart, "labels overlap: {a:?} {b:?}\n{svg}");
            }
        }
        assert!(svg.matches("class=\"pt\"").count() >= 2, "a long title wraps onto two lines");
        assert!(svg.contains("(fastest of all repeats;") && !svg.contains('…'), "the title is whole");
    }

    /// The mark lines as drawn: (x1, y1, x2, y2) of each `vmark` and `hmark` line.
    fn mark_lines(svg: &str) -> Vec<(f64, f64, f64, f64)> {
        svg.split("<line ")
            .skip(1)
            .filter(|t| t.contains("class=\"vmark\"") || t.contains("class=\"hmark\""))
            .map(|t| {
                let attr = |name: &str| -> f64 {
                    let k = format!("{name}=\"");
                    let at = t.find(&k).unwrap() + k.len();
                    t[at..at + t[at..].find('"').unwrap()].parse().unwrap()
                };
                (attr("x1"), attr("y1"), attr("x2"), attr("y2"))
            })
            .collect()
    }

    /// No mark line (knee or level) passes through a mark label's box (baseline - 10 px to
    /// baseline + 3 px at 10 px text), whatever the knees' and levels' positions.
    #[test]
    fn no_mark_line_crosses_a_mark_label() {
        let cases: Vec<(Vec<f64>, Vec<f64>)> = vec![
            // the H200 case: knees under the level labels at the right end
            (vec![28215680.0, 30000000.0, 60000000.0], vec![349.0, 256.1, 250.0]),
            // knees at both ends and the middle, levels close together
            (vec![5000.0, 1048576.0, 2e6, 6e7], vec![30.0, 33.0, 120.0, 340.0]),
        ];
        for (knees, levels) in cases {
            let mut p = latency_plot("latency", vec![(4096.0, 25.0), (33554432.0, 256.0), (67108864.0, 349.0)]);
            p.vmarks = knees.iter().map(|k| (*k, format!("knee {}", units::tick(*k, "bytes")))).collect();
            p.hmarks = levels.iter().map(|v| (*v, format!("L2 {v} ns"))).collect();
            let svg = render(&p);
            let lines = mark_lines(&svg);
            assert_eq!(lines.len(), knees.len() + levels.len());
            for (x0, x1, base) in mark_labels(&svg) {
                let (y0, y1) = (base - 10.0, base + 3.0);
                for &(lx1, ly1, lx2, ly2) in &lines {
                    let crosses = if lx1 == lx2 {
                        lx1 > x0 && lx1 < x1 && ly1.min(ly2) < y1 && ly1.max(ly2) > y0
                    } else {
                        ly1 > y0 && ly1 < y1 && lx1.min(lx2) < x1 && lx1.max(lx2) > x0
                    };
                    assert!(!crosses, "line {:?} crosses label {:?}\n{svg}", (lx1, ly1, lx2, ly2), (x0, x1, base));
                }
            }
        }
    }

    #[test]
    fn sixteen_series_get_sixteen_colours() {
        let mut c: Vec<&str> = (0..16).map(series_colour).collect();
        c.sort();
        c.dedup();
        assert_eq!(c.len(), 16);
    }
}
