//! The fit of the slice within a partition on the slice map's labels (docs/L2_SLICES.md, "What
//! stays undetermined"; crates/cuda/src/probes/slices/slice_fit.rs): per run the kernel of the
//! labels over offset differences, the table over an XOR hash with its held-out accuracy (split by
//! line and by whole page), the differences under which labels move together (symmetries), and
//! across runs the table of one run predicting the other; then the residue family
//! (crates/cuda/src/probes/slices/slice_mod.rs): the terms, each page's share, and the same
//! held-out splits; across runs of three pages or more, each page left out and predicted from the
//! other pages' shares over consecutive frames (slice_frames.rs).
//!
//!   l2_slice_fit [--partition-mask=HEX] MAP.json[.gz] [MAP.json[.gz] ...]
//!
//! MAP is map.json as the l2.slices.function probe keeps it (MEMSCOPE_SLICES_KEEP); the partition
//! mask (default 0xab000, the H200's from `l2.partition`) gives each line's partition bit for the
//! residue fit.
//!
//! Prints one JSON object. Exit 2 with a one-line message on bad input.

use flate2::read::GzDecoder;
use memscope_cuda::probes::l2_slice_fit::{self as sf, Point, OFFSET_BITS};
use memscope_cuda::probes::l2_slice_frames as sfr;
use memscope_cuda::probes::l2_slice_mod as sm;
use serde_json::{json, Value};
use std::io::Read;

/// What went wrong, naming the file.
#[derive(Debug, thiserror::Error)]
enum FitError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Json { path: String, source: serde_json::Error },
    #[error("{path}: {source}")]
    Shape { path: String, source: sf::MapDataError },
    #[error("usage: l2_slice_fit [--partition-mask=HEX] MAP.json[.gz] [MAP.json[.gz] ...]")]
    Usage,
    #[error("--partition-mask={0}: not a hex mask")]
    Mask(String),
}

/// A difference keeps the label when it does on 99 % of at least 8 pairs.
const MIN_PAIRS: usize = 8;
const MIN_SHARE: f64 = 0.99;
/// One line in five held out; probe lines per page for its shift.
const EVERY: u64 = 5;
const PROBES: usize = 200;
/// The residue fit: one line in two held out; probe lines per page within a run.
const RESIDUE_EVERY: u64 = 2;
const RESIDUE_PROBES: usize = 64;
const DEFAULT_PARTITION_MASK: u64 = 0xab000;

fn read(path: &str) -> Result<Value, FitError> {
    let raw = std::fs::read(path).map_err(|source| FitError::Io { path: path.into(), source })?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        GzDecoder::new(&raw[..]).read_to_end(&mut out).map_err(|source| FitError::Io { path: path.into(), source })?;
        out
    } else {
        raw
    };
    serde_json::from_slice(&text).map_err(|source| FitError::Json { path: path.into(), source })
}

fn points(path: &str) -> Result<Vec<Point>, FitError> {
    sf::points_from_map(&read(path)?).map_err(|source| FitError::Shape { path: path.into(), source })
}

fn hex(v: &[u64]) -> Vec<String> {
    v.iter().map(|x| format!("{x:#x}")).collect()
}

fn held(h: &sf::HeldOut) -> Value {
    json!({"right": h.right, "total": h.total, "unpredicted": h.unpredicted, "accuracy": h.accuracy()})
}

/// The residue family on one run: the model fitted on every line, the held-out splits.
fn residue(pts: &[Point], mask: u64) -> (Value, Option<sm::ResidueModel>) {
    let model = match sm::fit_residue(pts, mask, MIN_PAIRS) {
        Ok(m) => m,
        Err(e) => return (json!({"undetermined": e.to_string()}), None),
    };
    let terms: Vec<Value> =
        model.terms.iter().map(|t| json!({"exponent": t.exponent, "mask": format!("{:#x}", t.mask)})).collect();
    let pages: std::collections::BTreeMap<String, Value> = model
        .pages
        .iter()
        .map(|(p, s)| {
            (
                p.to_string(),
                json!({"flips": format!("{:#x}", s.flips), "constant": s.constant, "partition": s.partition}),
            )
        })
        .collect();
    let explained = pts.iter().filter(|p| model.predict(p.page, p.offset) == Some(p.label)).count();
    let mut by_label: std::collections::HashMap<usize, Vec<(u8, u64)>> = Default::default();
    for (&k, &l) in &model.names {
        by_label.entry(l).or_default().push(k);
    }
    let same_residue = by_label.values().filter(|v| v.len() == 2 && v[0].1 == v[1].1).count();
    let by_line = sm::residue_held_out_by_line(pts, mask, RESIDUE_EVERY, MIN_PAIRS)
        .map(|(_, h)| held(&h))
        .unwrap_or_else(|e| json!({"undetermined": e.to_string()}));
    let by_page = if model.pages.len() < 2 {
        json!({"undetermined": "one page"})
    } else {
        sm::residue_held_out_by_page(pts, mask, RESIDUE_PROBES, MIN_PAIRS)
            .map(|h| held(&h))
            .unwrap_or_else(|e| json!({"undetermined": e.to_string()}))
    };
    let v = json!({
        "modulus": model.modulus,
        "partition_mask": format!("{mask:#x}"),
        "generator": format!("{:#x}", model.generator),
        "generator_pairs": model.generator_pairs,
        "terms": terms,
        "pages": pages,
        "lines_explained": explained,
        "labels_on_one_residue_in_both_partitions": same_residue,
        "held_out_by_line": by_line,
        "held_out_by_page": by_page,
    });
    (v, Some(model))
}

