//! `memscope run`: the main job. Opens the targets, runs every applicable probe (plan -> measure
//! -> analyze), re-writes the results file atomically after every probe so an interrupted run
//! keeps what it measured, and prints a summary table.

use crate::error::{CliError, CliResult};
use crate::targets::{self, TargetSpec};
use memscope_core::{Applicability, Probe, ProbeContext, Target};
use memscope_report::{ProbeRecord, ProbeStatus, Results};
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
    /// Smaller sweeps and fewer repetitions: a first look in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Folder for results.json (created if missing).
    #[arg(long, default_value = "memscope-out")]
    pub out: PathBuf,
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

/// A target as opened: usable, or why not.
type OpenedTarget = Result<Box<dyn Target>, CliError>;

/// Check that every asked probe key exists; add the probes they need (`Probe::needs`) unless
/// `continuing` (a continued run reads the earlier findings from its results file).
pub(crate) fn select_probes(
    all: Vec<Box<dyn Probe>>,
    asked: &[String],
    continuing: bool,
) -> Result<Vec<Box<dyn Probe>>, CliError> {
    if asked.is_empty() {
        return Ok(all);
    }
    let keys: Vec<&str> = all.iter().map(|p| p.key()).collect();
    for a in asked {
        if !keys.contains(&a.as_str()) {
            return Err(CliError::usage(format!("--probes: no probe {a:?} (accepted: {})", keys.join(", "))));
        }
    }
    let wanted = if continuing { asked.to_vec() } else { crate::registry::with_needs(&all, asked) };
    Ok(all.into_iter().filter(|p| wanted.iter().any(|a| a == p.key())).collect())
}

