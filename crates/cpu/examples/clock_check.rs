//! Prints the CPU target's clock, its cross-checks and the OS-reported caches as JSON (what
//! scripts/cpu-check.sh shows first).

use memscope_core::Target;

fn main() {
    let t = memscope_cpu::CpuTarget::new().expect("cpu target");
    let info = t.info();
    let out = serde_json::json!({
        "clock_hz": info.clock_hz,
        "clock": info.details.get("clock"),
        "hypervisor": info.details.get("hypervisor"),
        "os_reported_caches": info.details.get("os_reported_caches"),
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("json"));
}
