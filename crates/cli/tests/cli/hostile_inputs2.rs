//! The second hostile-input pass (docs/CONTRACTS.md, "Files written" and "Limits"), through the
//! real binary: planted symlinks and non-regular destinations, a payload of terminal escapes,
//! bidi overrides and markup in every text field of both JSON formats through every writer,
//! multibyte commits, the bounds on every input and every count that sizes work, hierarchies
//! whose numbers would overflow a probe, zero and subnormal ceilings, the lock taken by exactly
//! one of two runs, signals at the end of a run, and a full disk.

use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> std::ffi::OsString {
    std::env::var_os("MEMSCOPE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_memscope").into())
}

fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args).stdin(Stdio::null()).env("RUST_BACKTRACE", "0").env("MEMSCOPE_NO_SCHEDULER", "1");
    c
}

fn run(args: &[&str]) -> Output {
    cmd(args).output().expect("start memscope")
}

/// `run` with the file-size limit `max_file_bytes` (writes past it fail with EFBIG, as on a full
/// disk; SIGXFSZ ignored so the process sees the error).
fn run_with_file_limit(args: &[&str], max_file_bytes: u64) -> Output {
    let mut c = cmd(args);
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else runs before exec.
    unsafe {
        c.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit { rlim_cur: max_file_bytes, rlim_max: max_file_bytes };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.output().expect("start memscope")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn assert_exit(o: &Output, code: i32, what: &str) {
    assert_eq!(o.status.code(), Some(code), "{what}: {}", text(o));
    assert!(!text(o).contains("panicked"), "{what}: {}", text(o));
}

fn sample() -> Value {
    serde_json::to_value(memscope_results::sample::results()).unwrap()
}

fn write_json(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    v.sort();
    v
}

/// The kernel's last pid handed out (the next processes get the ones after it).
fn last_pid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid").ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0)
}

// 1. Temp files and the write test never follow a symlink planted at their name.
#[test]
fn symlinks_planted_at_temp_and_write_test_names_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let good = write_json(dir.path(), "good.json", &sample());
    // every name the temp file or the write test could have under a pid-derived scheme, for the
    // pids the next commands get
    let next = last_pid();
    for pid in next + 1..next + 400 {
        for name in [
            format!(".merged.json.{pid}.tmp"),
            format!(".memscope-write-test-{pid}"),
            format!(".results.json.{pid}.tmp"),
        ] {
            let _ = std::os::unix::fs::symlink(&victim, out.join(name));
        }
    }
    let planted = names(&out).len();
    let o = run(&["merge", s(&good), s(&good), "--out", s(&out.join("merged.json"))]);
    assert_exit(&o, 0, "merge");
    let o = run(&["run", "--target", "sim:rtx4090", "--probes", "line", "--quick", "--quiet", "--out", s(&out)]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "a planted symlink was followed");
    let after = names(&out);
    assert_eq!(after.len(), planted + 2, "{:?}", after.iter().filter(|n| !n.ends_with(".tmp")).collect::<Vec<_>>());
    assert!(after.contains(&"merged.json".to_string()) && after.contains(&"results.json".to_string()));
}

// 2. A destination that exists and is not a regular file is refused (exit 2 naming it), never
// replaced or written through.
#[test]
fn non_regular_destinations_are_refused_by_every_writer() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_json(dir.path(), "good.json", &sample());
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.path().join("link.html");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let fifo = dir.path().join("fifo.json");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let accel = dir.path().join("accel");
    std::fs::create_dir(&accel).unwrap();
    std::os::unix::fs::symlink(&victim, accel.join("gpgpusim.config")).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["merge", s(&good), s(&good), "--out", s(&fifo)],
        vec!["merge", s(&good), s(&good), "--out", s(&link)],
        vec!["report", s(&good), "--html", s(&link)],
        vec!["report", s(&good), "--md", s(&link)],
        vec!["report", s(&good), "--csv", s(&fifo)],
        vec!["compare", s(&good), s(&good), "--html", s(&link)],
        vec!["sim", "calibrate", s(&good), "--allow-simulated", "--out", s(&link)],
        vec!["sim", "vadd", "--n", "1024", "--timeline", s(&link)],
        vec!["export", "accel-sim", s(&good), "--allow-simulated", "--out", s(&accel)],
    ];
    for c in cases {
        let started = Instant::now();
        let o = run(&c);
        assert_exit(&o, 2, &c.join(" "));
        assert!(text(&o).contains("not a regular file"), "{c:?}: {}", text(&o));
        assert!(started.elapsed() < Duration::from_secs(20), "{c:?} blocked");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the fifo was replaced");
}

