//! A run owns its output (docs/GUIDE.md): a lock file in the `--out` folder (`.memscope.lock`, holding
//! the pid and `flock`ed; a second run on the same folder gets exit 2 naming that pid; the kernel
//! drops the lock of a process that died, so its file is taken over, by exactly one run), and on SIGINT or SIGTERM a watcher thread marks every file the session
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

/// Held for the whole run: the lock file, open and `flock`ed; dropping it removes the file and
/// releases the lock.
pub struct Guard {
    lock: Option<(PathBuf, std::fs::File)>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // (removed while still locked, so a waiting run sees the file gone and opens a new one)
        if let Some((l, _file)) = self.lock.take() {
            let _ = std::fs::remove_file(l);
        }
        lock_state().lock = None;
    }
}

fn held_by(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.trim().parse::<i32>() {
        Ok(pid) => format!("pid {pid}"),
        Err(_) => "a process starting".to_string(),
    }
}

/// Open (creating it if missing, never through a symlink) the lock file and `flock` it without
/// waiting. `Ok(None)`: another process holds it, or it was replaced while we locked (retry).
fn try_lock(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // SAFETY: flock on a descriptor we own; released when the file is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::WouldBlock { Ok(None) } else { Err(e) };
    }
    // The holder before us may have removed the file after we opened it: the lock we hold is
    // then on a file nobody else will open; only the file at `path` counts.
    let ours = f.metadata()?;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.ino() == ours.ino() && m.dev() == ours.dev() => Ok(Some(f)),
        _ => Ok(None),
    }
}

/// Take the lock on `out` (which exists). `continuing`: this process continues a parent's run
/// (`--continue-from`), whose lock it shares. The lock is an `flock` on `.memscope.lock` (which
/// holds the pid for the message): the kernel drops it when its holder dies, so a stale lock file
/// is taken over, and two runs taking it over at once cannot both get it.
pub fn acquire(out: &Path, continuing: bool) -> Result<Guard, CliError> {
    if continuing {
        return Ok(Guard { lock: None });
    }
    let path = out.join(LOCK_NAME);
    let cannot = |e: std::io::Error| {
        CliError::usage(format!("--out {}: cannot take the lock {}: {e}", out.display(), path.display()))
    };
    for _ in 0..100 {
        match try_lock(&path).map_err(cannot)? {
            Some(mut f) => {
                use std::io::{Seek, Write};
                let written = f
                    .set_len(0)
                    .and_then(|_| f.seek(std::io::SeekFrom::Start(0)))
                    .and_then(|_| f.write_all(format!("{}\n", std::process::id()).as_bytes()))
                    .and_then(|_| f.sync_all());
                if let Err(e) = written {
                    // (a full disk: no empty lock file left behind)
                    let _ = std::fs::remove_file(&path);
                    return Err(cannot(e));
                }
                lock_state().lock = Some(path.clone());
                return Ok(Guard { lock: Some((path, f)) });
            }
            None => {
                if std::fs::symlink_metadata(&path).is_ok() && !is_replaced_soon(&path) {
                    return Err(CliError::usage(format!(
                        "--out {}: in use by another memscope run ({}, lock file {}); \
                         choose another --out folder or wait for it",
                        out.display(),
                        held_by(&path),
                        path.display()
                    )));
                }
            }
        }
    }
    Err(CliError::usage(format!("--out {}: cannot take the lock {}", out.display(), path.display())))
}

/// Whether the lock file at `path` is locked by nobody right now (its holder is removing it):
/// then try again.
fn is_replaced_soon(path: &Path) -> bool {
    use std::os::unix::io::AsRawFd;
    let Ok(f) = std::fs::File::open(path) else { return true };
    // SAFETY: a non-blocking shared flock probe on our own descriptor, released at once.
    let free = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    if free {
        std::thread::sleep(Duration::from_millis(5));
    }
    free
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
        if written.is_empty() {
            "(none: not written yet, or finished before the signal)".to_string()
        } else {
            written.join(", ")
        }
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
    memscope_results::json::check_destination(path)
        .map_err(|e| CliError::usage(format!("{opt} {}: {e}", path.display())))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(CliError::usage(format!("{opt} {}: folder {} does not exist", path.display(), parent.display())));
    }
    memscope_results::json::check_folder_writable(&parent).map_err(|e| {
        CliError::usage(format!("{opt} {}: folder {} is not writable: {e}", path.display(), parent.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_a_stale_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let g = acquire(dir.path(), false).unwrap();
        // a second taker (another open file: flock conflicts even within one process)
        let e = acquire(dir.path(), false).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(&format!("pid {}", std::process::id())), "{e}");
        drop(g);
        assert!(!dir.path().join(LOCK_NAME).exists());
        // a lock file nobody holds (its holder was killed), whatever it says: taken over
        for stale in ["1\n", "2147483000\n", "junk", ""] {
            std::fs::write(dir.path().join(LOCK_NAME), stale).unwrap();
            let g = acquire(dir.path(), false).unwrap();
            let held = std::fs::read_to_string(dir.path().join(LOCK_NAME)).unwrap();
            assert_eq!(held.trim(), std::process::id().to_string());
            drop(g);
        }
    }

    #[test]
    fn a_symlink_at_the_lock_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(LOCK_NAME)).unwrap();
        assert_eq!(acquire(dir.path(), false).err().unwrap().exit_code(), 2);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}
