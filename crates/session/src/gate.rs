//! The gate between the CPU lane and host-timed probes (`Probe::runs_alone`): a probe
//! that runs alone takes the gate exclusively; the CPU lane holds it shared while it works and, at
//! every step its probe reports (each progress call), steps out while a probe waits to run alone.
//! So a host-timed figure is never taken while the lane works, and the lane waits at most one of
//! its steps, not one of its probes. The gate logs what held it and when (seconds from its start),
//! so the results record that the two never overlapped.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

#[derive(Default)]
struct State {
    /// A probe runs alone, or waits to.
    alone: bool,
    /// The lane is working (between its enter and leave or pause).
    lane_busy: bool,
    /// When the lane last started working (seconds from the gate's start).
    lane_since: f64,
    log: GateLog,
}

/// What held the gate, in seconds from its start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GateLog {
    /// (probe key, from, to) of every probe that ran alone.
    pub alone: Vec<(String, f64, f64)>,
    /// (from, to) of every stretch the lane worked.
    pub lane: Vec<(f64, f64)>,
    /// Seconds the lane waited for probes running alone.
    pub lane_waited_s: f64,
}

impl GateLog {
    /// Stretches of the lane's work that overlap a probe running alone: (probe, overlap s).
    pub fn overlaps(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for (key, a0, a1) in &self.alone {
            for (l0, l1) in &self.lane {
                let o = a1.min(*l1) - a0.max(*l0);
                if o > 0.0 {
                    out.push((key.clone(), o));
                }
            }
        }
        out
    }

    /// As JSON for `environment.cpu_lane.gate`.
    pub fn to_json(&self) -> serde_json::Value {
        // (+ 0.0: an empty sum is -0.0)
        let r = |x: f64| (x * 1e4).round() / 1e4 + 0.0;
        serde_json::json!({
            "alone": self.alone.iter().map(|(k, a, b)| serde_json::json!([k, r(*a), r(*b)])).collect::<Vec<_>>(),
            "lane_stretches": self.lane.len(),
            "lane_busy_s": r(self.lane.iter().map(|(a, b)| b - a).sum::<f64>()),
            "lane_waited_s": r(self.lane_waited_s),
            "overlap_s": r(self.overlaps().iter().map(|(_, o)| o).sum::<f64>()),
        })
    }
}

/// The gate (one per session).
pub struct Gate {
    state: Mutex<State>,
    changed: Condvar,
    start: Instant,
}

impl Default for Gate {
    fn default() -> Self {
        Gate { state: Mutex::default(), changed: Condvar::new(), start: Instant::now() }
    }
}

impl Gate {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(g).unwrap_or_else(|e| e.into_inner())
    }

    /// A probe that runs alone starts: wait until no other does and the lane has stepped out.
    pub fn alone_begin(&self) -> f64 {
        let mut g = self.lock();
        while g.alone {
            g = self.wait(g);
        }
        g.alone = true;
        while g.lane_busy {
            g = self.wait(g);
        }
        self.now()
    }

    /// The probe that ran alone since `from` ends.
    pub fn alone_end(&self, key: &str, from: f64) {
        let mut g = self.lock();
        let to = self.now();
        g.log.alone.push((key.to_string(), from, to));
        g.alone = false;
        self.changed.notify_all();
    }

    /// The lane starts work (a probe or its next step): wait while a probe runs alone.
    pub fn lane_enter(&self) {
        let mut g = self.lock();
        let asked = self.now();
        while g.alone {
            g = self.wait(g);
        }
        let now = self.now();
        g.log.lane_waited_s += now - asked;
        g.lane_busy = true;
        g.lane_since = now;
    }

    /// The lane stops work (its probe ended, or it steps out).
    pub fn lane_leave(&self) {
        let mut g = self.lock();
        if g.lane_busy {
            let since = g.lane_since;
            let now = self.now();
            g.log.lane.push((since, now));
            g.lane_busy = false;
            self.changed.notify_all();
        }
    }

    /// Between two steps of the lane's probe: step out and back in if a probe waits to run alone.
    pub fn lane_checkpoint(&self) {
        if self.lock().alone {
            self.lane_leave();
            self.lane_enter();
        }
    }

    /// What held the gate so far.
    pub fn log(&self) -> GateLog {
        self.lock().log.clone()
    }
}

/// The progress of a lane probe: every call is a checkpoint of the gate, then passed on.
pub(crate) struct GatedProgress<'a> {
    pub gate: &'a Gate,
    pub inner: &'a dyn memscope_core::Progress,
}

impl memscope_core::Progress for GatedProgress<'_> {
    fn start(&self, total: u64, message: &str) {
        self.gate.lane_checkpoint();
        self.inner.start(total, message);
    }
    fn advance(&self, n: u64) {
        self.gate.lane_checkpoint();
        self.inner.advance(n);
    }
    fn message(&self, message: &str) {
        self.gate.lane_checkpoint();
        self.inner.message(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn the_lane_steps_out_at_its_next_checkpoint_and_waits_for_the_probe() {
        let gate = Arc::new(Gate::default());
        gate.lane_enter();
        let g2 = gate.clone();
        let alone = std::thread::spawn(move || {
            let from = g2.alone_begin();
            std::thread::sleep(Duration::from_millis(30));
            g2.alone_end("host-timed", from);
        });
        // the lane works in steps of 5 ms until the probe has run
        while gate.log().alone.is_empty() {
            std::thread::sleep(Duration::from_millis(5));
            gate.lane_checkpoint();
        }
        gate.lane_leave();
        alone.join().unwrap();
        let log = gate.log();
        assert_eq!(log.alone.len(), 1);
        assert!(log.lane.len() >= 2, "the lane stepped out once: {log:?}");
        assert!(log.overlaps().is_empty(), "{log:?}");
        assert!(log.lane_waited_s >= 0.02, "{log:?}");
    }

    #[test]
    fn overlaps_are_found_from_the_intervals() {
        let log = GateLog {
            alone: vec![("launch".into(), 1.0, 2.0)],
            lane: vec![(0.0, 1.0), (1.5, 3.0)],
            lane_waited_s: 0.0,
        };
        assert_eq!(log.overlaps(), vec![("launch".to_string(), 0.5)]);
    }
}
