//! `memscope sim`: the simulated hierarchy (memscope-sim). `dump` prints a preset as hierarchy
//! JSON (docs/CONTRACTS.md format; it round-trips through `--target sim:FILE.json`), `vadd` replays the
//! seeds' vector add and reports per-level counts, slice balance, DRAM activity, modeled time and
//! GB/s (`--timeline` writes the per-request timeline the animation plays), `chase` runs one
//! pointer chase, `calibrate` builds a hierarchy from a real GPU's results file.

use crate::error::{CliError, CliResult};
use crate::sizes::parse_size;
use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::hierarchy::Hierarchy;
use memscope_sim::SimTarget;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: SimCommand,
}

/// Which hierarchy, spelled as `run --target` spells it: sim:PRESET or sim:FILE.json. The older
/// `--preset NAME` and `--file FILE` still work.
#[derive(clap::Args, Debug, Clone)]
pub struct Which {
    /// The simulated hierarchy: sim:rtx4090, sim:l40s or sim:FILE.json (default sim:rtx4090).
    #[arg(long, short = 't', value_name = "sim:PRESET|sim:FILE.json")]
    pub target: Option<String>,
    /// A built-in preset by name (rtx4090, l40s); the same as --target sim:NAME.
    #[arg(long, conflicts_with = "target")]
    pub preset: Option<String>,
    /// A hierarchy JSON file; the same as --target sim:FILE.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["target", "preset"])]
    pub file: Option<PathBuf>,
}