/// Text that must not reach any output raw: terminal escapes (ESC, BEL, CSI as a C1 control),
/// bidi overrides, a line break, markup and quotes, a formula.
const PAYLOAD: &str = "=x\u{1b}[2J\u{7}\u{9b}31m\u{202e}\u{2067}\n-opt 1\r<script>alert(1)</script>\"'&";

/// Every string leaf of `v`, as a JSON pointer.
fn string_paths(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::String(_) => out.push(at),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| string_paths(x, format!("{at}/{i}"), out)),
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| string_paths(x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out)),
        _ => {}
    }
}

/// `doc` with the payload in every string field `accepts` still accepts (fields whose text is a
/// schema, a status or a number are refused with exit 2 when changed: that is their contract),
/// and the number of fields that took it.
fn with_payload(doc: &Value, accepts: &dyn Fn(&Value) -> bool) -> (Value, usize) {
    let mut paths = vec![];
    string_paths(doc, String::new(), &mut paths);
    let mut out = doc.clone();
    let mut taken = 0;
    for p in paths {
        let mut trial = out.clone();
        *trial.pointer_mut(&p).unwrap() = Value::String(PAYLOAD.into());
        if accepts(&trial) {
            out = trial;
            taken += 1;
        }
    }
    (out, taken)
}

/// What must hold of any output: no raw control character from the payload (ESC, BEL, C1,
/// bidi overrides, CR), and per kind no live markup or option line.
fn check_output(what: &str, bytes: &[u8], kind: &str) {
    let t = String::from_utf8_lossy(bytes);
    for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\u{2067}', '\r'] {
        assert!(!t.contains(c), "{what}: raw {c:?} in the output");
    }
    match kind {
        "html" | "md" => assert!(!t.contains("<script>alert"), "{what}: live markup"),
        "csv" => {
            for line in t.lines() {
                assert!(!line.starts_with('=') && !line.contains(",=") && !line.contains(",\"="), "{what}: {line}")
            }
        }
        "config" => {
            for line in t.lines() {
                let live = line.split('#').next().unwrap_or("");
                assert!(!live.contains("opt 1") && !live.contains("script") && !live.contains("=x"), "{what}: {line}");
            }
        }
        _ => {}
    }
}

fn check_run(what: &str, o: &Output) {
    assert!(!text(o).contains("panicked"), "{what}: {}", text(o));
    assert!(matches!(o.status.code(), Some(0..=2)), "{what}: {:?} {}", o.status, text(o));
    check_output(&format!("{what} (stdout)"), &o.stdout, if what.contains("nvbandwidth") { "" } else { "term" });
    check_output(&format!("{what} (stderr)"), &o.stderr, "term");
}

