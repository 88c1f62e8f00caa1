//! Browser test of the HTML outputs (docs/READING.md): a real results file from the simulated RTX 4090
//! (`memscope run --target sim:rtx4090 --quick`), rendered by `memscope report --html` and
//! `memscope compare --html`, plus the vadd animation page of a simulated full wave, each loaded
//! in headless Chromium.
//! Checks: no console output (the pages never log, so any console line is an error or an uncaught
//! exception), the plots and the hierarchy diagram are present (the page's script writes counts
//! into data attributes that --dump-dom shows), the animation advances when played (#autoplay),
//! and a screenshot of each page is kept under target/browser-test/. Skips with a message when no
//! Chromium is installed (CI installs Debian's `chromium` in scripts/setup.sh).
//! Layout rules, measured by tests/browser/layout_check.js in a 390 px (phone) and a
//! 1280 px wide window on the report, compare, fleet and vadd pages: no element's right edge beyond
//! the viewport outside its own scrolling box, no two text boxes of a plot overlapping, no knee or level
//! line through a text of a plot, no text of the hierarchy diagram passing its box, no text cut
//! at a plot's edge, every plot with x and y axis titles carrying a unit in brackets, no word of a
//! table broken mid-word, and the hierarchy diagram at full size. The fleet view of compare (three simulated GPUs, one slowed) has
//! its own test below.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_memscope");

/// How many headless Chromium processes the committed-reports check keeps running at once.
const CHROMIUM_AT_ONCE: usize = 2;
/// How many committed reports one Chromium loads (each in its own frame).
const REPORTS_PER_LOAD: usize = 10;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MEMSCOPE_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Where screenshots are kept: target/browser-test (or $CARGO_TARGET_DIR/browser-test).
fn artefact_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("browser-test");
    std::fs::create_dir_all(&dir).expect("create target/browser-test");
    dir
}

/// Run Chromium headless on `url` with extra flags; returns (stdout, stderr). Killed after 90 s.
fn chrome(bin: &Path, url: &str, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = tempfile::NamedTempFile::new().expect("stdout file");
    let err = tempfile::NamedTempFile::new().expect("stderr file");
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(out.reopen().expect("reopen"))
    .stderr(err.reopen().expect("reopen"));
    let mut child = cmd.spawn().expect("start chromium");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (std::fs::read_to_string(out.path()).unwrap_or_default(), std::fs::read_to_string(err.path()).unwrap_or_default())
}

/// Load a page: the DOM after `budget_ms` of virtual time, and the console lines.
fn load(bin: &Path, file: &Path, hash: &str, budget_ms: u32) -> (String, Vec<String>) {
    let url = format!("file://{}{hash}", file.canonicalize().expect("page path").display());
    let (dom, log) = chrome(bin, &url, &[&format!("--virtual-time-budget={budget_ms}"), "--dump-dom"]);
    let console = log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).map(String::from).collect();
    (dom, console)
}

/// What one frame of `load_many` saw: the page's data-rendered and data-plots attributes, and
/// every console call and uncaught error of the page (recorded by a script put before its own).
struct FrameLoad {
    rendered: Option<String>,
    plots: f64,
    console: Vec<String>,
}

