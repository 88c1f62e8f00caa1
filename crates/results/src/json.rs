//! JSON writer and the one file-writing path of every memscope output (docs/CONTRACTS.md,
//! "Files written"): pretty bytes with C1 controls and bidirectional overrides escaped, and an
//! atomic write — a temp file created exclusively (`O_CREAT|O_EXCL`, so a planted symlink is never
//! followed) under an unpredictable name in the destination's folder, fsync, rename over the
//! destination — that refuses a destination that exists and is not a regular file and removes
//! its temp file on any error. An interrupted run never leaves a torn results file (hyperfine
//! re-exports after every benchmark).

use crate::results::Results;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Pretty JSON bytes of a results document, newline-terminated.
pub fn to_bytes(results: &Results) -> Vec<u8> {
    to_pretty(results)
}

/// Pretty JSON bytes of any value, newline-terminated, with DEL and every C1 control (U+007F-U+009F) and
/// bidirectional override (U+202A-E, U+2066-9) written as a `\uXXXX` escape, so the text cannot
/// act on a terminal or reorder what a reader sees (serde_json escapes C0 controls already).
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Escaping(serde_json::ser::PrettyFormatter::new()));
    value.serialize(&mut ser).expect("JSON values serialise");
    out.push(b'\n');
    out
}

fn escaped_in_json(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// serde_json's pretty formatter with C1 controls and bidi overrides escaped in strings.
struct Escaping(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for Escaping {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if escaped_in_json(c) {
                w.write_all(&fragment.as_bytes()[start..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Ok when `path` does not exist or is a regular file (not followed: a symlink is refused too);
/// otherwise an `InvalidInput` error saying what it is.
pub fn check_destination(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a folder"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("exists and is {what}, not a regular file; memscope only replaces regular files"),
    ))
}

/// Check that a file can be created in `dir`, the way `write_atomic` creates its temp files
/// (exclusively, under an unpredictable name), removing it again.
pub fn check_folder_writable(dir: &Path) -> std::io::Result<()> {
    tempfile::Builder::new().prefix(".memscope-write-test.").tempfile_in(dir).map(drop)
}

/// Write `bytes` to `path` atomically: a temp file created exclusively beside it, fsync, rename
/// over the target (and fsync of the folder). Refuses a `path` that exists and is not a regular
/// file; the temp file is removed on any error.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    check_destination(path)?;
    let dir = folder_of(path);
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "results.json".into());
    // (created 0666 less the umask, as a plain create would; tempfile's default is 0600)
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(&dir)?;
    // (on error the NamedTempFile drops and removes the temp file)
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Read at most `max_bytes + 1` bytes of `path`: a reader that bounds its input sees a file over
/// its bound as over it without reading the whole file into memory. A gzip file (its first two
/// bytes 1f 8b, as the `.json.gz` files under results/ are) is read decompressed, the bound
/// applying to what it expands to.
pub fn read_limited(path: &Path, max_bytes: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut raw = Vec::new();
    std::fs::File::open(path)?.take(max_bytes as u64 + 1).read_to_end(&mut raw)?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..])
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| std::io::Error::new(e.kind(), format!("not a readable gzip file: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<std::ffi::OsString> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect()
    }

    #[test]
    fn read_limited_reads_gzip_decompressed_and_bounds_what_it_expands_to() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let text = b"{\"schema\": \"memscope/1\"}\n".repeat(100);
        let gz = |bytes: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(bytes).unwrap();
            e.finish().unwrap()
        };
        let p = dir.path().join("results.json.gz");
        std::fs::write(&p, gz(&text)).unwrap();
        assert_eq!(read_limited(&p, 1 << 20).unwrap(), text);
        // Over the bound once expanded: one byte past it, as for a plain file.
        assert_eq!(read_limited(&p, 100).unwrap().len(), 101);
        let plain = dir.path().join("results.json");
        std::fs::write(&plain, &text).unwrap();
        assert_eq!(read_limited(&plain, 1 << 20).unwrap(), text);
        // A gzip header over bytes that are not gzip: an error naming it.
        let bad = dir.path().join("bad.json.gz");
        std::fs::write(&bad, [0x1f, 0x8b, 0, 1, 2, 3]).unwrap();
        let e = read_limited(&bad, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("not a readable gzip file"), "{e}");
    }

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        write_atomic(&p, b"{\"a\": 1}\n").unwrap();
        write_atomic(&p, b"{\"b\": 2}\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"b\": 2}\n");
        // the mode a plain create gives (0666 less the umask), not a temp file's 0600
        use std::os::unix::fs::PermissionsExt;
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), mode(&plain));
        std::fs::remove_file(&plain).unwrap();
        assert_eq!(names(dir.path()).len(), 1, "temp file left behind: {:?}", names(dir.path()));
        check_folder_writable(dir.path()).unwrap();
        assert_eq!(names(dir.path()).len(), 1, "write test left behind: {:?}", names(dir.path()));
    }

    #[test]
    fn atomic_write_into_missing_folder_fails_without_creating_target() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope").join("results.json");
        assert!(write_atomic(&p, b"{}").is_err());
        assert!(!p.exists());
    }

    #[test]
    fn non_regular_destinations_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = write_atomic(&link, b"x").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        let e = write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let e = write_atomic(dir.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
        assert_eq!(names(dir.path()).len(), 2, "{:?}", names(dir.path()));
    }

    #[test]
    fn json_escapes_c1_controls_and_bidi_overrides() {
        let s = "a\u{9b}2J\u{202e}b\u{1b}c é";
        let text = String::from_utf8(to_pretty(&serde_json::json!({ "k": s }))).unwrap();
        assert!(!text.contains(['\u{9b}', '\u{202e}', '\u{1b}']), "{text}");
        assert!(text.contains("\\u009b") && text.contains("\\u202e") && text.contains('é'), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["k"], s);
    }
}