/// Make sure `dir` exists and is writable before anything runs (exit 2 otherwise).
fn check_out_dir(dir: &Path) -> CliResult {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::usage(format!("--out {}: cannot create folder: {e}", dir.display())))?;
    let probe = dir.join(format!(".memscope-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| CliError::usage(format!("--out {}: not writable: {e}", dir.display())))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Where each target's results go: the first non-CPU target and the CPU share results.json;
/// further GPUs or simulated targets get results-<id>.json.
fn file_for(out: &Path, index_among_non_cpu: usize, id: &str) -> PathBuf {
    if index_among_non_cpu == 0 {
        out.join("results.json")
    } else {
        let slug: String = id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        out.join(format!("results-{slug}.json"))
    }
}

pub fn run(mut args: Args) -> CliResult {
    let run_started = Instant::now();
    // Under Slurm or Open MPI: DIR/<host>-rank<N> (crates/cli/src/scheduler.rs).
    let scheduler = crate::scheduler::place(&mut args.out, args.continue_from.is_some());
    let probes = select_probes(crate::registry::all(), &args.probes, args.continue_from.is_some())?;
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
    check_out_dir(&args.out)?;
    if let Some(j) = &args.json {
        crate::run_guard::check_output_file("--json", j)?;
    }
    // (held to the end: a second run on the same --out gets exit 2 naming this pid)
    let _lock = crate::run_guard::acquire(&args.out, args.continue_from.is_some())?;

    // Open every target first so bad simulator files fail before any measurement.
    let mut opened: Vec<(TargetSpec, OpenedTarget)> = Vec::new();
    for spec in &specs {
        let t = targets::open(spec);
        if let Err(CliError::Usage(_)) = &t {
            return Err(t.err().expect("error"));
        }
        opened.push((spec.clone(), t));
    }
    // From here on SIGINT/SIGTERM mark the files written as interrupted, with the probes not run.
    crate::run_guard::watch(plan(&opened, &probes));

    // The CPU lane: on its own core beside the GPU probes unless --cpu-sequential.
    let lane = crate::run_parallel::start(&mut opened, &args)?;

    // Documents: one per non-CPU target; the CPU joins the first (or stands alone).
    let mut docs: Vec<(PathBuf, Results)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut env = crate::provenance::environment();
    if let Some(s) = scheduler {
        env.insert("scheduler".into(), s);
    }
    let tool = crate::provenance::tool();
    let mut nth_non_cpu = 0usize;
    // Several GPUs (or simulated GPUs): one thread each (crates/cli/src/run_gpus.rs).
    let non_cpu = opened.iter().filter(|(s, _)| *s != TargetSpec::Cpu).count();
    let parallel = non_cpu >= 2 && args.continue_from.is_none();
    if parallel {
        let new_doc = |info: &memscope_core::TargetInfo| Results::new(tool.clone(), info.clone(), env.clone());
        let out = args.out.clone();
        let path_for = |k: usize, id: &str| file_for(&out, k, id);
        docs = crate::run_gpus::run_all(&mut opened, &probes, &args, &new_doc, &path_for, &mut failures)?;
    }

    for (spec, target) in opened.iter_mut() {
        let id = spec.id();
        let is_cpu = *spec == TargetSpec::Cpu;
        if parallel && !is_cpu {
            continue;
        }
        let path = match &args.continue_from {
            Some(p) => p.clone(),
            None => file_for(&args.out, if is_cpu { 0 } else { nth_non_cpu }, &id),
        };
        if !is_cpu {
            nth_non_cpu += 1;
        }
        let target = match target {
            Ok(t) => t,
            Err(e) => {
                failures.push(e.to_string());
                continue;
            }
        };
        let info = target.info();
        let pos = match docs.iter().position(|(p, _)| *p == path) {
            Some(p) => {
                let doc = &mut docs[p].1;
                if is_cpu {
                    doc.targets.push(info.clone());
                } else {
                    // A GPU or simulated GPU leads the document it shares with the CPU.
                    doc.target = info.clone();
                    doc.targets.insert(0, info.clone());
                }
                p
            }
            None => {
                let doc = match &args.continue_from {
                    Some(p) => {
                        let bytes = std::fs::read(p).map_err(|e| CliError::usage(format!("{}: {e}", p.display())))?;
                        Results::from_json(&bytes).map_err(|e| CliError::usage(format!("{}: {e}", p.display())))?
                    }
                    None => Results::new(tool.clone(), info.clone(), env.clone()),
                };
                docs.push((path.clone(), doc));
                docs.len() - 1
            }
        };
        let (path, doc) = &mut docs[pos];
        // written before the first probe, marked in progress
        write_doc(path, doc)?;
        if let TargetSpec::Cuda(n) = spec {
            // Clocks, temperature, power and throttle reasons around the whole run (never changed).
            doc.environment.insert(format!("nvml_{id}_before"), memscope_cuda::nvml_snapshot(*n));
        }
        run_target(&mut **target, &id, &probes, &args, doc, path, &mut failures)?;
        if let TargetSpec::Cuda(n) = spec {
            doc.environment.insert(format!("nvml_{id}_after"), memscope_cuda::nvml_snapshot(*n));
            write_doc(path, doc)?;
        }
    }

    match lane {
        Some(lane) => lane.finish(&mut docs, &file_for(&args.out, 0, "cpu"), &mut failures)?,
        None => crate::run_parallel::note_sequential(&mut docs, &args),
    }
    for (path, doc) in docs.iter_mut() {
        doc.environment.insert("finished_at".into(), serde_json::json!(crate::provenance::now()));
        crate::run_guard::write(path, doc, memscope_report::RunPhase::Finished)?;
    }
    // Several documents: also all of them in one file (the `memscope merge` format).
    if docs.len() > 1 && args.continue_from.is_none() {
        let inputs = docs.iter().map(|(p, d)| (p.display().to_string(), d.clone())).collect();
        let merged = memscope_report::fleet::merge(inputs, tool.clone(), &crate::provenance::now());
        let all = args.out.join("results-all.json");
        memscope_report::json::write_atomic(&all, &memscope_report::json::to_bytes(&merged))
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", all.display())))?;
    }
    // Outputs: --json, then the summary.
    if let Some(j) = &args.json {
        let bytes = docs.first().map(|(_, d)| memscope_report::json::to_bytes(d)).unwrap_or_default();
        if j.as_os_str() == "-" {
            use std::io::Write;
            let _ = std::io::stdout().write_all(&bytes);
        } else {
            memscope_report::json::write_atomic(j, &bytes)
                .map_err(|e| CliError::usage(format!("--json {}: {e}", j.display())))?;
        }
    }
    if args.json.as_deref().map(|j| j.as_os_str() != "-").unwrap_or(true) {
        for (path, doc) in &docs {
            println!("{}", memscope_report::table::summary(doc));
            println!("results: {}", path.display());
        }
        if docs.len() > 1 {
            println!("all targets in one file: {}", args.out.join("results-all.json").display());
        }
        println!("total time: {:.1} s", run_started.elapsed().as_secs_f64());
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CliError::failure(format!("{} failure(s): {}", failures.len(), failures.join("; "))))
    }
}

/// Write a results file of the running run (marked in progress; see run_guard).
fn write_doc(path: &Path, doc: &mut Results) -> CliResult {
    crate::run_guard::write(path, doc, memscope_report::RunPhase::InProgress)
}

/// The applicable probes of every opened target, as "KEY@TARGET", in run order.
fn plan(opened: &[(TargetSpec, OpenedTarget)], probes: &[Box<dyn Probe>]) -> Vec<String> {
    let mut keys = Vec::new();
    for (spec, t) in opened {
        if let Ok(t) = t {
            let info = t.info();
            for p in probes {
                if p.applicability(&info) == Applicability::Applicable {
                    keys.push(format!("{}@{}", p.key(), spec.id()));
                }
            }
        }
    }
    keys
}

/// Run every probe on one target, merging into `doc` and re-writing it after each probe.
pub(crate) fn run_target(
    target: &mut dyn Target,
    id: &str,
    probes: &[Box<dyn Probe>],
    args: &Args,
    doc: &mut Results,
    path: &Path,
    failures: &mut Vec<String>,
) -> CliResult {
    let info = target.info();
    for (index, probe) in probes.iter().enumerate() {
        let key = format!("{}@{id}", probe.key());
        if let Applicability::Waived(reason) = probe.applicability(&info) {
            // A probe waived on a target is only recorded when asked for explicitly or when it
            // is not a backend-specific probe of another backend.
            doc.probes.insert(
                key,
                ProbeRecord {
                    target: id.into(),
                    status: ProbeStatus::Waived,
                    reason: Some(reason),
                    duration_s: 0.0,
                    warnings: vec![],
                },
            );
            continue;
        }
        let bar = crate::progress::Bar::new(&format!("{id} {}", probe.key()), args.quiet);
        let started = Instant::now();
        let earlier = doc.findings.clone();
        let injected = injected_fault(probe.key(), &mut *target);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(e) = injected {
                return Err(e);
            }
            let mut ctx = ProbeContext { target: &mut *target, quick: args.quick, progress: &bar, earlier: &earlier };
            probe.run(&mut ctx)
        }));
        let duration_s = started.elapsed().as_secs_f64();
        match outcome {
            Ok(Ok(out)) => {
                bar.finish(&format!("{} findings", out.findings.len()));
                for (k, mut f) in out.findings {
                    f.target = Some(id.to_string());
                    doc.findings.insert(k, f);
                }
                for (k, s) in out.series {
                    doc.series.insert(k, s);
                }
                doc.probes.insert(
                    key,
                    ProbeRecord {
                        target: id.into(),
                        status: ProbeStatus::Ok,
                        reason: None,
                        duration_s,
                        warnings: out.warnings,
                    },
                );
            }
            Ok(Err(e)) => {
                bar.finish("failed");
                failures.push(format!("{key}: {e}"));
                doc.probes.insert(
                    key,
                    ProbeRecord {
                        target: id.into(),
                        status: ProbeStatus::Failed,
                        reason: Some(e.to_string()),
                        duration_s,
                        warnings: vec![],
                    },
                );
            }
            Err(panic) => {
                bar.finish("failed");
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                failures.push(format!("{key}: internal error: {msg}"));
                doc.probes.insert(
                    key,
                    ProbeRecord {
                        target: id.into(),
                        status: ProbeStatus::Failed,
                        reason: Some(format!("internal error: {msg}")),
                        duration_s,
                        warnings: vec![],
                    },
                );
            }
        }
        write_doc(path, doc)?;
        if let Some(why) = target.unusable() {
            let remaining: Vec<&str> = probes[index + 1..].iter().map(|p| p.key()).collect();
            if !remaining.is_empty() {
                continue_in_child(id, &remaining, args, path, &why, failures)?;
                *doc = Results::from_json(&std::fs::read(path).unwrap_or_default())
                    .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))?;
            }
            break;
        }
    }
    // The CPU's clock is measured again by its latency probe (turbo moves with the host's load):
    // record the target as it ended, so headers give the clock its cycles were counted in.
    if info.kind == "cpu" {
        crate::run_parallel::refresh_target(doc, target.info());
        write_doc(path, doc)?;
    }
    Ok(())
}