fn check_files(dir: &Path) {
    for e in walk(dir) {
        let kind = match e.extension().and_then(|x| x.to_str()) {
            Some("html") => "html",
            Some("md") => "md",
            Some("csv") => "csv",
            Some("config") => "config",
            _ => "",
        };
        check_output(&e.display().to_string(), &std::fs::read(&e).unwrap(), kind);
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

// 3, 4, 10. The payload through every text field of a results file into every writer.
#[test]
fn payload_in_every_results_text_field_reaches_no_output_raw() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut base = sample();
    // fields a writer reads that the sample leaves out, and input-named keys
    base["target"]["details"]["host_gpu_index"] = json!(0);
    base["target"]["details"]["compute_capability"] = json!("9.0");
    base["tool"]["git_commit"] = json!("abc");
    base["environment"]["note"] = json!("x");
    let f0 = base["findings"].as_object().unwrap().values().next().unwrap().clone();
    base["findings"][PAYLOAD] = f0;
    let s0 = base["series"].as_object().unwrap().values().next().unwrap().clone();
    base["series"][PAYLOAD] = s0;
    base["environment"][PAYLOAD] = json!(1);
    let (doc, taken) = with_payload(&base, &|v| memscope_results::Results::from_json(v.to_string().as_bytes()).is_ok());
    assert!(taken > 40, "only {taken} text fields took the payload");
    let f = write_json(d, "payload.json", &doc);
    let good = write_json(d, "good.json", &sample());
    let model = write_json(d, "model.json", &json!({"device": {"name": PAYLOAD}}));
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    let o = |n: &str| out.join(n).to_str().unwrap().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec!["report".into(), s(&f).into()],
        vec![
            "report".into(),
            s(&f).into(),
            "--html".into(),
            o("r.html"),
            "--md".into(),
            o("r.md"),
            "--csv".into(),
            o("r.csv"),
        ],
        vec![
            "report".into(),
            s(&f).into(),
            "--model".into(),
            s(&model).into(),
            "--any-device".into(),
            "--html".into(),
            o("m.html"),
        ],
        vec!["report".into(), s(&f).into(), "--model".into(), s(&model).into()],
        vec!["compare".into(), s(&f).into(), s(&good).into(), "--html".into(), o("c.html")],
        vec!["compare".into(), s(&good).into(), s(&f).into(), s(&f).into(), "--html".into(), o("f.html")],
        vec!["merge".into(), s(&f).into(), s(&good).into(), "--out".into(), o("merged.json")],
        vec!["merge".into(), s(&f).into(), s(&good).into(), "--out".into(), "-".into()],
        vec!["sim".into(), "calibrate".into(), s(&f).into(), "--allow-simulated".into()],
        vec!["sim".into(), "calibrate".into(), s(&f).into(), "--allow-simulated".into(), "--out".into(), o("cal.json")],
        vec!["export".into(), "accel-sim".into(), s(&f).into(), "--out".into(), o("accel")],
        vec!["export".into(), "nvbandwidth".into(), s(&f).into()],
    ];
    for c in &cases {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        check_run(&c.join(" "), &run(&args));
    }
    let merged = out.join("merged.json");
    if merged.exists() {
        for c in [
            vec!["report", s(&merged), "--html", &o("mr.html"), "--md", &o("mr.md"), "--csv", &o("mr.csv")],
            vec!["compare", s(&merged), "--html", &o("mc.html")],
            vec!["export", "nvbandwidth", s(&merged)],
        ] {
            check_run(&c.join(" "), &run(&c));
        }
    }
    check_files(&out);
}

// 10. The payload through every text field of a simulated hierarchy into every writer.
#[test]
fn payload_in_every_hierarchy_text_field_reaches_no_output_raw() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut h: Value = serde_json::from_slice(&run(&["sim", "dump", "--preset", "rtx4090"]).stdout).unwrap();
    h["provenance"] = json!({"source": "x", PAYLOAD: "y"});
    h["links"] = json!({"gpus": 2, "index": 0, "pairs": [{"from": 0, "to": 1, "no_access": "z"}]});
    let (doc, taken) = with_payload(&h, &|v| memscope_sim::hierarchy::Hierarchy::from_json_str(&v.to_string()).is_ok());
    assert!(taken >= 3, "only {taken} text fields took the payload");
    let f = write_json(d, "h.json", &doc);
    let t = format!("sim:{}", s(&f));
    let out = d.join("out");
    let o = |n: &str| out.join(n).to_str().unwrap().to_string();
    let runs: Vec<Vec<String>> = vec![
        vec!["sim".into(), "dump".into(), "--file".into(), s(&f).into()],
        vec!["sim".into(), "vadd".into(), "--file".into(), s(&f).into(), "--n".into(), "4096".into()],
        vec!["sim".into(), "chase".into(), "--file".into(), s(&f).into(), "--footprint".into(), "64KiB".into()],
        vec!["list".into(), "--target".into(), t.clone()],
        vec![
            "run".into(),
            "--target".into(),
            t.clone(),
            "--probes".into(),
            "line,peer".into(),
            "--quick".into(),
            "--quiet".into(),
            "--out".into(),
            s(&out).into(),
        ],
        vec![
            "run".into(),
            "--target".into(),
            t.clone(),
            "--probes".into(),
            "line".into(),
            "--quick".into(),
            "--quiet".into(),
            "--out".into(),
            o("j"),
            "--json".into(),
            "-".into(),
        ],
    ];
    for c in &runs {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        check_run(&c.join(" "), &run(&args));
    }
    let res = out.join("results.json");
    assert!(res.exists(), "the run wrote no results");
    for c in [
        vec!["report", s(&res)],
        vec!["report", s(&res), "--html", &o("r.html"), "--md", &o("r.md"), "--csv", &o("r.csv")],
        vec!["export", "nvbandwidth", s(&res)],
        vec!["sim", "calibrate", s(&res), "--allow-simulated"],
    ] {
        check_run(&c.join(" "), &run(&c));
    }
    check_files(&out);
}

