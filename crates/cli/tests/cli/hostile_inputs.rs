//! The hostile-input corpus (tests/corpus: 320 hierarchy files, 220 results files,
//! bad arguments for every subcommand) through the real binary, under a 2 GiB address-space limit
//! and a per-case time bound: every case exits 0, 1 or 2 as the contract says (2 for every bad
//! argument), none panics, aborts ("memory allocation ... failed"), dies on a signal or runs past
//! its bound, and no control character from the input reaches stdout or stderr.

use crate::corpus;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HIERARCHY_FILES: usize = 320;
const RESULTS_FILES: usize = 220;
/// Address-space limit of every case (the issue's "no case takes more than 2 GB").
const MEMORY_LIMIT_BYTES: u64 = 2 << 30;
/// Time bound of one case.
const CASE_LIMIT: Duration = Duration::from_secs(60);

struct Outcome {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    elapsed: Duration,
}

fn run_case(args: &[String]) -> Outcome {
    // (MEMSCOPE_BIN runs the corpus against another build, e.g. one from before the fixes)
    let bin = std::env::var_os("MEMSCOPE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_memscope").into());
    let mut cmd = Command::new(bin);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).env("RUST_BACKTRACE", "0");
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: MEMORY_LIMIT_BYTES, rlim_max: MEMORY_LIMIT_BYTES };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start memscope");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if started.elapsed() > CASE_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stdout = t_out.join().unwrap();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).to_string();
    Outcome { code: status.and_then(|s| s.code()), stdout, stderr, elapsed: started.elapsed() }
}

/// Check one case; returns a description of what is wrong.
fn check(
    args: &[String],
    allowed: &[i32],
    codes: &std::sync::Mutex<std::collections::BTreeMap<i32, usize>>,
) -> Option<String> {
    let o = run_case(args);
    *codes.lock().unwrap().entry(o.code.unwrap_or(-1)).or_default() += 1;
    let what = format!(
        "memscope {}",
        args.iter().map(|a| a.chars().take(80).collect::<String>()).collect::<Vec<_>>().join(" ")
    );
    if o.elapsed > CASE_LIMIT {
        return Some(format!("{what}: ran past {CASE_LIMIT:?}"));
    }
    let Some(code) = o.code else {
        return Some(format!("{what}: killed by a signal; stderr: {}", o.stderr));
    };
    if !allowed.contains(&code) {
        return Some(format!("{what}: exit {code}, want one of {allowed:?}; stderr: {}", o.stderr));
    }
    for bad in ["panicked", "memory allocation", "RUST_BACKTRACE"] {
        if o.stderr.contains(bad) {
            return Some(format!("{what}: {bad:?} on stderr: {}", o.stderr));
        }
    }
    if o.stdout.contains(&0x1b) || o.stderr.contains('\u{1b}') {
        return Some(format!("{what}: an escape character reached the terminal"));
    }
    None
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Run cases on two threads (the CI machine has two cores); all failures, at most 20 shown.
fn run_all(cases: Vec<(Vec<String>, Vec<i32>)>) {
    let n = cases.len();
    let queue = std::sync::Mutex::new(cases.into_iter());
    let failures = std::sync::Mutex::new(Vec::new());
    let codes = std::sync::Mutex::new(std::collections::BTreeMap::new());
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| loop {
                let next = queue.lock().unwrap().next();
                let Some((args, allowed)) = next else { break };
                if let Some(f) = check(&args, &allowed, &codes) {
                    failures.lock().unwrap().push(f);
                }
            });
        }
    });
    // (the spread of exit codes, for the log: the corpus must reach past validation too)
    eprintln!("{n} cases, exit codes (code: cases): {:?}", codes.into_inner().unwrap());
    let f = failures.into_inner().unwrap();
    assert!(
        f.is_empty(),
        "{} of {n} cases failed:\n{}",
        f.len(),
        f.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

fn dump(preset: &str) -> serde_json::Value {
    let o = run_case(&s(&["sim", "dump", "--preset", preset]));
    serde_json::from_slice(&o.stdout).expect("sim dump gives JSON")
}

fn write_all(dir: &Path, prefix: &str, texts: &[String]) -> Vec<PathBuf> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let p = dir.join(format!("{prefix}-{i:03}.json"));
            std::fs::write(&p, t).unwrap();
            p
        })
        .collect()
}

