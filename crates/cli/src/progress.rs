//! Progress on stderr: one indicatif bar per probe, hidden when stderr is not a terminal or with
//! --quiet. Implements the library's `Progress` and the session's `Observer`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress bar for one probe.
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// A bar labelled `label` (e.g. "cuda:0 latency"); hidden when `quiet` or not a terminal.
    pub fn new(label: &str, quiet: bool) -> Self {
        let bar = ProgressBar::new(1);
        if quiet || !std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template("{prefix:>22.bold} [{bar:30}] {pos}/{len} {elapsed:>4} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Bar { bar }
    }
    pub fn finish(&self, msg: &str) {
        self.bar.finish_with_message(msg.to_string());
    }
}

impl memscope_core::Progress for Bar {
    fn start(&self, total: u64, message: &str) {
        self.bar.set_length(total.max(1));
        self.bar.set_position(0);
        self.bar.set_message(message.to_string());
    }
    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }
    fn message(&self, message: &str) {
        self.bar.set_message(message.to_string());
    }
}

/// The run's observer: a bar per probe on the lanes whose progress is shown.
pub struct Bars {
    pub quiet: bool,
}

impl memscope_session::ProbeProgress for Bar {
    fn finish(&self, outcome: &str) {
        Bar::finish(self, outcome);
    }
}

impl memscope_session::Observer for Bars {
    fn probe_started(&self, target: &str, probe: &str, shown: bool) -> Box<dyn memscope_session::ProbeProgress> {
        Box::new(Bar::new(&format!("{target} {probe}"), self.quiet || !shown))
    }
}