#[derive(clap::Subcommand, Debug)]
pub enum SimCommand {
    /// Print a preset (or a file, validated) as hierarchy JSON.
    Dump(Which),
    /// Replay vadd (c[i] = a[i] + b[i]) and report what every level did.
    Vadd {
        #[command(flatten)]
        which: Which,
        /// Number of floats (e.g. 16777216, 16M = 16777216, 16e6).
        #[arg(long, default_value = "16777216", value_parser = crate::quantity::count)]
        n: u64,
        /// Write the per-request timeline (JSON, memscope_sim::timeline) to FILE.
        #[arg(long, value_name = "FILE")]
        timeline: Option<PathBuf>,
        /// Warps recorded in the timeline (default: one full wave, SMs x resident warps).
        #[arg(long, value_parser = crate::quantity::count)]
        record_warps: Option<u64>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Write the HTML animation of the recorded warps (memscope_report::animation) to FILE.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// One pointer chase on the simulator: mean ns per hop over a footprint.
    Chase {
        #[command(flatten)]
        which: Which,
        /// Bytes covered by the chased lines (e.g. 64KiB, 32MiB, 1GiB).
        #[arg(long, value_parser = parse_size)]
        footprint: u64,
        /// Bytes between chased addresses (default 128, one line).
        #[arg(long, default_value = "128", value_parser = parse_size)]
        stride: u64,
        /// Cache path: ca (ld.global.ca, through L1) or cg (ld.global.cg, bypassing L1).
        #[arg(long, default_value = "ca")]
        path: String,
        /// Timed hops (e.g. 20000, 20k, 1e6).
        #[arg(long, default_value = "20000", value_parser = crate::quantity::count)]
        hops: u64,
        /// Visit order: random (one shuffled cycle) or sequential.
        #[arg(long, default_value = "random")]
        order: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Build a hierarchy JSON from a real GPU's results (fields with no finding keep the base
    /// preset's value and are listed under "provenance").
    Calibrate {
        /// A results file (memscope/1) from `memscope run` on a GPU.
        results: PathBuf,
        /// Write the hierarchy to FILE instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Preset supplying every value that was not measured: rtx4090, l40s (or sim:rtx4090 ...).
        #[arg(long, default_value = "sim:rtx4090", value_name = "sim:PRESET")]
        base: String,
        /// Accept the results of a simulated target (refused otherwise: its values are the
        /// simulator's, not a GPU's); the hierarchy is then named as calibrated from a simulation.
        #[arg(long)]
        allow_simulated: bool,
        /// Another results file of the same GPU (repeatable), e.g. of `--probes
        /// l2.slices.function`: its findings fill those RESULTS lacks or left undetermined.
        #[arg(long = "with", value_name = "RESULTS")]
        with: Vec<PathBuf>,
    },
}

/// A preset by name; `flag` names the option in the message ("--preset", "--base"). A file name
/// given where a preset is expected gets a hint towards the spelling that takes files.
fn preset_as(name: &str, flag: &str) -> Result<Hierarchy, CliError> {
    let bare = name.strip_prefix("sim:").unwrap_or(name);
    if bare.ends_with(".json") || bare.contains('/') {
        return Err(CliError::usage(format!(
            "{flag} {name:?}: a preset name ({}), not a file; for a hierarchy file use --target sim:{bare}",
            memscope_sim::presets().join(", ")
        )));
    }
    memscope_sim::presets::preset(bare).ok_or_else(|| {
        CliError::usage(format!("{flag} {name:?}: no such preset (presets: {})", memscope_sim::presets().join(", ")))
    })
}

fn preset(name: &str) -> Result<Hierarchy, CliError> {
    preset_as(name, "--preset")
}

pub(crate) fn from_file(f: &Path, flag: &str) -> Result<Hierarchy, CliError> {
    let text = memscope_sim::target::read_limited(f)
        .map_err(|e| CliError::usage(format!("{flag} {}: cannot read: {e}", f.display())))?;
    Hierarchy::from_json_str(&text).map_err(|e| CliError::usage(format!("{}: {e}", f.display())))
}

fn hierarchy(w: &Which) -> Result<Hierarchy, CliError> {
    if let Some(f) = &w.file {
        return from_file(f, "--file");
    }
    if let Some(p) = &w.preset {
        return preset(p);
    }
    let Some(t) = &w.target else { return preset("rtx4090") };
    let specs = crate::targets::parse(t)?;
    match specs.as_slice() {
        [crate::targets::TargetSpec::SimPreset(p)] => preset_as(p, "--target"),
        [crate::targets::TargetSpec::SimFile(f)] => from_file(f, "--target"),
        _ => Err(CliError::usage(format!(
            "--target {t:?}: sim commands take one simulated hierarchy (sim:{} or sim:FILE.json)",
            memscope_sim::presets().join(", sim:")
        ))),
    }
}

fn target(w: &Which) -> Result<SimTarget, CliError> {
    SimTarget::new(hierarchy(w)?).map_err(|e| CliError::usage(e.to_string()))
}

/// Bounds on what the command line sizes (docs/GUIDE.md): each keeps one command's time and host
/// memory bounded, and the message names the limit.
pub const MAX_CHASE_HOPS: u64 = 1 << 27;
/// At most this many floats in `sim vadd --n` (4 GiB per array).
pub const MAX_VADD_N: u64 = 1 << 30;
/// At most this many warps recorded in a vadd timeline.
pub const MAX_RECORD_WARPS: u64 = 1 << 16;

/// A target error of a simulated command: a simulated out-of-memory is the input's fault (the
/// arrays or footprint asked for exceed the hierarchy's `dram.capacity_bytes`): exit 2 in every
/// command; anything else is a failure (exit 1).
fn sim_err(what: &str, e: memscope_core::TargetError) -> CliError {
    match e {
        memscope_core::TargetError::OutOfMemory { .. } => {
            CliError::usage(format!("{what}: simulated out of memory: {e} (see dram.capacity_bytes)"))
        }
        other => CliError::failure(format!("{what}: {other}")),
    }
}

fn write(path: &Path, bytes: &[u8], what: &str) -> CliResult {
    memscope_results::json::write_atomic(path, bytes)
        .map_err(|e| CliError::usage(format!("--{what} {}: cannot write: {e}", path.display())))
}

pub fn run(args: Args) -> CliResult {
    match args.command {
        SimCommand::Dump(w) => {
            print!("{}", String::from_utf8_lossy(&memscope_results::json::to_pretty(&hierarchy(&w)?)));
            Ok(())
        }
        SimCommand::Vadd { which, n, timeline, record_warps, json, html } => {
            if n == 0 {
                return Err(CliError::usage("--n 0: vadd needs at least one element"));
            }
            if n > MAX_VADD_N {
                return Err(CliError::usage(format!("--n {n}: at most {MAX_VADD_N} elements (2^30)")));
            }
            if let Some(r) = record_warps.filter(|&r| r > MAX_RECORD_WARPS) {
                return Err(CliError::usage(format!("--record-warps {r}: at most {MAX_RECORD_WARPS}")));
            }
            for (opt, p) in [("--timeline", &timeline), ("--html", &html)] {
                if let Some(p) = p {
                    crate::run_guard::check_output_file(opt, p)?;
                }
            }
            let mut t = target(&which)?;
            let wave = t.hierarchy().sm.count as u64 * t.hierarchy().sm.resident_warps as u64;
            let wave = wave.min(MAX_RECORD_WARPS);
            let record = if timeline.is_some() || html.is_some() { record_warps.unwrap_or(wave) } else { 0 };
            let (rep, tl) = memscope_sim::vadd::run_vadd(&mut t, n, record).map_err(|e| sim_err("vadd", e))?;
            if let (Some(path), Some(tl)) = (&timeline, &tl) {
                write(path, tl.to_json().as_bytes(), "timeline")?;
            }
            if let (Some(path), Some(tl)) = (&html, &tl) {
                write(path, &memscope_report::animation::render(tl), "html")?;
            }
            if json {
                print!("{}", String::from_utf8_lossy(&memscope_results::json::to_pretty(&rep)));
            } else {
                print_vadd(&rep, t.hierarchy());
            }
            Ok(())
        }
        SimCommand::Chase { which, footprint, stride, path, hops, order, json } => {
            let path = match path.as_str() {
                "ca" => CachePath::L1Cached,
                "cg" => CachePath::L1Bypass,
                other => return Err(CliError::usage(format!("--path {other:?}: accepted: ca, cg"))),
            };
            if stride < 8 || stride % 8 != 0 {
                return Err(CliError::usage(format!("--stride {stride}: must be a multiple of 8 bytes")));
            }
            let lines = footprint / stride;
            if lines == 0 || lines > 1 << 26 {
                return Err(CliError::usage(format!(
                    "--footprint {footprint} with --stride {stride} gives {lines} addresses (accepted: 1 to 2^26)"
                )));
            }
            if hops == 0 || hops > MAX_CHASE_HOPS {
                return Err(CliError::usage(format!("--hops {hops}: accepted 1 to {MAX_CHASE_HOPS} (2^27)")));
            }
            let mut t = target(&which)?;
            let buf = t.alloc(footprint.max(stride)).map_err(|e| sim_err("--footprint", e))?;
            let mut addrs: Vec<u64> = (0..lines).map(|i| buf.base + i * stride).collect();
            match order.as_str() {
                "random" => shuffle(&mut addrs, 1),
                "sequential" => {}
                other => return Err(CliError::usage(format!("--order {other:?}: accepted: random, sequential"))),
            }
            let mut spec = ChaseSpec::new(addrs, path, hops);
            spec.repeats = 3;
            t.machine().reset_stats();
            let r = t.chase(&spec).map_err(|e| sim_err("chase", e))?;
            let ns = memscope_core::stats::median(&r.ns_per_hop);
            let cycles = ns * t.hierarchy().clock_hz * 1e-9;
            let s = t.stats().clone();
            if json {
                let v = serde_json::json!({"footprint_bytes": footprint, "stride_bytes": stride, "ns_per_hop": r.ns_per_hop,
                    "median_ns_per_hop": ns, "cycles_per_hop": cycles, "warmup_hops": lines * spec.warmup_laps as u64,
                    "timed_hops": spec.hops * spec.repeats as u64, "stats": s,
                    "stats_note": "stats count every hop, the warm-up laps included"});
                print!("{}", String::from_utf8_lossy(&memscope_results::json::to_pretty(&v)));
            } else {
                println!(
                    "chase on {}: {lines} addresses, footprint {footprint} B, stride {stride} B: {ns:.2} ns/hop ({cycles:.0} cycles)",
                    memscope_report::hygiene::terminal(&t.hierarchy().name)
                );
                let warm = lines * spec.warmup_laps as u64;
                let timed = spec.hops * spec.repeats as u64;
                println!(
                    "  counts over all {} hops: {} warm-up hops ({} laps of {lines}) and {timed} timed ({} repeats of {})",
                    warm + timed,
                    warm,
                    spec.warmup_laps,
                    spec.repeats,
                    spec.hops
                );
                println!(
                    "  L1 hits {} of {} loads; L2 requests {} (hits {}); DRAM reads {}; TLB misses {} of {}",
                    s.l1_load_hits,
                    s.l1_load_requests,
                    s.l2_read_requests,
                    s.l2_read_hits,
                    s.dram_reads,
                    s.tlb_misses,
                    s.tlb_lookups
                );
            }
            Ok(())
        }
        SimCommand::Calibrate { results, out, base, allow_simulated, with } => {
            calibrate(&results, &with, out.as_deref(), &base, allow_simulated)
        }
    }
}

/// `sim calibrate`: the hierarchy JSON (to --out or stdout) and the table of every field's
/// source (to stdout with --out, else to stderr).
fn calibrate(results: &Path, with: &[PathBuf], out: Option<&Path>, base: &str, allow_simulated: bool) -> CliResult {
    use memscope_sim::calibrate::CalibrateError;
    let (res, simulated, taken_from) = crate::cmd_export::load_with_runs(results, with, allow_simulated)?;
    let name =
        format!("calibrated from {}{} ({})", if simulated { "SIMULATED " } else { "" }, res.target.name, res.target.id);
    let base_h = preset_as(base, "--base")?;
    let base = base.strip_prefix("sim:").unwrap_or(base);
    let c =
        memscope_sim::calibrate::calibrate(base_h, base, &res.target, &res.findings, &name).map_err(|e| match e {
            CalibrateError::NoGpuFindings(m) => CliError::usage(format!("{}: {m}", results.display())),
            e => CliError::usage(format!("{}: {e}", results.display())),
        })?;
    // (the table quotes the results file: terminal-escaped; the JSON has C1 and bidi escaped)
    let mut table = source_table(&c.rows);
    for line in &taken_from {
        table.push_str(&format!("{line}\n"));
    }
    let table = memscope_report::hygiene::terminal(&table);
    let text = memscope_results::json::to_pretty(&c.hierarchy);
    match out {
        Some(p) => {
            write(p, &text, "out")?;
            print!("{table}");
        }
        None => {
            print!("{}", String::from_utf8_lossy(&text));
            eprint!("{table}");
        }
    }
    Ok(())
}

/// One line per field: field, value, source kind, key or reason.
fn source_table(rows: &[memscope_sim::calibrate::Row]) -> String {
    let mut s = format!("{:<28} {:<24} {:<9} {}\n", "field", "value", "source", "key or reason");
    for r in rows {
        let v: String = if r.value.chars().count() > 24 {
            r.value.chars().take(23).chain(['…']).collect()
        } else {
            r.value.clone()
        };
        s.push_str(&format!("{:<28} {:<24} {:<9} {}\n", r.field, v, r.kind.as_str(), r.detail));
    }
    s
}

fn shuffle(v: &mut [u64], seed: u64) {
    let mut x = seed;
    for i in (1..v.len()).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        v.swap(i, ((x >> 33) % (i as u64 + 1)) as usize);
    }
}

fn print_vadd(r: &memscope_sim::vadd::VaddReport, h: &Hierarchy) {
    let s = &r.stats;
    println!(
        "vadd n={} on {} ({} SMs x {} resident warps; {} warps)",
        r.n,
        memscope_report::hygiene::terminal(&h.name),
        r.sms,
        r.resident_warps_per_sm,
        r.warps
    );
    println!(
        "  modeled time {:.1} us, {:.0} GB/s ({} bytes: read a, b; write c)",
        r.time_ns / 1e3,
        r.gb_per_s,
        r.bytes
    );
    println!(
        "  L1: {} load requests, {} hits; {} store requests (write-through)",
        s.l1_load_requests, s.l1_load_hits, s.l1_store_requests
    );
    println!("  TLB: {} lookups, {} misses", s.tlb_lookups, s.tlb_misses);
    println!(
        "  L2 reads: {} requests, {} sectors, {} hits; writes: {} requests, {} sectors, {} hits",
        s.l2_read_requests, s.l2_read_sectors, s.l2_read_hits, s.l2_write_requests, s.l2_write_sectors, s.l2_write_hits
    );
    println!(
        "  L2 write-backs {} (8-dirty cleans {}), dirty lines left {}",
        s.l2_writebacks, s.l2_dirty_cleans, r.dirty_lines_at_end
    );
    println!(
        "  slice balance: min {} / mean {:.0} / max {} requests per slice (max/mean {:.3})",
        r.slice_min, r.slice_mean, r.slice_max, r.slice_imbalance
    );
    println!(
        "  DRAM: {} reads ({} sectors), {} writes ({} sectors), {} activates, {} open-row hits, {} refresh stalls, {} refreshes",
        s.dram_reads, s.dram_read_sectors, s.dram_writes, s.dram_write_sectors, s.dram_activates, s.dram_row_hits, s.dram_refresh_stalls, r.refreshes
    );
}
