//! JSON writer: pretty bytes, and an atomic write (temp file in the same folder + rename) so an
//! interrupted run never leaves a torn results file (hyperfine re-exports after every benchmark).

use crate::results::Results;
use std::io::Write;
use std::path::Path;

/// Pretty JSON bytes of a results document, newline-terminated.
pub fn to_bytes(results: &Results) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(results).expect("results serialise");
    out.push(b'\n');
    out
}

/// Write `bytes` to `path` atomically: a temp file beside it, fsync, rename over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "results.json".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        write_atomic(&p, b"{\"a\": 1}\n").unwrap();
        write_atomic(&p, b"{\"b\": 2}\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"b\": 2}\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "temp file left behind: {names:?}");
    }

    #[test]
    fn atomic_write_into_missing_folder_fails_without_creating_target() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope").join("results.json");
        assert!(write_atomic(&p, b"{}").is_err());
        assert!(!p.exists());
    }
}