#[test]
fn hostile_hierarchy_files() {
    let dir = tempfile::tempdir().unwrap();
    let presets = vec![dump("rtx4090"), dump("l40s")];
    let texts = corpus::hierarchies(&presets, HIERARCHY_FILES, &mut corpus::Rng(21));
    assert!(texts.len() >= 300);
    let files = write_all(dir.path(), "h", &texts);
    let mut cases = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let f = f.to_str().unwrap();
        cases.push((s(&["sim", "chase", "--file", f, "--footprint", "64KiB", "--hops", "2000"]), vec![0, 2]));
        match i % 8 {
            0 => cases.push((s(&["sim", "vadd", "--file", f, "--n", "65536"]), vec![0, 2])),
            1 => cases.push((s(&["sim", "dump", "--file", f]), vec![0, 2])),
            2 => cases.push((s(&["list", "--target", &format!("sim:{f}")]), vec![0, 2])),
            3 => {
                let out = dir.path().join(format!("run-{i}"));
                let t = format!("sim:{f}");
                cases.push((
                    s(&[
                        "run",
                        "--target",
                        &t,
                        "--probes",
                        "line",
                        "--quick",
                        "--quiet",
                        "--out",
                        out.to_str().unwrap(),
                    ]),
                    vec![0, 1, 2],
                ))
            }
            _ => {}
        }
    }
    run_all(cases);
}

#[test]
fn hostile_results_files() {
    let dir = tempfile::tempdir().unwrap();
    let base = serde_json::to_value(memscope_results::sample::results()).unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, base.to_string()).unwrap();
    let texts = corpus::results(&base, RESULTS_FILES, &mut corpus::Rng(8));
    assert!(texts.len() >= 200);
    let files = write_all(dir.path(), "r", &texts);
    let mut cases = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let fs = f.to_str().unwrap();
        let o = |ext: &str| dir.path().join(format!("out-{i}.{ext}")).to_str().unwrap().to_string();
        cases.push((s(&["report", fs, "--html", &o("html"), "--md", &o("md"), "--csv", &o("csv")]), vec![0, 2]));
        match i % 4 {
            0 => cases.push((s(&["report", fs]), vec![0, 2])),
            1 => cases.push((s(&["compare", fs, good.to_str().unwrap(), "--html", &o("c.html")]), vec![0, 2])),
            2 => cases.push((s(&["sim", "calibrate", fs]), vec![0, 2])),
            _ => cases.push((s(&["compare", good.to_str().unwrap(), fs]), vec![0, 2])),
        }
    }
    run_all(cases);
    // what the writers made of hostile text
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        match p.extension().and_then(|e| e.to_str()) {
            Some("md") => assert!(!text.contains("<script"), "raw HTML in {}", p.display()),
            Some("csv") => {
                for line in text.lines() {
                    assert!(
                        !line.starts_with('=') && !line.contains(",=") && !line.contains(",\"="),
                        "{}: {line}",
                        p.display()
                    );
                }
            }
            _ => {}
        }
    }
}