/// Load several pages in one Chromium, each in a frame of its own (`srcdoc`, so the page around
/// can read the frame's document), and read back what each rendered, with Chromium's own console
/// lines (any frame's); the batch page is written to `batch`.
fn load_many(bin: &Path, pages: &[PathBuf], batch: &Path) -> (Vec<FrameLoad>, Vec<String>) {
    const RECORD: &str = "<script>window.__consoleLog=[];for(const k of ['log','info','warn','error','debug']){const o=console[k];console[k]=function(...a){window.__consoleLog.push(k+': '+a.join(' '));o.apply(console,a);};}window.addEventListener('error',e=>window.__consoleLog.push('Uncaught '+e.message));</script>";
    const COLLECT: &str = "<script>window.addEventListener('load',()=>{const out=[...document.querySelectorAll('iframe')].map(f=>{const b=f.contentDocument&&f.contentDocument.body;return{rendered:b?b.dataset.rendered||null:null,plots:b?Number(b.dataset.plots||-1):-1,console:f.contentWindow.__consoleLog||['no console recorder']};});const pre=document.createElement('pre');pre.id='batch';pre.textContent=JSON.stringify(out);document.body.appendChild(pre);});</script>";
    let mut doc = String::from("<!DOCTYPE html><html><body style=\"margin:0\">");
    for page in pages {
        let html = std::fs::read_to_string(page).expect("page");
        let at = html.find("<head>").map_or(0, |i| i + "<head>".len());
        let recorded = format!("{}{RECORD}{}", &html[..at], &html[at..]);
        let quoted = recorded.replace('&', "&amp;").replace('"', "&quot;");
        doc.push_str(&format!("<iframe style=\"width:1400px;height:600px;border:0\" srcdoc=\"{quoted}\"></iframe>"));
    }
    doc.push_str(COLLECT);
    doc.push_str("</body></html>");
    std::fs::write(batch, doc).expect("write batch page");
    let (dom, console) = load(bin, batch, "", 1000);
    let start =
        dom.rfind("<pre id=\"batch\">").unwrap_or_else(|| panic!("{}: the frames were not read", batch.display()));
    let text = &dom[start + "<pre id=\"batch\">".len()..];
    let text = &text[..text.find("</pre>").expect("end of the batch's record")];
    let unescaped = text.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    let frames: Vec<serde_json::Value> = serde_json::from_str(&unescaped).expect("batch JSON");
    assert_eq!(frames.len(), pages.len(), "{}: one record per frame", batch.display());
    let frames = frames
        .iter()
        .map(|f| FrameLoad {
            rendered: f["rendered"].as_str().map(String::from),
            plots: f["plots"].as_f64().unwrap_or(-1.0),
            console: f["console"].as_array().into_iter().flatten().map(|v| v.to_string()).collect(),
        })
        .collect();
    (frames, console)
}

fn screenshot(bin: &Path, file: &Path, hash: &str, png: &Path, size: &str) {
    let url = format!("file://{}{hash}", file.canonicalize().expect("page path").display());
    let _ = std::fs::remove_file(png);
    chrome(
        bin,
        &url,
        &[&format!("--screenshot={}", png.display()), &format!("--window-size={size}"), "--virtual-time-budget=2000"],
    );
    let len = std::fs::metadata(png).map(|m| m.len()).unwrap_or(0);
    assert!(len > 10_000, "screenshot {} missing or empty ({len} bytes)", png.display());
}