// 3. The unit name of a target's capabilities in the HTML report.
#[test]
fn capability_unit_name_is_escaped_in_html() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = sample();
    v["target"]["capabilities"]["unit_name"] = json!("<script>alert(1)</script>");
    let f = write_json(dir.path(), "r.json", &v);
    let page = dir.path().join("r.html");
    assert_exit(&run(&["report", s(&f), "--html", s(&page)]), 0, "report --html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script>alert(1)"), "unit_name unescaped");
    assert!(html.contains("&lt;script&gt;alert(1)"));
}

// 4. A newline in the target's name or id never becomes an option line of gpgpusim.config;
// non-finite and absurd numbers never become option values.
#[test]
fn accel_sim_config_holds_no_input_option_lines_or_absurd_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = sample();
    v["target"]["name"] = json!("H200\n-gpgpu_n_clusters 1\n\u{1b}[2J");
    v["target"]["id"] = json!("cuda:0\r\n-gpgpu_l1_latency 9");
    v["target"]["details"]["compute_capability"] = json!("9\n-x.0");
    v["target"]["details"]["memory_clock_khz_attribute"] = json!(1e300);
    v["target"]["details"]["l2_cache_bytes_attribute"] = json!(1e300);
    let f = write_json(dir.path(), "r.json", &v);
    let out = dir.path().join("accel");
    assert_exit(&run(&["export", "accel-sim", s(&f), "--allow-simulated", "--out", s(&out)]), 0, "export accel-sim");
    let cfg = std::fs::read_to_string(out.join("gpgpusim.config")).unwrap();
    assert!(!cfg.contains('\u{1b}') && !cfg.contains('\r'));
    let mut seen = std::collections::BTreeMap::new();
    for line in cfg.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let live = line.split('#').next().unwrap().trim();
        let (opt, value) = live.split_once(' ').unwrap_or((live, ""));
        assert!(opt.starts_with('-'), "not an option line: {line:?}");
        *seen.entry(opt.to_string()).or_insert(0) += 1;
        let mut run = 0;
        for ch in value.chars() {
            run = if ch.is_ascii_digit() { run + 1 } else { 0 };
            assert!(run <= 12, "absurd number in {line:?}");
        }
        let lower = value.to_ascii_lowercase();
        assert!(!lower.contains("inf") && !lower.contains("nan"), "non-finite value in {line:?}");
    }
    assert_eq!(seen.get("-gpgpu_n_clusters"), Some(&1), "{cfg}");
    assert_eq!(seen.get("-gpgpu_l1_latency"), Some(&1), "{cfg}");
    assert!(!seen.contains_key("-x.0"));
}

// 5. A multibyte commit never panics (sliced on character boundaries).
#[test]
fn multibyte_git_commit_is_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = sample();
    // (byte 10, where a 10-character cut by bytes would fall, is inside a character)
    v["tool"]["git_commit"] = json!("aéééééééé€€");
    let f = write_json(dir.path(), "r.json", &v);
    let good = write_json(dir.path(), "good.json", &sample());
    for c in [vec!["report", s(&f)], vec!["compare", s(&f), s(&good)], vec!["compare", s(&good), s(&f), s(&f)]] {
        assert_exit(&run(&c), 0, &c.join(" "));
    }
}