#[test]
fn bad_arguments_of_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let missing = format!("{d}/no/such/folder/x.json");
    let good = dir.path().join("good.json");
    std::fs::write(&good, serde_json::to_string(&memscope_results::sample::results()).unwrap()).unwrap();
    let g = good.to_str().unwrap();
    let not_json = dir.path().join("not.json");
    std::fs::write(&not_json, "\u{1b}[2J not json").unwrap();
    let nj = not_json.to_str().unwrap();
    let out = format!("{d}/out");
    let sim_nj = format!("sim:{nj}");
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "--target", "foo", "--out", &out],
        vec!["run", "--target", "cuda:x", "--out", &out],
        vec!["run", "--target", "sim:nosuch", "--out", &out],
        vec!["run", "--target", "sim:/no/such/h.json", "--out", &out],
        vec!["run", "--target", "sim:rtx4090", "--probes", "nosuch", "--out", &out],
        vec!["run", "--target", "sim:rtx4090", "--json", &missing, "--out", &out],
        vec!["run", "--target", "sim:rtx4090", "--json", &d, "--out", &out],
        vec!["run", "--target", "sim:rtx4090", "--out", "/proc/memscope-cannot-create"],
        vec!["run", "--target", ",", "--out", &out],
        vec!["run", "--no-such-flag"],
        vec!["list", "--target", "foo"],
        vec!["list", "--target", "sim:/no/such/h.json"],
        vec!["list", "--target", &sim_nj],
        vec!["report", "/no/such/results.json"],
        vec!["report", &d],
        vec!["report", nj],
        vec!["report", g, "--html", &missing],
        vec!["report", g, "--csv", &d],
        vec!["report", g, "--model", "/no/such/model.json"],
        vec!["compare", g],
        vec!["compare", g, "/no/such/b.json"],
        vec!["compare", g, g, "--html", &missing],
        vec!["compare", g, g, g, "--html", &missing],
        vec!["compare", g, g, g, "--tolerance", "nan"],
        vec!["merge", g],
        vec!["merge", g, nj, "--out", &out],
        vec!["merge", g, "/no/such/b.json", "--out", &out],
        vec!["merge", g, "--out", &missing],
        vec!["merge", g, "--out", &d],
        vec!["sim", "dump", "--preset", "nosuch"],
        vec!["sim", "dump", "--file", "/no/such/h.json"],
        vec!["sim", "dump", "--file", nj],
        vec!["sim", "vadd", "--n", "0"],
        vec!["sim", "vadd", "--n", "1099511627776"],
        vec!["sim", "vadd", "--n", "16777216T"],
        vec!["sim", "vadd", "--n", "-5"],
        vec!["sim", "vadd", "--n", "1", "--record-warps", "18446744073709551615", "--timeline", &out],
        vec!["sim", "vadd", "--n", "1", "--timeline", &missing],
        vec!["sim", "vadd", "--n", "1073741825", "--preset", "rtx4090"],
        vec!["sim", "chase", "--footprint", "0"],
        vec!["sim", "chase", "--footprint", "16777216T"],
        vec!["sim", "chase", "--footprint", "18446744073709551616"],
        vec!["sim", "chase", "--footprint", "1GiB", "--stride", "3"],
        vec!["sim", "chase", "--footprint", "64KiB", "--hops", "0"],
        vec!["sim", "chase", "--footprint", "64KiB", "--hops", "18446744073709551615"],
        vec!["sim", "chase", "--footprint", "64KiB", "--path", "zz"],
        vec!["sim", "chase", "--footprint", "64KiB", "--order", "zz"],
        vec!["sim", "chase", "--footprint", "64GiB", "--stride", "1GiB"],
        vec!["sim", "chase", "--footprint", "16TiB", "--stride", "1TiB"],
        vec!["sim", "calibrate", "/no/such/results.json"],
        vec!["sim", "calibrate", nj],
        vec!["sim", "calibrate", g, "--base", "nosuch"],
        vec!["sim", "nosuch"],
        vec!["hash", "slice", "--gpu", "nosuch", "0x1000"],
        vec!["hash", "slice", "--gpu", "h200", "0x1000"],
        vec!["hash", "slice", "notanaddress"],
        vec!["hash", "l2-set", "0xzz"],
        vec!["hash", "l2-set", "0x10000000000000000"],
        vec!["ceilings", "--out", &missing],
        vec!["ceilings", "--out", &d],
        vec!["ceilings", "--device", "x"],
        vec!["model", "--out", &missing],
        vec!["model", "--all", "--efficiency-only"],
        vec!["fusion", "--out", &missing],
        vec!["batch", "--out", &missing],
        vec!["batch", "--compose", "--out", &missing],
        vec!["nosuchcommand"],
        vec!["\u{1b}[2J"],
    ];
    run_all(cases.iter().map(|c| (s(c), vec![2])).collect());
}

/// A simulated out-of-memory is bad input in every simulated command (exit 2,
/// the same message), not exit 1 in vadd and 2 in chase.
#[test]
fn simulated_out_of_memory_is_exit_2_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = dump("rtx4090");
    h["dram"]["capacity_bytes"] = serde_json::json!(64u64 << 20);
    let f = dir.path().join("small-dram.json");
    std::fs::write(&f, h.to_string()).unwrap();
    let f = f.to_str().unwrap();
    for args in [
        s(&["sim", "vadd", "--file", f, "--n", "16M"]),
        s(&["sim", "chase", "--file", f, "--footprint", "128MiB", "--stride", "1MiB"]),
    ] {
        let o = run_case(&args);
        assert_eq!(o.code, Some(2), "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains("simulated out of memory"), "{args:?}: {}", o.stderr);
    }
}
