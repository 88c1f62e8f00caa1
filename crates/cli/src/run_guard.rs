//! A run owns its output (docs/GUIDE.md): a lock file in the `--out` folder (`.memscope.lock`, holding
//! the pid; a second run on the same folder gets exit 2 naming that pid; a lock whose process is
//! gone is taken over), and on SIGINT or SIGTERM a watcher thread marks every file the session
//! wrote so far as interrupted (through its `Ledger`, which knows each file's latest state and
//! the planned probes), listing the planned probes with no record, removes the lock and ends the
//! process with exit 1 (partial results written). A `--continue-from` child (after a GPU fault)
//! gets the signal passed on and is waited for first, so its probes are kept.

use crate::error::CliError;
use memscope_session::Ledger;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Name of the lock file inside the `--out` folder.
pub const LOCK_NAME: &str = ".memscope.lock";

/// The signal received (0: none), set by the handler and read by the watcher thread.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

#[derive(Default)]
struct State {
    /// The running session's files, plan and continuing child.
    ledger: Option<Ledger>,
    lock: Option<PathBuf>,
}

fn state() -> &'static Mutex<State> {
    static S: OnceLock<Mutex<State>> = OnceLock::new();
    S.get_or_init(Mutex::default)
}

fn lock_state() -> std::sync::MutexGuard<'static, State> {
    state().lock().unwrap_or_else(|p| p.into_inner())
}

/// Held for the whole run: dropping it removes the lock file.
pub struct Guard {
    lock: Option<PathBuf>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(l) = self.lock.take() {
            let _ = std::fs::remove_file(l);
        }
        lock_state().lock = None;
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists (EPERM: it exists, another user's).
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// Take the lock on `out` (which exists). `continuing`: this process continues a parent's run
/// (`--continue-from`), whose lock it shares.
pub fn acquire(out: &Path, continuing: bool) -> Result<Guard, CliError> {
    if continuing {
        return Ok(Guard { lock: None });
    }
    let path = out.join(LOCK_NAME);
    let me = std::process::id();
    for _ in 0..2 {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                use std::io::Write;
                f.write_all(format!("{me}\n").as_bytes())
                    .map_err(|e| CliError::usage(format!("--out {}: cannot write the lock: {e}", out.display())))?;
                lock_state().lock = Some(path.clone());
                return Ok(Guard { lock: Some(path) });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                match text.trim().parse::<i32>() {
                    Ok(pid) if alive(pid) && pid as u32 != me => {
                        return Err(CliError::usage(format!(
                            "--out {}: in use by another memscope run (pid {pid}, lock file {}); \
                             choose another --out folder or wait for it",
                            out.display(),
                            path.display()
                        )));
                    }
                    // stale (the holder was killed) or unreadable: take it over
                    _ => {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
            Err(e) => return Err(CliError::usage(format!("--out {}: cannot create the lock: {e}", out.display()))),
        }
    }
    Err(CliError::usage(format!("--out {}: cannot take the lock {}", out.display(), path.display())))
}

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// Install the SIGINT/SIGTERM handlers and the watcher thread, for the session's `ledger`.
pub fn watch(ledger: Ledger) {
    lock_state().ledger = Some(ledger);
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
    std::thread::spawn(|| loop {
        std::thread::sleep(Duration::from_millis(20));
        let sig = SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            interrupted(sig);
        }
    });
}

fn interrupted(sig: i32) -> ! {
    let name = if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
    let ledger = lock_state().ledger.clone().unwrap_or_default();
    if let Some(pid) = ledger.child() {
        // The child writes the same files: pass the signal on, let it mark what it measured,
        // then take the files as it left them.
        // SAFETY: signalling and reaping our own child.
        unsafe {
            libc::kill(pid as i32, sig);
            let mut status = 0;
            libc::waitpid(pid as i32, &mut status, 0);
        }
    }
    // (no write of the session lands after this)
    let done = ledger.interrupt(name, &crate::provenance::now());
    if let Some(l) = lock_state().lock.take() {
        let _ = std::fs::remove_file(l);
    }
    let written: Vec<String> = done.written.iter().map(|p| p.display().to_string()).collect();
    eprintln!(
        "memscope: interrupted by {name}; {} probe(s) did not run; results marked interrupted: {}",
        done.probes_not_run.len(),
        if written.is_empty() { "(none written yet)".to_string() } else { written.join(", ") }
    );
    std::process::exit(1);
}

/// Check before any work that the output file `path` of option `opt` can be written: not a
/// folder, its folder exists, and a file can be created there (exit 2 naming the option).
pub fn check_output_file(opt: &str, path: &Path) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.is_dir() {
        return Err(CliError::usage(format!("{opt} {}: is a folder, expected a file name", path.display())));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(CliError::usage(format!("{opt} {}: folder {} does not exist", path.display(), parent.display())));
    }
    let probe = parent.join(format!(".memscope-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| {
        CliError::usage(format!("{opt} {}: folder {} is not writable: {e}", path.display(), parent.display()))
    })?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_a_stale_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let g = acquire(dir.path(), false).unwrap();
        // the same process may re-take its own lock (a stale file with our pid)
        drop(g);
        assert!(!dir.path().join(LOCK_NAME).exists());
        // a live holder: pid 1 always exists
        std::fs::write(dir.path().join(LOCK_NAME), "1\n").unwrap();
        let e = acquire(dir.path(), false).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("pid 1"), "{e}");
        // a dead holder (pid far above pid_max) or garbage: taken over
        std::fs::write(dir.path().join(LOCK_NAME), "2147483000\n").unwrap();
        let g = acquire(dir.path(), false).unwrap();
        let held = std::fs::read_to_string(dir.path().join(LOCK_NAME)).unwrap();
        assert_eq!(held.trim(), std::process::id().to_string());
        drop(g);
        std::fs::write(dir.path().join(LOCK_NAME), "junk").unwrap();
        assert!(acquire(dir.path(), false).is_ok());
    }
}