// 6. The GPU index that sizes the nvbandwidth export is bounded and named.
#[test]
fn host_gpu_index_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [json!(1u64 << 40), json!(u64::MAX), json!(-1), json!(3.5), json!("7")] {
        let mut v = sample();
        v["target"]["details"]["host_gpu_index"] = bad.clone();
        let f = write_json(dir.path(), "r.json", &v);
        let started = Instant::now();
        let o = run(&["export", "nvbandwidth", s(&f)]);
        assert_exit(&o, 2, &format!("host_gpu_index {bad}"));
        assert!(text(&o).contains("host_gpu_index"), "{}", text(&o));
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    let mut v = sample();
    v["target"]["details"]["host_gpu_index"] = json!(3);
    let f = write_json(dir.path(), "r.json", &v);
    assert_exit(&run(&["export", "nvbandwidth", s(&f)]), 0, "host_gpu_index 3");
    // a peer matrix as wide as the file allows
    let mut v = sample();
    let rows: Vec<Value> = (0..5000).map(|_| json!([])).collect();
    v["findings"]["peer.device_to_device_memcpy_write_ce.bytes_per_s"] =
        json!({"value": rows, "unit": "bytes/s", "method": "m", "confidence": "high"});
    let f = write_json(dir.path(), "r.json", &v);
    let o = run(&["export", "nvbandwidth", s(&f)]);
    assert!(o.status.code() == Some(2) || o.stdout.len() < 10 << 20, "{} bytes of output", o.stdout.len());
}

// 7. Results files, series points and findings are bounded; the HTML report is linear in marks.
#[test]
fn results_inputs_are_bounded_and_rendering_is_linear_in_marks() {
    let dir = tempfile::tempdir().unwrap();
    // a series of 2.5 million points
    let mut v = sample();
    let key = v["series"].as_object().unwrap().keys().next().unwrap().clone();
    let n = 2_500_000;
    v["series"][&key]["x"] = json!(vec![1; n]);
    v["series"][&key]["y"] = json!(vec![1; n]);
    let f = dir.path().join("points.json");
    std::fs::write(&f, v.to_string()).unwrap();
    let o = run(&["report", s(&f)]);
    assert_exit(&o, 2, "2.5M points");
    assert!(text(&o).contains("series") && text(&o).contains("points"), "{}", text(&o));
    // 100,001 findings
    let mut v = sample();
    let f0 = v["findings"].as_object().unwrap().values().next().unwrap().clone();
    for i in 0..100_001 {
        v["findings"][format!("k{i}")] = f0.clone();
    }
    let f = dir.path().join("findings.json");
    std::fs::write(&f, v.to_string()).unwrap();
    let o = run(&["compare", s(&f), s(&f)]);
    assert_exit(&o, 2, "100k findings");
    assert!(text(&o).contains("findings"), "{}", text(&o));
    // a file over 32 MiB (valid JSON, mostly blanks): refused before parsing, naming the size
    let mut bytes = sample().to_string().into_bytes();
    bytes.resize(33 << 20, b' ');
    let f = dir.path().join("big.json");
    std::fs::write(&f, &bytes).unwrap();
    for c in [vec!["report", s(&f)], vec!["sim", "calibrate", s(&f)], vec!["merge", s(&f), s(&f), "--out", "-"]] {
        let o = run(&c);
        assert_exit(&o, 2, &c.join(" "));
        assert!(text(&o).contains("MiB"), "{}", text(&o));
    }
    // 100,000 knee marks on one series: the page in seconds, not minutes
    let mut v = sample();
    let marks: Vec<f64> = (0..100_000).map(|i| 1024.0 + i as f64).collect();
    v["series"][&key]["marks"] = json!(marks);
    let f = write_json(dir.path(), "marks.json", &v);
    let started = Instant::now();
    let page = dir.path().join("marks.html");
    assert_exit(&run(&["report", s(&f), "--html", s(&page)]), 0, "100k marks");
    assert!(started.elapsed() < Duration::from_secs(15), "100k marks took {:?}", started.elapsed());
    assert!(std::fs::metadata(&page).unwrap().len() < 20 << 20);
}

fn hierarchy_with(f: &dyn Fn(&mut Value)) -> Value {
    let mut h: Value = serde_json::from_slice(&run(&["sim", "dump", "--preset", "rtx4090"]).stdout).unwrap();
    f(&mut h);
    h
}