/// The value of a data attribute on <body> in a dumped DOM.
fn body_attr(dom: &str, name: &str) -> Option<String> {
    let body = &dom[dom.find("<body")?..];
    let tag = &body[..body.find('>')?];
    let key = format!("data-{name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

fn num(dom: &str, name: &str) -> f64 {
    body_attr(dom, name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no data-{name} on <body>"))
}

/// The layout rules on `page` at a phone's width (390 px) and a desktop's (1280 px); panics naming
/// every offender. Plots are required where the page has any; the hierarchy diagram is drawn at
/// full size (in its own scrolling box on a phone), never shrunk.
fn assert_layout(bin: &Path, page: &Path, what: &str) {
    for width in [390, 1280] {
        assert_layout_at(bin, page, what, width);
    }
}

fn assert_layout_at(bin: &Path, page: &Path, what: &str, width: u32) {
    let html = std::fs::read_to_string(page).expect("page");
    let script = format!("<script>{}</script></body>", include_str!("browser/layout_check.js"));
    let checked = page.with_extension(format!("layout-{width}.html"));
    let with_check = html.replacen("</body>", &script, 1);
    // Headless Chromium's window is at least 500 px wide: a phone's width is a frame of that width
    // inside a desktop window (the page in `srcdoc`, so the check can report to the page around).
    let (doc, window) = if width < 500 {
        let quoted = with_check.replace('&', "&amp;").replace('"', "&quot;");
        let frame = format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe style=\"width:{width}px;height:2000px;border:0\" srcdoc=\"{quoted}\"></iframe></body></html>"
        );
        (frame, 1280)
    } else {
        (with_check, width)
    };
    std::fs::write(&checked, doc).expect("write checked page");
    let url = format!("file://{}", checked.canonicalize().expect("page path").display());
    let size = format!("--window-size={window},2000");
    let (dom, _) = chrome(bin, &url, &[&size, "--virtual-time-budget=2000", "--dump-dom"]);
    let start = dom.rfind("<pre id=\"layout-check\">{").unwrap_or_else(|| panic!("{what}: layout check did not run"));
    let text = &dom[start + "<pre id=\"layout-check\">".len()..];
    let text = &text[..text.find("</pre>").expect("end of layout check")];
    let unescaped = text.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&unescaped).expect("layout JSON");
    let what = format!("{what} at {width} px");
    assert_eq!(v["viewport"].as_f64(), Some(width as f64), "{what}: window has another width");
    if html.contains("<svg class=\"plot\"") {
        assert!(v["plots"].as_u64().unwrap_or(0) >= 1, "{what}: no plots measured");
    }
    for rule in ["wide", "overlaps", "crossed", "overflow", "clipped", "axes", "broken"] {
        let list = v[rule].as_array().cloned().unwrap_or_default();
        assert!(list.is_empty(), "{what}: {rule}: {list:#?}");
    }
    if let Some(scale) = v["diagram_scale"].as_f64() {
        assert!(scale > 0.99, "{what}: the hierarchy diagram is shrunk to {scale:.2} of its size");
    }
}

fn memscope(args: &[&str]) {
    let out = Command::new(BIN).args(args).output().expect("run memscope");
    assert!(
        out.status.success(),
        "memscope {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn html_outputs_render_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SKIPPED: no chromium in PATH (install Debian's `chromium`, or set MEMSCOPE_CHROMIUM)");
        return;
    };
    let art = artefact_dir();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let out = d.join("sim");
    // A real results file: the simulated RTX 4090 through the discovery probes.
    memscope(&["run", "--target", "sim:rtx4090", "--quick", "--quiet", "--out", out.to_str().unwrap()]);
    let results = out.join("results.json");
    let report = d.join("report.html");
    memscope(&["report", results.to_str().unwrap(), "--html", report.to_str().unwrap()]);
    let (dom, console) = load(&bin, &report, "", 1000);
    assert!(console.is_empty(), "console output on the report: {console:#?}");
    assert_eq!(body_attr(&dom, "rendered").as_deref(), Some("ok"), "report script did not run");
    let series = serde_json::from_slice::<serde_json::Value>(&std::fs::read(&results).unwrap()).unwrap()["series"]
        .as_object()
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(num(&dom, "plots") >= 1.0 || series == 0, "no plots for {series} series");
    assert!(num(&dom, "diagram") >= 3.0, "hierarchy diagram has fewer than 3 levels");
    assert!(dom.contains("id=\"hierarchy\""));
    assert!(num(&dom, "findings") >= 1.0);
    screenshot(&bin, &report, "", &art.join("report-sim-rtx4090.png"), "1400,2400");

    // Every committed results file renders too (results/<machine>/**/...results.json), with the
    // machine's model.json as the roofline when there is one.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut committed = vec![];
    if let Ok(machines) = std::fs::read_dir(repo.join("results")) {
        for m in machines.flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
            let model = m.join("model.json");
            let mut stack = vec![m.clone()];
            while let Some(dir) = stack.pop() {
                for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.to_string_lossy().ends_with("results.json") {
                        // (a simulated run beside the machine's, e.g. of its calibrated preset,
                        // or a run of the machine's host CPU alone is another device: the model
                        // is attached only to runs with a CUDA target)
                        let gpu = std::fs::read_to_string(&p).is_ok_and(|t| t.contains("\"kind\": \"cuda\""));
                        committed.push((p, (model.is_file() && gpu).then(|| model.clone())));
                    }
                }
            }
        }
    }
    committed.sort();
    // Every report rendered by `memscope report`, then loaded REPORTS_PER_LOAD to a Chromium (each
    // in a frame of its own, `load_many`), CHROMIUM_AT_ONCE Chromiums at a time: a headless start
    // costs about as much CPU as the report it loads, and one start per file was most of this test
    // binary's time on the 2-core VM.
    let pages: Vec<PathBuf> = committed
        .iter()
        .enumerate()
        .map(|(i, (p, model))| {
            let html = d.join(format!("committed-{i}.html"));
            let mut args = vec!["report", p.to_str().unwrap(), "--html", html.to_str().unwrap()];
            if let Some(m) = model {
                args.extend(["--model", m.to_str().unwrap()]);
            }
            memscope(&args);
            html
        })
        .collect();
    let chunks: Vec<&[PathBuf]> = pages.chunks(REPORTS_PER_LOAD).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..CHROMIUM_AT_ONCE {
            s.spawn(|| loop {
                let c = next.fetch_add(1, Ordering::Relaxed);
                let Some(chunk) = chunks.get(c) else { break };
                let batch = d.join(format!("committed-batch-{c}.html"));
                let (frames, console) = load_many(&bin, chunk, &batch);
                assert!(console.is_empty(), "console output while loading {}: {console:#?}", batch.display());
                for (k, frame) in frames.iter().enumerate() {
                    let source = committed[c * REPORTS_PER_LOAD + k].0.display();
                    assert!(frame.console.is_empty(), "console output on the report of {source}: {:#?}", frame.console);
                    assert_eq!(frame.rendered.as_deref(), Some("ok"), "report script did not run on {source}");
                    assert!(frame.plots >= 1.0, "no plots in the report of {source}");
                }
            });
        }
    });
    let last = pages.last().expect("committed results files");
    screenshot(&bin, last, "", &art.join("report-committed-latest.png"), "1400,2400");

    // The layout rules on the committed H200 report (with its bottleneck-model run) and on
    // compare pages: the H200's two runs, and two CPU-and-simulator runs of the development VM.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let h200 = data.join("h200-full-run1.json");
    let h200_page = d.join("h200.html");
    memscope(&[
        "report",
        h200.to_str().unwrap(),
        "--model",
        data.join("h200-model.json").to_str().unwrap(),
        "--html",
        h200_page.to_str().unwrap(),
    ]);
    assert_layout(&bin, &h200_page, "the H200 report");
    assert_layout(&bin, &report, "the simulated RTX 4090 report");
    let h200_cmp = d.join("h200-compare.html");
    let h200_run2 = data.join("h200-full-run2.json");
    memscope(&["compare", h200.to_str().unwrap(), h200_run2.to_str().unwrap(), "--html", h200_cmp.to_str().unwrap()]);
    assert_layout(&bin, &h200_cmp, "compare of the H200's two runs");
    let cpu_cmp = d.join("cpu-compare.html");
    memscope(&[
        "compare",
        data.join("dev-cpu-run-a.json").to_str().unwrap(),
        data.join("dev-cpu-run-b.json").to_str().unwrap(),
        "--html",
        cpu_cmp.to_str().unwrap(),
    ]);
    assert_layout(&bin, &cpu_cmp, "compare of two CPU + simulator runs");
    // CPU latency spans L1 (~1 ns) to DRAM (~100 ns): its compare plot needs a log y axis.
    let page = std::fs::read_to_string(&cpu_cmp).unwrap();
    let fig = &page[page.find("<figure data-series=\"cpu.latency\"").expect("cpu.latency compared")..];
    let fig = &fig[..fig.find("</figure>").unwrap()];
    assert!(fig.contains("class=\"yl\">latency [ns] (log scale)"), "CPU latency on a linear axis");

    // compare A A: every ratio 1, the shared series overlaid.
    let cmp = d.join("compare.html");
    memscope(&["compare", results.to_str().unwrap(), results.to_str().unwrap(), "--html", cmp.to_str().unwrap()]);
    let (dom, console) = load(&bin, &cmp, "", 1000);
    assert!(console.is_empty(), "console output on compare: {console:#?}");
    assert_eq!(body_attr(&dom, "rendered").as_deref(), Some("ok"));
    screenshot(&bin, &cmp, "", &art.join("compare.png"), "1400,1400");

    // The animation: autoplay advances frames, simulated time and retired requests.
    let anim = d.join("vadd.html");
    std::fs::write(&anim, animation_page(d)).expect("write animation");
    let (dom, console) = load(&bin, &anim, "#autoplay", 2500);
    assert!(console.is_empty(), "console output on the animation: {console:#?}");
    assert_eq!(body_attr(&dom, "ready").as_deref(), Some("1"), "player did not start");
    assert!(num(&dom, "frames") > 5.0, "animation did not advance: {:?}", body_attr(&dom, "frames"));
    assert!(num(&dom, "sim-ns") > 0.0);
    assert!(num(&dom, "retired") > 0.0, "no request retired while playing");
    // No canvas label crosses a panel (every line and dot is drawn inside one), overlaps another
    // label or passes the canvas's edge (measured by the player itself, animation.js).
    assert_eq!(body_attr(&dom, "label-clashes").as_deref(), Some("[]"), "vadd canvas labels clash");
    // The player fits a phone and a desktop too.
    assert_layout(&bin, &anim, "the vadd animation");
    // A full wave must stay smooth: the mean frame costs well under a 60 Hz frame here (about 2 ms
    // on a 2-core VM); 50 ms only catches a player that went quadratic.
    let draw_ms = num(&dom, "draw-ms");
    assert!(draw_ms < 50.0, "a frame takes {draw_ms} ms");
    screenshot(&bin, &anim, "#t=0.45", &art.join("vadd-animation.png"), "1400,900");
    // Opened plainly, the player starts at the busiest moment with requests in flight, not at an
    // empty t = 0, and the throughput bars have a scale.
    let (dom, console) = load(&bin, &anim, "", 1500);
    assert!(console.is_empty(), "console output on the animation: {console:#?}");
    assert!(num(&dom, "start-ns") > 0.0, "opened at t = 0");
    assert!(num(&dom, "sim-ns") > 0.0 && num(&dom, "flight") > 0.0, "no request in flight at the start");
    // ... and data already returning: the SM panel and the counters are not empty there.
    assert!(num(&dom, "retired") > 0.0, "nothing retired at the opening moment");
    assert!(dom.contains("id=\"start-note\""), "the start is explained");
    assert!(num(&dom, "mc-scale-gbs") > 0.0, "throughput bars without a scale");
}

