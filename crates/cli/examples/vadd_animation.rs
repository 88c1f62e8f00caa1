//! Replays vadd on a simulated preset and writes the animation page, for trying the player
//! without the CLI: `cargo run --release -p memscope --example vadd_animation -- OUT.html
//! [PRESET] [WARPS]` (default rtx4090, 6144 warps = one full wave of the 4090).
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "vadd.html".into());
    let preset = args.next().unwrap_or_else(|| "rtx4090".into());
    let warps: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(6144);
    let mut t = memscope_sim::SimTarget::from_preset(&preset).expect("preset");
    let (_, tl) = memscope_sim::vadd::run_vadd(&mut t, warps * 32, warps).expect("replay");
    let tl = tl.expect("timeline recorded");
    std::fs::write(&path, memscope_report::animation::render(&tl)).expect("write");
}