// 8. The links section that sizes the peer probe is bounded.
#[test]
fn hierarchy_links_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Value)> = vec![
        ("links.gpus", json!({"gpus": 1024, "index": 0})),
        ("links.pairs", json!({"gpus": 2, "index": 0, "pairs": vec![json!({"from": 0, "to": 1}); 3]})),
        ("links.peer_bytes_per_s", json!({"gpus": 2, "index": 0, "peer_bytes_per_s": 5e-324})),
        ("links.peer_latency_ns", json!({"gpus": 2, "index": 0, "peer_latency_ns": 1e300})),
    ];
    for (field, links) in cases {
        let h = hierarchy_with(&|h| h["links"] = links.clone());
        let f = write_json(dir.path(), "h.json", &h);
        let o = run(&["sim", "dump", "--file", s(&f)]);
        assert_exit(&o, 2, field);
        assert!(text(&o).contains(field), "{field}: {}", text(&o));
    }
    // the largest accepted host probes in seconds
    let h = hierarchy_with(&|h| h["links"] = json!({"gpus": 72, "index": 0}));
    let f = write_json(dir.path(), "h.json", &h);
    let started = Instant::now();
    let out = dir.path().join("out");
    let o = run(&[
        "run",
        "--target",
        &format!("sim:{}", s(&f)),
        "--probes",
        "peer",
        "--quick",
        "--quiet",
        "--out",
        s(&out),
    ]);
    assert_exit(&o, 0, "72 GPUs");
    assert!(started.elapsed() < Duration::from_secs(60), "72 GPUs took {:?}", started.elapsed());
}

// 11. Numbers a probe would overflow to infinity or NaN are refused by validation.
#[test]
fn hierarchy_numbers_that_overflow_probes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, &str, Value)> = vec![
        ("noise", "jitter_ns", json!(1e308)),
        ("noise", "outlier_ns", json!(1e300)),
        ("l1", "hit_ns", json!(1e300)),
        ("", "clock_hz", json!(5e-324)),
        ("", "clock_hz", json!(1e300)),
    ];
    for (section, field, bad) in cases {
        let h = hierarchy_with(&|h| {
            if section.is_empty() {
                h[field] = bad.clone()
            } else {
                h[section][field] = bad.clone()
            }
        });
        let f = write_json(dir.path(), "h.json", &h);
        let o = run(&["sim", "dump", "--file", s(&f)]);
        assert_exit(&o, 2, &format!("{section}.{field} = {bad}"));
        assert!(text(&o).contains(field), "{}", text(&o));
    }
    // the largest accepted noise: the probes finish without a panic and write only finite numbers
    let h = hierarchy_with(&|h| {
        h["noise"]["jitter_ns"] = json!(1e9);
        h["noise"]["outlier_ns"] = json!(1e9);
        h["noise"]["outlier_fraction"] = json!(0.5);
    });
    let f = write_json(dir.path(), "h.json", &h);
    let out = dir.path().join("out");
    let o = run(&[
        "run",
        "--target",
        &format!("sim:{}", s(&f)),
        "--probes",
        "latency",
        "--quick",
        "--quiet",
        "--out",
        s(&out),
    ]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", text(&o));
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
    let r = std::fs::read_to_string(out.join("results.json")).unwrap();
    assert!(!r.contains("NaN") && !r.contains("inf"), "non-finite in results");
}

// 12. Zero, negative, subnormal and non-finite ceilings are refused.
#[test]
fn predict_refuses_unusable_ceilings() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["predict", "--flops", "1e9", "--bytes", "1e9"];
    for (flag, v) in [("--bandwidth", "5e-324"), ("--peak", "4.9e-324"), ("--launch", "1e-320s")] {
        let mut c = base.to_vec();
        c.extend(["--bandwidth", "1e12", "--peak", "1e14", "--launch", "1e-6s"].iter());
        let i = c.iter().position(|a| *a == flag).unwrap();
        c[i + 1] = v;
        let o = run(&c);
        assert_exit(&o, 2, &format!("{flag} {v}"));
        assert!(text(&o).contains(flag), "{}", text(&o));
    }
    for (what, read) in [("zero", json!(0.0)), ("negative", json!(-4e12)), ("subnormal", json!(5e-324))] {
        let f = write_json(
            dir.path(),
            "c.json",
            &json!({"bandwidth_bytes_per_s": {"read": read, "copy": read, "write": read},
                    "launch_floor_s": {"raw": 2e-6}, "peak_flops_per_s": {"fp32": 6e14}}),
        );
        let mut c = base.to_vec();
        c.extend(["--ceilings", s(&f)]);
        let o = run(&c);
        assert_exit(&o, 2, what);
        assert!(text(&o).contains("bandwidth"), "{what}: {}", text(&o));
        assert!(!text(&o).contains("inf s"), "{}", text(&o));
    }
}