fn run(args: &[String]) -> Result<Value, FitError> {
    let mut mask = DEFAULT_PARTITION_MASK;
    let mut files = Vec::new();
    for a in args {
        match a.strip_prefix("--partition-mask=") {
            Some(m) => mask = memscope_core::gf2::parse_mask(m).ok_or_else(|| FitError::Mask(m.to_string()))?,
            None => files.push(a.clone()),
        }
    }
    let args = &files[..];
    if args.is_empty() {
        return Err(FitError::Usage);
    }
    let runs: Vec<Vec<Point>> = args.iter().map(|p| points(p)).collect::<Result<_, _>>()?;
    let mut per_run = Vec::new();
    let mut kernels = Vec::new();
    let mut residues = Vec::new();
    for (path, pts) in args.iter().zip(&runs) {
        let agr = sf::agreements(pts, OFFSET_BITS);
        let k = sf::fit_kernel(&agr, MIN_PAIRS, MIN_SHARE);
        let single: Vec<Value> = agr
            .iter()
            .filter(|a| a.delta.is_power_of_two() && a.pairs > 0)
            .map(|a| json!({"bit": a.delta.trailing_zeros(), "pairs": a.pairs, "agree": a.agree}))
            .collect();
        let (tables, off) = sf::coset_tables(pts, &k.basis);
        let model = sf::fit_table(pts, &k.basis, OFFSET_BITS);
        let (_, by_line) = sf::held_out_by_line(pts, OFFSET_BITS, EVERY, MIN_PAIRS, MIN_SHARE);
        let by_page = sf::held_out_by_page(pts, OFFSET_BITS, PROBES, &k.basis);
        let labels: std::collections::BTreeSet<usize> = pts.iter().map(|p| p.label).collect();
        let (residue_json, residue_model) = residue(pts, mask);
        residues.push(residue_model);
        let sym: Vec<Value> = sf::symmetries(pts, OFFSET_BITS, MIN_PAIRS)
            .iter()
            .map(|s| json!({"delta": format!("{:#x}", s.delta), "pairs": s.pairs, "renames": s.renames}))
            .collect();
        per_run.push(json!({
            "file": path,
            "lines": pts.len(),
            "labels": labels.len(),
            "kernel": hex(&k.basis),
            "kernel_dim": k.basis.len(),
            "differences_tested": k.tested,
            "kernel_violations": k.violations,
            "symmetries": sym,
            "single_bits": single,
            "cosets_per_page": tables.iter().map(|(p, t)| (p.to_string(), t.len())).collect::<std::collections::BTreeMap<_, _>>(),
            "lines_off_their_coset": off,
            "table_entries": model.table.len(),
            "shifts": model.shift.iter().map(|(p, s)| (p.to_string(), format!("{s:#x}"))).collect::<std::collections::BTreeMap<_, _>>(),
            "held_out_by_line": held(&by_line),
            "held_out_by_page": held(&by_page),
            "residue": residue_json,
        }));
        kernels.push(k);
    }
    let mut across = Vec::new();
    for (i, a) in runs.iter().enumerate() {
        for (j, b) in runs.iter().enumerate() {
            if i != j {
                let h = sf::held_out_across(a, b, OFFSET_BITS, PROBES, &kernels[i].basis);
                let r = residues[i].as_ref().map(|m| {
                    let (h, shares) = sm::residue_held_out_across(m, b, PROBES);
                    let shares: Vec<Value> = shares
                        .iter()
                        .map(|(p, s)| json!({"page": p, "flips": format!("{:#x}", s.flips), "constant": s.constant, "partition": s.partition}))
                        .collect();
                    let pages = b.iter().map(|p| p.page).collect::<std::collections::BTreeSet<_>>().len();
                    // Runs of three pages or more: each page from the others' shares alone.
                    let frames = (pages >= 3).then(|| {
                        let bits = usize::BITS - (pages - 1).leading_zeros() + 1;
                        let (per_page, all) = sfr::held_out_frames(m, b, bits);
                        let per: Vec<Value> = per_page.iter().map(|(p, h)| json!({"page": p, "held_out": held(h)})).collect();
                        json!({"frame_bits": bits, "held_out": held(&all), "pages": per})
                    });
                    json!({"held_out": held(&h), "page_shares": shares, "pages_left_out": frames})
                });
                across.push(json!({"train": args[i], "test": args[j], "held_out": held(&h), "residue_held_out": r}));
            }
        }
    }
    Ok(json!({"runs": per_run, "across": across}))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => {
            eprintln!("l2_slice_fit: {e}");
            std::process::exit(2);
        }
    }
}
