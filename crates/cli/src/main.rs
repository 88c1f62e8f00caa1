//! The `memscope` binary: argument parsing and wiring only (docs/CONTRACTS.md). Every
//! subcommand lives in its own `cmd_*.rs`; measurement, analysis and export live in the library
//! crates.

mod cmd_compare;
mod cmd_compose;
mod cmd_docs;
mod cmd_explain;
mod cmd_export;
mod cmd_gpu;
mod cmd_hammer;
mod cmd_hash;
mod cmd_list;
mod cmd_merge;
mod cmd_predict;
mod cmd_report;
mod cmd_run;
mod cmd_sim;
mod error;
mod gpu_tables;
mod model_doc;
mod progress;
mod provenance;
mod quantity;
mod run_guard;
mod scheduler;
mod sizes;
mod targets;

use clap::{Parser, Subcommand};

/// memscope measures, models and simulates memory hierarchies: GPU first, the CPU too.
///
/// It follows loads and stores through every level of a GPU (or the host CPU), recovers each
/// level's latency, size, geometry and hash functions by timing experiments, measures the
/// ceilings of the bottleneck model in the same session, and replays kernels through a
/// simulated hierarchy. Exit codes: 0 success, 1 a probe or device failure (partial results
/// are still written), 2 bad usage or bad input.
#[derive(Parser, Debug)]
#[command(
    name = "memscope",
    version = env!("MEMSCOPE_VERSION"),
    about,
    long_about,
    after_help = "Reading the datasheet (value, cycles, spread (MAD), check:, confidence, warnings): docs/READING.md. \
                  A page per command: memscope man COMMAND."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process; boxing the larger argument structs buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Run the probes on one or more targets and write results.json (the main job).
    Run(cmd_run::Args),
    /// List the probe registry: key, description, applicable or waived and why.
    List(cmd_list::Args),
    /// Render a results file as HTML, Markdown or CSV.
    Report(cmd_report::Args),
    /// Compare two results files finding by finding; three or more (or merged), the fleet view.
    Compare(cmd_compare::Args),
    /// Merge the results files of many GPUs and hosts into one document (the fleet).
    Merge(cmd_merge::Args),
    /// The simulated hierarchy: dump a preset, replay vadd, chase, calibrate from results.
    Sim(cmd_sim::Args),
    /// Simulator configurations from a GPU run's results (accel-sim: GPGPU-Sim / Accel-Sim).
    Export(cmd_export::Args),
    /// Evaluate the seeds' L2 slice and set-index functions on addresses.
    Hash(cmd_hash::Args),
    /// Explain a PyTorch profiler trace: each kernel's op, work, bound and efficiency; dispatch and idle time.
    Explain(cmd_explain::Args),
    /// Predict an operation's time with the three-ceiling bottleneck model (seed 003).
    Predict(cmd_predict::Args),
    /// Measure the bottleneck model's ceilings on a GPU (bandwidth, launch floor, peak).
    Ceilings(cmd_gpu::CeilingsArgs),
    /// Predict, measure and score the 58-operation set of seed 003 on a GPU.
    Model(cmd_gpu::ModelArgs),
    /// Fusion experiment: x*y+z as two kernels versus one (seed 003).
    Fusion(cmd_gpu::FusionArgs),
    /// Batched-decode experiment: a GPT-2-small decode step at batch 1..512 (seed 003).
    Batch(cmd_gpu::BatchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(cmd_docs::CompletionsArgs),
    /// Print a man page (roff) to stdout: `memscope man | man -l -`, `memscope man run | man -l -`.
    Man(cmd_docs::ManArgs),
    /// The l2.slices probe's child process under Nsight Compute (internal).
    #[command(hide = true)]
    HammerLines(cmd_hammer::Args),
}

/// This executable, for helper processes (falls back to `memscope` on PATH).
fn self_command() -> std::process::Command {
    std::process::Command::new(std::env::current_exe().unwrap_or_else(|_| "memscope".into()))
}

fn main() {
    // Behave like other command-line tools when stdout is a closed pipe (`memscope ... | head`):
    // end quietly instead of panicking on the failed write.
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Library code that needs a helper process of memscope (the slice probe's hammer child, a run
    // continued in a fresh process) starts it through this hook.
    memscope_core::helper::register_self_command(self_command);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            // clap's whole message: the error naming the value or the missing arguments, the
            // usage line and the hint (each line escaped: nothing from the arguments reaches the
            // terminal as a control character); help and version go to stdout with exit 0.
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    std::process::exit(0);
                }
                _ => {
                    let text = e.render().to_string();
                    for line in text.lines() {
                        eprintln!("{}", memscope_report::hygiene::terminal(line));
                    }
                    std::process::exit(2);
                }
            }
        }
    };
    let result = match cli.command {
        Command::Run(a) => cmd_run::run(a),
        Command::List(a) => cmd_list::run(a),
        Command::Report(a) => cmd_report::run(a),
        Command::Compare(a) => cmd_compare::run(a),
        Command::Merge(a) => cmd_merge::run(a),
        Command::Sim(a) => cmd_sim::run(a),
        Command::Export(a) => cmd_export::run(a),
        Command::Hash(a) => cmd_hash::run(a),
        Command::Explain(a) => cmd_explain::run(a),
        Command::Predict(a) => cmd_predict::run(a),
        Command::Ceilings(a) => cmd_gpu::ceilings(a),
        Command::Model(a) => cmd_gpu::model(a),
        Command::Fusion(a) => cmd_gpu::fusion(a),
        Command::Batch(a) => cmd_gpu::batch(a),
        Command::Completions(a) => cmd_docs::completions(a, <Cli as clap::CommandFactory>::command()),
        Command::Man(a) => cmd_docs::man(a, <Cli as clap::CommandFactory>::command()),
        Command::HammerLines(a) => cmd_hammer::run(a),
    };
    if let Err(e) = result {
        // (messages quote input: no control character from it reaches the terminal)
        eprintln!("memscope: {}", memscope_report::hygiene::terminal(&e.to_string()));
        std::process::exit(e.exit_code());
    }
}
