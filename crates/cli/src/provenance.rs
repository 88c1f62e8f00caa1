//! Provenance of a run: tool version and git commit, command line, host, OS, CPU model and
//! timestamps (docs/ADDING_A_PROBE.md, measurement discipline: every result carries where and how it was made).

use serde_json::{json, Map, Value};

/// Tool identity for the results file.
pub fn tool() -> memscope_results::ToolInfo {
    let commit = env!("MEMSCOPE_GIT_COMMIT");
    memscope_results::ToolInfo {
        name: "memscope".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: if commit.is_empty() { None } else { Some(commit.to_string()) },
        command: std::env::args().collect(),
    }
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// The CPU model name from /proc/cpuinfo.
pub fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_string())
}

/// The current time as RFC 3339 UTC.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Host, OS, CPU and start time.
pub fn environment() -> Map<String, Value> {
    let os = std::fs::read_to_string("/etc/os-release").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("PRETTY_NAME="))
            .map(|l| l.trim_start_matches("PRETTY_NAME=").trim_matches('"').to_string())
    });
    let mut m = Map::new();
    m.insert("host".into(), json!(read_trim("/proc/sys/kernel/hostname")));
    m.insert("os".into(), json!(os.unwrap_or_else(|| std::env::consts::OS.to_string())));
    m.insert("kernel".into(), json!(read_trim("/proc/sys/kernel/osrelease")));
    m.insert("arch".into(), json!(std::env::consts::ARCH));
    m.insert("cpu_model".into(), json!(cpu_model()));
    m.insert("logical_cpus".into(), json!(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)));
    m.insert("started_at".into(), json!(now()));
    m
}