/// `load_many` itself: a frame that logs, one that throws and one whose script never marks it
/// rendered are each seen, beside a good one (so the committed-reports check cannot pass vacuously).
#[test]
fn load_many_sees_each_frames_console_and_render_mark() {
    let Some(bin) = chromium() else {
        eprintln!("SKIPPED: no chromium in PATH (install Debian's `chromium`, or set MEMSCOPE_CHROMIUM)");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mark = "<script>document.body.dataset.rendered='ok';document.body.dataset.plots=2;</script>";
    let bodies = [
        format!("<p>good</p>{mark}"),
        format!("<script>console.log('said something')</script>{mark}"),
        format!("<script>null.x</script>{mark}"),
        "<p>never marked</p>".to_string(),
    ];
    let pages: Vec<PathBuf> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let p = dir.path().join(format!("p{i}.html"));
            std::fs::write(&p, format!("<!DOCTYPE html><html><head></head><body>{b}</body></html>")).unwrap();
            p
        })
        .collect();
    let (frames, _) = load_many(&bin, &pages, &dir.path().join("batch.html"));
    assert_eq!(frames.len(), 4);
    assert!(frames[0].console.is_empty() && frames[0].rendered.as_deref() == Some("ok") && frames[0].plots == 2.0);
    assert!(frames[1].console.iter().any(|l| l.contains("said something")), "{:?}", frames[1].console);
    assert!(frames[2].console.iter().any(|l| l.contains("Uncaught")), "{:?}", frames[2].console);
    assert_eq!(frames[3].rendered, None, "the unmarked frame is seen");
}