/// Test hook for the GPU fault path (scripts/gpu-test.sh): with `MEMSCOPE_FAULT_IN_PROBE=KEY`, the
/// CUDA target launches a faulting kernel where probe KEY would start, and that probe fails with
/// the device error, exactly as a probe whose own kernel faulted.
fn injected_fault(key: &str, target: &mut dyn Target) -> Option<memscope_core::ProbeError> {
    if std::env::var("MEMSCOPE_FAULT_IN_PROBE").ok()? != key {
        return None;
    }
    let cuda = target.as_any_mut().downcast_mut::<memscope_cuda::CudaTarget>()?;
    cuda.inject_fault().err().map(memscope_core::ProbeError::from)
}

/// A GPU fault left this process's CUDA state unusable (the driver keeps the error until the
/// process ends): run the remaining probes of this target in a fresh memscope process that
/// continues the same results file.
fn continue_in_child(
    id: &str,
    remaining: &[&str],
    args: &Args,
    path: &Path,
    why: &str,
    failures: &mut Vec<String>,
) -> CliResult {
    let exe = std::env::current_exe().map_err(|e| CliError::failure(format!("cannot find memscope itself: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("run").arg("--target").arg(id).arg("--probes").arg(remaining.join(","));
    cmd.arg("--out").arg(&args.out).arg("--continue-from").arg(path);
    if args.quick {
        cmd.arg("--quick");
    }
    if args.quiet {
        cmd.arg("--quiet");
    }
    cmd.stdout(std::process::Stdio::null());
    let mut child =
        cmd.spawn().map_err(|e| CliError::failure(format!("cannot start a fresh memscope process: {e}")))?;
    // (an interruption now is passed on to the child, which writes the same file)
    crate::run_guard::set_child(Some(child.id()));
    let status = child.wait();
    crate::run_guard::set_child(None);
    let status = status.map_err(|e| CliError::failure(format!("fresh memscope process: {e}")))?;
    failures.push(format!("{id}: {why}; the remaining probes ran in a fresh process (exit {:?})", status.code()));
    Ok(())
}
