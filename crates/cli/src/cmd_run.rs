//! `memscope run`: the main job, as wiring over the run loop of crates/session (docs/ARCHITECTURE.md): checks
//! the options, opens the targets, hands them to a `Session` (which runs every applicable probe
//! and re-writes the results files atomically after every probe), finishes the files, writes the
//! merged file and prints a summary table.

use crate::error::{CliError, CliResult};
use crate::targets::{self, TargetSpec};
use memscope_core::{Probe, Target};
use memscope_session::{Continuation, PlannedTarget, RunPlan, Session, SessionError};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Targets, comma-separated: cpu, cuda (every GPU), cuda:N, sim:PRESET (rtx4090, l40s),
    /// sim:FILE.json. Default: every CUDA GPU and the CPU; with no GPU, the CPU and sim:rtx4090.
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// Only these probes (comma-separated keys, see `memscope list`).
    #[arg(long, short = 'p', value_delimiter = ',')]
    pub probes: Vec<String>,
    /// Smaller sweeps and fewer repetitions: a first look in seconds. Without --probes it leaves
    /// out the probes that give no headline finding (recorded as waived, with the reason).
    #[arg(long)]
    pub quick: bool,
    /// Folder for results.json (created if missing; an earlier run's results there are
    /// replaced). Default: a new folder per run, memscope-out/<UTC time>/, with memscope-out/latest
    /// pointing at it (under Slurm or Open MPI: memscope-out/<host>-rank<N>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the results JSON to FILE ("-" prints it to stdout instead of the summary).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No progress bars.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Run the CPU's probes after the GPUs' on the main thread instead of beside them on their
    /// own core (to measure what running them concurrently costs; see docs/PERFORMANCE.md).
    #[arg(long)]
    pub cpu_sequential: bool,
    /// Internal: continue the results file FILE (used when a GPU fault forces the remaining probes
    /// into a fresh process).
    #[arg(long, hide = true)]
    pub continue_from: Option<PathBuf>,
}

/// Check that every asked probe key exists; add the probes they need (`Probe::needs`) unless
/// `continuing` (a continued run reads the earlier findings from its results file).
pub(crate) fn select_probes(
    all: Vec<Box<dyn Probe>>,
    asked: &[String],
    continuing: bool,
) -> Result<Vec<Box<dyn Probe>>, CliError> {
    memscope_session::select(all, asked, continuing).map_err(|e| CliError::usage(format!("--probes: {e}")))
}

/// The binary's exit-code classes for a session error.
pub(crate) fn session_error(e: SessionError) -> CliError {
    if e.is_usage() {
        CliError::usage(e.to_string())
    } else {
        CliError::failure(e.to_string())
    }
}

/// Make sure `dir` exists and is writable before anything runs (exit 2 otherwise).
fn check_out_dir(dir: &Path) -> CliResult {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::usage(format!("--out {}: cannot create folder: {e}", dir.display())))?;
    memscope_results::json::check_folder_writable(dir)
        .map_err(|e| CliError::usage(format!("--out {}: not writable: {e}", dir.display())))
}

