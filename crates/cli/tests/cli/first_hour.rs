//! A user's first hour: the command-line trips a new user hit, each checked end to end
//! on the built binary: missing arguments named with the usage line, `--version` with the commit,
//! completions and the man page, `predict` (every missing value at once, times with units, u64
//! overflow refused), one spelling for "which hierarchy", `report --md -`, `report --model` of
//! another device, the reason a default run falls back to the simulator, the run's total time and
//! what `sim chase` counts.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_memscope");

/// (exit code, stdout, stderr)
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run memscope");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_missing_required_argument_is_named_with_the_usage_line() {
    for (args, named) in [
        (vec!["sim", "chase", "--target", "sim:rtx4090"], "--footprint <FOOTPRINT>"),
        (vec!["hash", "slice"], "<ADDR>"),
        (vec!["compare"], "<FILE>..."),
        (vec!["merge", "a.json"], "--out <FILE>"),
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("required arguments were not provided"), "{args:?}: {err}");
        assert!(err.contains(named), "{args:?} does not name {named}: {err}");
        assert!(err.contains("Usage: memscope"), "{args:?}: no usage line: {err}");
    }
}

#[test]
fn version_names_the_commit() {
    let (code, out, _) = run(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("memscope {} (commit ", env!("CARGO_PKG_VERSION"))), "{out}");
    let commit = out.split("(commit ").nth(1).unwrap_or("").trim_end().trim_end_matches(')');
    assert!(commit == "unknown" || commit.chars().take(12).all(|c| c.is_ascii_hexdigit()), "{out}");
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, out, err) = run(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for sub in ["run", "report", "predict", "calibrate"] {
            assert!(out.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let (code, _, err) = run(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("tcsh"), "{err}");
    let (code, man, _) = run(&["man"]);
    assert_eq!(code, 0);
    assert!(man.starts_with(".ie") || man.contains(".TH memscope 1"), "not roff: {}", &man[..man.len().min(200)]);
    assert!(man.contains(".TH memscope 1") && man.contains("predict"), "man page lacks its title or subcommands");
}

#[test]
fn predict_names_every_missing_value_at_once() {
    let (code, _, err) = run(&["predict", "--op", "matmul", "--m", "4"]);
    assert_eq!(code, 2);
    for flag in ["--k", "--n", "--launch", "--bandwidth", "--peak"] {
        assert!(err.contains(flag), "{flag} not named: {err}");
    }
    assert!(err.contains("results/h200/ceilings.json"), "where ceilings come from: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn predict_takes_times_and_rates_with_units() {
    let with_units = ["--launch", "4us", "--bandwidth", "4.6TB/s", "--peak", "51.3TFLOP/s"];
    let plain = ["--launch", "4e-6s", "--bandwidth", "4.6e12", "--peak", "51.3e12"];
    let op = ["predict", "--op", "add", "--elems", "16777216", "--json"];
    let a = run(&[op.as_slice(), &with_units].concat());
    let b = run(&[op.as_slice(), &plain].concat());
    assert_eq!(a.0, 0, "{}", a.2);
    assert_eq!(a.1, b.1, "4us / 4.6TB/s / 51.3TFLOP/s must equal their plain numbers");
    let (code, _, err) =
        run(&["predict", "--op", "add", "--elems", "4", "--launch", "4 parsecs", "--bandwidth", "1", "--peak", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("4 parsecs") && err.contains("4us"), "{err}");
}

#[test]
fn predict_refuses_counts_that_overflow_64_bits() {
    let ceilings = ["--launch", "4us", "--bandwidth", "1e12", "--peak", "1e12"];
    for dims in [
        vec!["--op", "layernorm", "--rows", "4294967296", "--cols", "4294967296"],
        vec!["--op", "softmax", "--rows", "4294967296", "--cols", "1073741824"], // 2^62 elems x 4 B
        vec!["--op", "matmul", "--m", "4294967296", "--k", "4294967296", "--n", "1"],
        vec![
            "--op",
            "decode-attention",
            "--batch",
            "65536",
            "--heads",
            "65536",
            "--tokens",
            "65536",
            "--head-dim",
            "65536",
        ],
    ] {
        let (code, out, err) = run(&[&["predict"], dims.as_slice(), &ceilings].concat());
        assert_eq!(code, 2, "{dims:?} answered: {out}");
        assert!(err.contains("64 bits") && err.contains(dims[3]), "{dims:?}: {err}");
        assert!(out.is_empty(), "no answer printed for {dims:?}: {out}");
    }
}

#[test]
fn one_spelling_for_which_hierarchy() {
    let dir = tempfile::tempdir().unwrap();
    let (_, by_preset, _) = run(&["sim", "dump", "--preset", "l40s"]);
    let (code, by_target, err) = run(&["sim", "dump", "--target", "sim:l40s"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(by_preset, by_target);
    let f = dir.path().join("h.json");
    std::fs::write(&f, &by_target).unwrap();
    let (code, from_file, err) = run(&["sim", "dump", "--target", &format!("sim:{}", f.display())]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(from_file, by_target);
    // A file given to --preset gets a hint towards the spelling that takes files.
    let (code, _, err) = run(&["sim", "dump", "--preset", f.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("--target sim:"), "{err}");
    let (code, _, err) = run(&["sim", "dump", "--target", "cpu"]);
    assert_eq!(code, 2);
    assert!(err.contains("sim:FILE.json"), "{err}");
    // hash slice: --target sim:P, and the older --gpu P.
    let (_, old, _) = run(&["hash", "slice", "--gpu", "l40s", "0x1f000", "0x12345680"]);
    let (code, new, err) = run(&["hash", "slice", "--target", "sim:l40s", "0x1f000", "0x12345680"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(old, new);
    let (_, r4090, _) = run(&["hash", "slice", "--target", "sim:rtx4090", "0x1f000", "0x12345680"]);
    assert_ne!(r4090, new, "the two chips' functions differ on these addresses");
}

fn fixture(dir: &std::path::Path) -> String {
    let r = memscope_results::sample::results();
    let p = dir.join("a.json");
    std::fs::write(&p, memscope_results::json::to_bytes(&r)).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn report_dash_writes_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture(dir.path());
    let (code, out, err) = Command::new(BIN)
        .args(["report", a.as_str(), "--md", "-"])
        .current_dir(dir.path())
        .output()
        .map(|o| {
            (
                o.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&o.stdout).to_string(),
                String::from_utf8_lossy(&o.stderr).to_string(),
            )
        })
        .unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| hit latency | `l1.hit_latency_ns` |"), "Markdown on stdout: {out}");
    assert!(!dir.path().join("-").exists(), "a file named '-' was written");
}

#[test]
fn report_refuses_a_model_run_of_another_device() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture(dir.path());
    let model = dir.path().join("model.json");
    std::fs::write(
        &model,
        r#"{"device": {"name": "Some Other GPU"}, "ceilings": {"bandwidth_bytes_per_s": 1e12, "peak_flops_per_s": 1e14},
           "ops": [{"name": "add", "flops": 1e6, "bytes": 1.2e7, "measured_s": 2e-5, "predicted_s": 1.4e-5, "regime": "memory"}]}"#,
    )
    .unwrap();
    let html = dir.path().join("r.html");
    let (code, _, err) =
        run(&["report", a.as_str(), "--model", model.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Some Other GPU") && err.contains("--any-device"), "{err}");
    assert!(!html.exists(), "nothing written when refused");
    let (code, _, err) = run(&[
        "report",
        a.as_str(),
        "--model",
        model.to_str().unwrap(),
        "--any-device",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning") && err.contains("Some Other GPU"), "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Some Other GPU"), "the page says whose model run it is");
}

#[test]
fn a_default_run_says_why_it_fell_back_to_the_simulator() {
    let (code, out, err) = run(&["list"]);
    assert_eq!(code, 0, "{err}");
    if out.contains("cuda:0: ") {
        return; // a GPU machine: no fallback, nothing to explain
    }
    assert!(err.contains("no usable CUDA GPU (") && err.contains("sim:rtx4090"), "reason not shown: {err}");
}

#[test]
fn a_run_prints_its_total_time() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run(&[
        "run",
        "--target",
        "sim:rtx4090",
        "--probes",
        "line",
        "--quick",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.starts_with("total time: ")).unwrap_or_else(|| panic!("no total time: {out}"));
    let s: f64 = line.trim_start_matches("total time: ").trim_end_matches(" s").parse().expect("seconds");
    assert!((0.0..600.0).contains(&s), "{line}");
}

#[test]
fn sim_chase_says_its_counts_include_the_warm_up() {
    let (code, out, err) = run(&["sim", "chase", "--target", "sim:rtx4090", "--footprint", "64KiB", "--hops", "1000"]);
    assert_eq!(code, 0, "{err}");
    // 512 lines x 2 warm-up laps + 3 repeats x 1000 timed hops
    assert!(out.contains("counts over all 4024 hops: 1024 warm-up hops"), "{out}");
    let l1 = out.lines().find(|l| l.trim_start().starts_with("L1 hits")).expect("L1 line");
    let loads: u64 =
        l1.split(" of ").nth(1).and_then(|t| t.split_whitespace().next()).and_then(|t| t.parse().ok()).unwrap();
    assert_eq!(loads, 4024, "the L1 load count is the total stated: {out}");
}

#[test]
fn the_smallest_hierarchy_of_contracts_md_is_valid() {
    // docs/CONTRACTS.md shows the smallest valid simulated-hierarchy file; it must stay valid.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/CONTRACTS.md")).unwrap();
    let at = doc.find("The smallest valid file:").expect("section in CONTRACTS.md");
    let json: String = doc[at..]
        .lines()
        .skip(1)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with("    "))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("smallest.json");
    std::fs::write(&f, &json).unwrap();
    let (code, out, err) = run(&["sim", "dump", "--target", &format!("sim:{}", f.display())]);
    assert_eq!(code, 0, "{json}\n{err}");
    assert!(out.contains("\"sets_per_slice\": 1024"), "{out}");
}

/// Each command has its own man page, and a page lists only pages that `memscope man` prints.
#[test]
fn every_listed_man_page_exists() {
    let (code, top, err) = run(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(!top.contains("memscope-run(1)"), "lists a page no man database holds");
    let listed: Vec<String> =
        top.lines().filter(|l| l.starts_with("\\fBmemscope man ")).map(|l| l[3..l.len() - 3].to_string()).collect();
    assert!(listed.iter().any(|l| l == "memscope man run"), "{top}");
    assert!(listed.len() >= 10, "{listed:?}");
    for call in &listed {
        let words: Vec<&str> = call.split(' ').skip(1).collect();
        let (code, page, err) = run(&words);
        assert_eq!(code, 0, "{call}: {err}");
        let name = format!(".TH memscope-{}", words[1..].join("-"));
        assert!(page.contains(&name), "{call} does not print its page ({name})");
    }
    let (code, page, _) = run(&["man", "sim", "vadd"]);
    assert_eq!(code, 0);
    assert!(page.contains(".TH memscope-sim-vadd") && page.contains("memscope sim vadd"), "{page}");
    let (code, _, err) = run(&["man", "runn"]);
    assert_eq!(code, 2);
    assert!(err.contains("\"runn\"") && err.contains("run"), "{err}");
    let (_, help, _) = run(&["--help"]);
    assert!(help.contains("docs/READING.md"), "--help points to the datasheet guide: {help}");
}

/// Without --out every run gets a folder of its own (never replacing the last run's results),
/// printed at the start, with memscope-out/latest pointing at it.
#[test]
fn runs_without_out_never_replace_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let go = || {
        let out = Command::new(BIN)
            .args(["run", "--target", "sim:rtx4090", "--probes", "line", "--quick"])
            .env("MEMSCOPE_NO_SCHEDULER", "1")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let line = err.lines().find(|l| l.starts_with("memscope: writing to ")).expect("where it writes").to_string();
        dir.path().join(line.trim_start_matches("memscope: writing to "))
    };
    let (first, second) = (go(), go());
    assert_ne!(first, second);
    assert!(first.join("results.json").is_file() && second.join("results.json").is_file());
    assert!(first.starts_with(dir.path().join("memscope-out")), "{}", first.display());
    let latest = std::fs::read_link(dir.path().join("memscope-out/latest")).unwrap();
    assert_eq!(Some(latest.as_os_str()), second.file_name());
}

/// A run whose target cannot be opened still writes its results file, naming the failure (exit 1).
#[test]
fn a_failed_run_writes_its_results_with_the_failure() {
    let (code, list, _) = run(&["list"]);
    assert_eq!(code, 0);
    if list.contains("cuda:0: ") {
        return; // a GPU machine: cuda:0 opens
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&["run", "--target", "cuda:0", "--quiet", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("results.json")).unwrap()).unwrap();
    assert_eq!(doc["probes"]["open@cuda:0"]["status"], "failed", "{doc}");
    assert!(doc["probes"]["open@cuda:0"]["reason"].as_str().unwrap().contains("GPU"), "{doc}");
    assert_eq!(doc["run"]["state"], "finished");
}

/// The guide the datasheet's footer and `--help` point to exists and explains every column.
#[test]
fn reading_the_datasheet_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/READING.md")).unwrap();
    for term in
        ["value", "cycles", "spread (MAD)", "`check:`", "**high**", "**medium**", "**low**", "DISAGREES", "## Warnings"]
    {
        assert!(doc.contains(term), "docs/READING.md does not explain {term}");
    }
}