/// The fleet view of `memscope compare --html` (docs/GUIDE.md): three simulated GPUs of one model, the
/// third with a 10 % slower L2, renders without console output, marks the outlier cells, plots
/// the findings with outliers and keeps the layout rules.
#[test]
fn fleet_compare_page_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SKIPPED: no chromium in PATH (install Debian's `chromium`, or set MEMSCOPE_CHROMIUM)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let dump = Command::new(BIN).args(["sim", "dump", "--target", "sim:rtx4090"]).output().expect("sim dump");
    let base: serde_json::Value = serde_json::from_slice(&dump.stdout).expect("hierarchy JSON");
    let mut files = vec![];
    for name in ["a", "b", "slow"] {
        let mut h = base.clone();
        if name == "slow" {
            h["l2"]["hit_ns"] = serde_json::json!(h["l2"]["hit_ns"].as_f64().unwrap() * 1.1);
        }
        let hier = d.join(format!("{name}.json"));
        std::fs::write(&hier, serde_json::to_vec(&h).unwrap()).unwrap();
        let out = d.join(name);
        let target = format!("sim:{}", hier.display());
        memscope(&[
            "run",
            "--target",
            &target,
            "--quick",
            "--quiet",
            "--probes",
            "latency",
            "--out",
            out.to_str().unwrap(),
        ]);
        files.push(out.join("results.json").display().to_string());
    }
    let page = d.join("fleet.html");
    let mut args = vec!["compare"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--html", page.to_str().unwrap()]);
    memscope(&args);
    let (dom, console) = load(&bin, &page, "", 1000);
    assert!(console.is_empty(), "console output on the fleet page: {console:#?}");
    assert_eq!(body_attr(&dom, "rendered").as_deref(), Some("ok"), "fleet page script did not run");
    assert_eq!(num(&dom, "outliers"), 2.0, "l2.hit_latency_ns and its L1-path twin are the outliers");
    assert!(num(&dom, "plots") >= 1.0);
    assert_layout(&bin, &page, "the fleet compare page");
    screenshot(&bin, &page, "", &artefact_dir().join("compare-fleet.png"), "1400,1400");
}

/// The interconnect section (docs/INTERCONNECT.md): four simulated GPUs of one host with one slowed link, run
/// together; the report of GPU 0 shows the five peer matrices (four bandwidth, one latency).
#[test]
fn peer_matrix_report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SKIPPED: no chromium in PATH (install Debian's `chromium`, or set MEMSCOPE_CHROMIUM)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let dump = Command::new(BIN).args(["sim", "dump", "--target", "sim:rtx4090"]).output().expect("sim dump");
    let base: serde_json::Value = serde_json::from_slice(&dump.stdout).expect("hierarchy JSON");
    let mut targets = vec![];
    for i in 0..4 {
        let mut h = base.clone();
        h["name"] = serde_json::json!(format!("peer-gpu{i}"));
        h["links"] = serde_json::json!({"gpus": 4, "index": i, "pairs": [{"from": 2, "to": 1, "bytes_per_s": 2.8e11}]});
        let f = d.join(format!("g{i}.json"));
        std::fs::write(&f, serde_json::to_vec(&h).unwrap()).unwrap();
        targets.push(format!("sim:{}", f.display()));
    }
    let out = d.join("out");
    // (latency too: the layout check measures the page's plots)
    let t = targets.join(",");
    memscope(&[
        "run",
        "--target",
        &t,
        "--quick",
        "--quiet",
        "--probes",
        "latency,peer",
        "--out",
        out.to_str().unwrap(),
    ]);
    let page = d.join("peer.html");
    memscope(&["report", out.join("results.json").to_str().unwrap(), "--html", page.to_str().unwrap()]);
    let (dom, console) = load(&bin, &page, "", 1000);
    assert!(console.is_empty(), "console output on the peer page: {console:#?}");
    assert_eq!(body_attr(&dom, "rendered").as_deref(), Some("ok"));
    assert_eq!(num(&dom, "peer"), 5.0, "four bandwidth matrices and the latency matrix");
    assert!(dom.contains("class=\"outlier\""), "the slowed link is marked");
    assert_layout(&bin, &page, "the peer matrix report");
    screenshot(&bin, &page, "", &artefact_dir().join("report-peer.png"), "1400,1400");
}

/// The vadd page of a full wave of the 4090 (6,144 warps): from `memscope sim vadd --html` when
/// that command writes one, else the simulator's replay rendered through the library.
fn animation_page(d: &Path) -> Vec<u8> {
    let f = d.join("vadd-cli.html");
    let ok = Command::new(BIN)
        .args(["sim", "vadd", "--preset", "rtx4090", "--n", "196608", "--html", f.to_str().unwrap()])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    match std::fs::read(&f) {
        Ok(bytes) if ok && !bytes.is_empty() => bytes,
        _ => {
            eprintln!(
                "note: `memscope sim vadd --html` did not write a page; rendering the replay through the library"
            );
            let mut t = memscope_sim::SimTarget::from_preset("rtx4090").expect("rtx4090 preset");
            let (_, tl) = memscope_sim::vadd::run_vadd(&mut t, 6144 * 32, 6144).expect("vadd replay");
            memscope_report::animation::render(&tl.expect("timeline recorded"))
        }
    }
}
