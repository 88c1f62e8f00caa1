//! Writes the player page for a synthetic timeline (not a simulation) to the path given, for
//! trying the player: `cargo run -p memscope-report --example synthetic_animation -- /tmp/a.html 6144`.
fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "synthetic-animation.html".into());
    let warps = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(6144);
    let page = memscope_report::animation::render_with_note(
        &memscope_report::animation::synthetic(warps),
        "Synthetic timeline with made-up latencies: a test of the player, not a simulation.",
    );
    std::fs::write(&path, page).expect("write");
}