/// The folder of a run without --out: memscope-out/<UTC time>/ (a suffix -2, -3... when two runs
/// start in the same second), and memscope-out/latest pointing at it; a scheduled job keeps
/// memscope-out/ itself (each rank gets its own folder in it, and ranks start at different times).
fn default_out() -> Result<PathBuf, CliError> {
    let root = PathBuf::from("memscope-out");
    if crate::scheduler::placement(|k| std::env::var(k).ok(), "").is_some() {
        return Ok(root);
    }
    std::fs::create_dir_all(&root)
        .map_err(|e| CliError::usage(format!("cannot create {}: {e} (or give --out DIR)", root.display())))?;
    let stamp: String = crate::provenance::now().chars().filter(|c| *c != ':').collect();
    for n in 1..1000 {
        let name = if n == 1 { stamp.clone() } else { format!("{stamp}-{n}") };
        let dir = root.join(&name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                let latest = root.join("latest");
                let replaceable =
                    std::fs::symlink_metadata(&latest).map(|m| m.file_type().is_symlink()).unwrap_or(true);
                if replaceable {
                    let _ = std::fs::remove_file(&latest);
                    let _ = std::os::unix::fs::symlink(&name, &latest);
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(CliError::usage(format!("cannot create {}: {e} (or give --out DIR)", dir.display()))),
        }
    }
    Err(CliError::usage(format!("{}: no free folder name for this run (give --out DIR)", root.display())))
}

pub fn run(args: Args) -> CliResult {
    let run_started = Instant::now();
    // (a run of every probe leaves out the probes run only on request, and a --quick one those
    // without a headline finding too, recorded as waived)
    let registry = if !args.probes.is_empty() {
        memscope_registry::all()
    } else if args.quick {
        memscope_registry::for_quick_run()
    } else {
        memscope_registry::for_default_run()
    };
    let probes = select_probes(registry, &args.probes, args.continue_from.is_some())?;
    let specs = match &args.target {
        Some(t) => targets::parse(t)?,
        None => {
            let (specs, fallback) = targets::default_targets();
            if let Some(why) = fallback {
                eprintln!("memscope: {}", targets::fallback_notice(&why));
            }
            specs
        }
    };
    if let Some(j) = &args.json {
        crate::run_guard::check_output_file("--json", j)?;
    }
    if let Some(dir) = &args.out {
        check_out_dir(dir)?;
    }

    // Open every target first so bad simulator files fail before any measurement (and before a
    // run's own folder is made).
    let mut opened: Vec<PlannedTarget> = Vec::new();
    for spec in &specs {
        let t = targets::open(spec);
        if let Err(CliError::Usage(_)) = &t {
            return Err(t.err().expect("error"));
        }
        // Clocks, temperature, power and throttle reasons around the whole run (never changed).
        let snapshot = match spec {
            TargetSpec::Cuda(n) => Some(nvml_snapshot(*n)),
            _ => None,
        };
        let mut target = t.map_err(|e| e.to_string());
        // A cold driver cache compiles the bottleneck model's kernels where the launch probe
        // first loads them (about 6 s on the H200): warm it in the background meanwhile.
        if let (TargetSpec::Cuda(_), Ok(t)) = (spec, &mut target) {
            if probes.iter().any(|p| p.key() == "launch") {
                if let Some(cuda) = memscope_core::target::concrete::<memscope_cuda::CudaTarget>(&mut **t) {
                    cuda.warm_kernels_in_background();
                }
            }
        }
        opened.push(PlannedTarget { id: spec.id(), cpu: *spec == TargetSpec::Cpu, target, snapshot });
    }
    let mut out = match &args.out {
        Some(dir) => {
            if args.continue_from.is_none() && dir.join("results.json").is_file() {
                eprintln!("memscope: --out {}: replacing the results of an earlier run there", dir.display());
            }
            dir.clone()
        }
        None => default_out()?,
    };
    // Under Slurm or Open MPI: DIR/<host>-rank<N> (crates/cli/src/scheduler.rs).
    let scheduler = crate::scheduler::place(&mut out, args.continue_from.is_some());
    check_out_dir(&out)?;
    if args.out.is_none() && !args.quiet {
        eprintln!("memscope: writing to {}", out.display());
    }
    // (held to the end: a second run on the same --out gets exit 2 naming this pid)
    let _lock = crate::run_guard::acquire(&out, args.continue_from.is_some())?;
    let session = Session::new(args.quick, Box::new(crate::progress::Bars { quiet: args.quiet }))
        .with_continuation(Continuation::FreshProcess { out: out.clone(), quiet: args.quiet })
        .with_fault_hook(Box::new(injected_fault));
    // From here on SIGINT/SIGTERM mark the files written as interrupted, with the probes not run.
    session.ledger().set_plan(memscope_session::plan(&opened, &probes));
    crate::run_guard::watch(session.ledger().clone());

    let mut env = crate::provenance::environment();
    if let Some(s) = scheduler {
        env.insert("scheduler".into(), s);
    }
    let tool = crate::provenance::tool();
    let one_gpu_at_a_time = memscope_registry::one_gpu_at_a_time();
    let plan = RunPlan {
        probes: &probes,
        tool: tool.clone(),
        environment: env,
        out: out.clone(),
        continue_from: args.continue_from.clone(),
        cpu_sequential: args.cpu_sequential,
        one_at_a_time: &one_gpu_at_a_time,
    };
    let outcome = session.run(opened, &plan).map_err(session_error)?;
    let (mut docs, failures) = (outcome.docs, outcome.failures);
    // Finished, and with several documents also all of them in one file (`memscope merge`'s format).
    let all = out.join("results-all.json");
    let merged = args.continue_from.is_none().then_some((all.as_path(), &tool));
    session.finish(&mut docs, &crate::provenance::now(), merged).map_err(session_error)?;
    // Outputs: --json, then the summary.
    if let Some(j) = &args.json {
        let bytes = docs.first().map(|(_, d)| memscope_results::json::to_bytes(d)).unwrap_or_default();
        if j.as_os_str() == "-" {
            use std::io::Write;
            let _ = std::io::stdout().write_all(&bytes);
        } else {
            session
                .ledger()
                .write_bytes(j, &bytes)
                .map_err(|e| CliError::usage(format!("--json {}: {e}", j.display())))?;
        }
    }
    if args.json.as_deref().map(|j| j.as_os_str() != "-").unwrap_or(true) {
        for (path, doc) in &docs {
            println!("{}", memscope_report::table::summary(doc));
            println!("results: {}", path.display());
        }
        if docs.len() > 1 {
            println!("all targets in one file: {}", out.join("results-all.json").display());
        }
        println!("total time: {:.1} s", run_started.elapsed().as_secs_f64());
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CliError::failure(format!("{} failure(s): {}", failures.len(), failures.join("; "))))
    }
}

/// The NVML snapshot (clocks, temperature, power, throttle reasons) taken around GPU `n`'s
/// probes, recorded as `environment["nvml_cuda:<n>_before"/"_after"]`.
pub(crate) fn nvml_snapshot(n: usize) -> (String, memscope_session::Snapshot) {
    ("nvml".to_string(), Box::new(move || memscope_cuda::nvml_snapshot(n)))
}

/// Test hook for the GPU fault path (scripts/gpu-test.sh): with `MEMSCOPE_FAULT_IN_PROBE=KEY`, the
/// CUDA target launches a faulting kernel where probe KEY would start, and that probe fails with
/// the device error, exactly as a probe whose own kernel faulted.
fn injected_fault(key: &str, target: &mut dyn Target) -> Option<memscope_core::ProbeError> {
    if std::env::var("MEMSCOPE_FAULT_IN_PROBE").ok()? != key {
        return None;
    }
    let cuda = memscope_core::target::concrete::<memscope_cuda::CudaTarget>(target)?;
    cuda.inject_fault().err().map(memscope_core::ProbeError::from)
}
