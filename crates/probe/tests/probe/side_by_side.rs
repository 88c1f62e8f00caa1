//! Independent simulated cases side by side: each case builds its own target, so a test that
//! checks many random hierarchies can run them on MEMSCOPE_THREADS threads (default 2, the CI
//! machine's cores) instead of one after another; the results come back in case order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every case, on MEMSCOPE_THREADS threads; the results in the order of `cases`. A panic in
/// any case fails the calling test once every thread has stopped.
pub fn map<T: Sync, R: Send>(cases: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads: usize = std::env::var("MEMSCOPE_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(2).max(1);
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(cases.len()));
    std::thread::scope(|s| {
        for _ in 0..threads.min(cases.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let r = f(case);
                done.lock().unwrap().push((i, r));
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}