// 9. Runs taking over the same stale lock at once: exactly one proceeds.
#[test]
fn a_stale_lock_is_taken_over_by_exactly_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut double = 0;
    for trial in 0..25 {
        let out = dir.path().join(format!("out{trial}"));
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(".memscope.lock"), "2147483000\n").unwrap();
        // The tlb probe holds the lock for about 0.3 s (line: 0.07 s), so a run whose process starts
        // late on a loaded machine still finds the lock held rather than free again.
        let args = ["run", "--target", "sim:rtx4090", "--probes", "tlb", "--quick", "--quiet", "--out", s(&out)];
        let children: Vec<_> =
            (0..4).map(|_| cmd(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()).collect();
        let outs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        let proceeded = outs.iter().filter(|o| o.status.code() != Some(2)).count();
        for o in outs.iter().filter(|o| o.status.code() == Some(2)) {
            assert!(text(o).contains("in use by another memscope run"), "{}", text(o));
        }
        assert!(proceeded >= 1, "trial {trial}: nobody took the stale lock");
        if proceeded > 1 {
            double += 1;
        }
        assert!(!out.join(".memscope.lock").exists(), "lock left behind");
    }
    assert_eq!(double, 0, "{double} of 25 trials: two runs proceeded on one folder");
}

// 13. A signal at any moment around the end of a run never relabels a finished file, and leaves
// no temp file.
#[test]
fn signals_around_the_end_of_a_run_never_rewrite_finished_files() {
    let dir = tempfile::tempdir().unwrap();
    let args = |out: &Path| -> Vec<String> {
        ["run", "--target", "sim:rtx4090,sim:l40s", "--probes", "line", "--quick", "--quiet", "--out", s(out)]
            .iter()
            .map(|a| a.to_string())
            .collect()
    };
    // how long a whole run takes here
    let out = dir.path().join("timing");
    let started = Instant::now();
    let a = args(&out);
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_exit(&o, 0, "timing run");
    let whole = started.elapsed();
    for trial in 0..30 {
        let out = dir.path().join(format!("t{trial}"));
        let a = args(&out);
        let mut child = cmd(&a.iter().map(String::as_str).collect::<Vec<_>>())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // from 70 % to 130 % of a whole run: the last probes, the finishing writes, the exit
        let at = whole.mul_f64(0.7 + 0.6 * trial as f64 / 30.0);
        std::thread::sleep(at);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let _ = child.wait();
        if !out.exists() {
            continue;
        }
        let files = names(&out);
        assert!(!files.iter().any(|n| n.ends_with(".tmp")), "trial {trial}: temp files left: {files:?}");
        for n in files.iter().filter(|n| n.ends_with(".json")) {
            let v: Value = serde_json::from_slice(&std::fs::read(out.join(n)).unwrap()).unwrap();
            let relabelled = v["run"]["state"] == "interrupted" && v["environment"].get("finished_at").is_some();
            assert!(!relabelled, "trial {trial}: {n} finished, then relabelled interrupted");
        }
    }
}

// 13. A full disk (writes failing with EFBIG) leaves no partial page, no temp file, no lock.
#[test]
fn a_full_disk_leaves_no_partial_files() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_json(dir.path(), "good.json", &sample());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = run_with_file_limit(
        &["report", s(&good), "--html", s(&out.join("r.html")), "--md", s(&out.join("r.md"))],
        4096,
    );
    assert_exit(&o, 2, "report on a full disk");
    let o = run_with_file_limit(&["merge", s(&good), s(&good), "--out", s(&out.join("m.json"))], 4096);
    assert_exit(&o, 2, "merge on a full disk");
    assert_eq!(names(&out), Vec::<String>::new(), "partial files left");
    let run_out = dir.path().join("run");
    std::fs::create_dir(&run_out).unwrap();
    let o = run_with_file_limit(
        &["run", "--target", "sim:rtx4090", "--probes", "line", "--quick", "--quiet", "--out", s(&run_out)],
        2,
    );
    assert!(matches!(o.status.code(), Some(1) | Some(2)), "{}", text(&o));
    assert_eq!(names(&run_out), Vec::<String>::new(), "partial files left");
}
