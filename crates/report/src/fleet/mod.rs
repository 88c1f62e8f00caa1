//! The fleet view of `memscope compare` over merged documents (the merge itself is
//! memscope_results::merge): targets grouped by model (the target's name), per finding the members
//! ranked, the median, each member's ratio to it and the outliers.

use crate::table;
use memscope_core::Finding;
use memscope_results::merge::{doc_targets, finding_of, label, FleetMember};
use memscope_results::Results;
use serde_json::Value;

/// Which way a finding's unit gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Times and latencies: higher is worse.
    HigherWorse,
    /// Rates (bytes/s, flops/s): lower is worse.
    LowerWorse,
    /// Sizes, counts and the rest: a difference either way is only a difference.
    Either,
}

/// The direction of a unit.
pub fn direction(unit: &str) -> Direction {
    match unit {
        "ns" | "s" | "cycles" => Direction::HigherWorse,
        "bytes/s" | "flops/s" => Direction::LowerWorse,
        _ => Direction::Either,
    }
}

/// The smallest difference of a time that counts: 0.01 ns (0.01 cycles), far below the timers
/// memscope reads (a GPU's clock64 ticks every 0.5 ns at 2 GHz); 0 for other units.
pub fn resolution(unit: &str) -> f64 {
    match unit {
        "ns" | "cycles" => 0.01,
        "s" => 1e-11,
        _ => 0.0,
    }
}

/// Why a member's value is flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// More than the tolerance from the median in the worse direction.
    Worse,
    /// Differs from the others (a unit without a worse direction, another value or undetermined).
    Differs,
}

/// One member's value of one finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Index into `Fleet::units`.
    pub unit: usize,
    pub text: String,
    pub value: Option<f64>,
    /// value / median.
    pub ratio: Option<f64>,
    /// 1 = best (lowest time, highest rate; lowest value where no direction), ties share a rank.
    pub rank: Option<usize>,
    pub flag: Option<Flag>,
}

/// One finding across the members of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub unit: String,
    pub direction: Direction,
    /// Median of the numeric values, when at least two members have one in the same unit.
    pub median: Option<f64>,
    pub cells: Vec<Cell>,
}

/// Targets of one model (the same target name) and their findings.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    /// Indices into `Fleet::units`.
    pub units: Vec<usize>,
    pub rows: Vec<Row>,
}

/// One target of one member.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub label: String,
    pub name: String,
    pub source: String,
}

/// The fleet view.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    pub units: Vec<Unit>,
    pub groups: Vec<Group>,
    /// Relative distance from the median beyond which a value is flagged (0.05 = 5 %).
    pub tolerance: f64,
}

impl Fleet {
    /// Every flagged cell: (group, row, cell).
    pub fn outliers(&self) -> Vec<(&Group, &Row, &Cell)> {
        let mut v = vec![];
        for g in &self.groups {
            for r in &g.rows {
                for c in r.cells.iter().filter(|c| c.flag.is_some()) {
                    v.push((g, r, c));
                }
            }
        }
        v
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The fleet view of `members`: targets grouped by name, groups and units in first-seen order.
/// Outliers are flagged only in groups of three or more (with two there is no majority).
pub fn analyse(members: &[FleetMember], tolerance: f64) -> Fleet {
    let mut units = vec![];
    let mut found: Vec<(&Results, String)> = vec![];
    let mut groups: Vec<Group> = vec![];
    for m in members {
        for t in doc_targets(&m.results) {
            let i = units.len();
            units.push(Unit { label: label(m, t), name: t.name.clone(), source: m.source.clone() });
            found.push((&m.results, t.id.clone()));
            match groups.iter_mut().find(|g| g.name == t.name) {
                Some(g) => g.units.push(i),
                None => groups.push(Group { name: t.name.clone(), units: vec![i], rows: vec![] }),
            }
        }
    }
    for g in &mut groups {
        let mut keys = std::collections::BTreeSet::new();
        for &u in &g.units {
            let (r, t) = &found[u];
            keys.extend(
                r.findings.iter().filter(|(_, f)| f.target.as_deref().unwrap_or(&r.target.id) == t).map(|(k, _)| k),
            );
        }
        for key in keys {
            let cells: Vec<(usize, &Finding)> =
                g.units.iter().filter_map(|&u| finding_of(found[u].0, &found[u].1, key).map(|f| (u, f))).collect();
            g.rows.push(row(key, &cells, tolerance));
        }
    }
    Fleet { units, groups, tolerance }
}

fn row(key: &str, found: &[(usize, &Finding)], tolerance: f64) -> Row {
    // The unit most members give; a numeric row takes the numbers in that unit.
    let unit = found.first().map(|(_, f)| f.unit.clone()).unwrap_or_default();
    let dir = direction(&unit);
    let nums: Vec<f64> = found.iter().filter(|(_, f)| f.unit == unit).filter_map(|(_, f)| f.as_f64()).collect();
    let flagging = found.len() >= 3 && !table::is_bookkeeping(key);
    let mut cells: Vec<Cell> = found
        .iter()
        .map(|(u, f)| Cell {
            unit: *u,
            text: table::value_text(f),
            value: f.as_f64().filter(|_| f.unit == unit),
            ratio: None,
            rank: None,
            flag: None,
        })
        .collect();
    let med = (nums.len() >= 2).then(|| median(&nums));
    if let Some(med) = med {
        let mut order: Vec<f64> = nums.clone();
        order.sort_by(|a, b| if dir == Direction::LowerWorse { b.total_cmp(a) } else { a.total_cmp(b) });
        for (c, (_, f)) in cells.iter_mut().zip(found) {
            let Some(v) = c.value else {
                if flagging {
                    c.flag = Some(Flag::Differs);
                }
                continue;
            };
            c.rank = order.iter().position(|o| *o == v).map(|p| p + 1);
            if med == 0.0 {
                continue;
            }
            let ratio = v / med;
            c.ratio = Some(ratio);
            // (a difference within three of the member's own MADs is noise, whatever its ratio;
            // so is a time difference below any timer's resolution: a near-zero median, such as
            // a simulator's per-hop overhead of 1e-4 ns, makes any ratio large)
            let noise = f.spread.as_ref().map(|s| 3.0 * s.mad).unwrap_or(0.0).max(resolution(&unit));
            if !flagging || (v - med).abs() <= noise {
                continue;
            }
            let dev = ratio - 1.0;
            c.flag = match dir {
                Direction::HigherWorse if dev > tolerance => Some(Flag::Worse),
                Direction::LowerWorse if dev < -tolerance => Some(Flag::Worse),
                Direction::Either if dev.abs() > tolerance => Some(Flag::Differs),
                _ => None,
            };
        }
    } else if flagging {
        // Text, lists, undetermined: the members that differ from a strict majority's value.
        let values: Vec<&Value> = found.iter().map(|(_, f)| &f.value).collect();
        let mode = values.iter().max_by_key(|v| values.iter().filter(|w| w == v).count());
        if let Some(mode) = mode {
            if values.iter().filter(|w| w == &mode).count() * 2 > values.len() {
                for (c, v) in cells.iter_mut().zip(&values) {
                    if v != mode {
                        c.flag = Some(Flag::Differs);
                    }
                }
            }
        }
    }
    Row { key: key.to_string(), unit, direction: dir, median: med, cells }
}

#[cfg(test)]
mod tests;
