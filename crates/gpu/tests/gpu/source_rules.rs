//! Rules of the one GPU layer (docs/ARCHITECTURE.md, "The GPU layer"), kept true by a scan of the
//! workspace's sources: driver calls (the `cu*` functions of cudarc's `sys` module) appear only in
//! this crate's src/, no result in this crate or in crates/cuda (the GPU target on top of it)
//! carries a bare string as its error, and every kernel the code names literally (`Module::X,
//! "kernel"` in probes, `launch("kernel"` in the ops) is in the registry's list for that module
//! (whose lists tests/gpu/kernels_compile.rs checks against the PTX entry points).

use memscope_gpu::Module;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's crates/ folder.
fn crates_dir() -> PathBuf {
    crate_dir().parent().expect("crates/").to_path_buf()
}

/// The crates on the GPU layer whose sources the error and kernel-name rules cover.
const GPU_CRATES: [&str; 2] = ["gpu", "cuda"];

/// The lines of `text` where "Result<" is followed on the same line, before any ';', by "String>"
/// (what the grep finds).
fn string_results(text: &str) -> Vec<usize> {
    let open = ["Res", "ult<"].concat();
    let close = ["Str", "ing>"].concat();
    let mut hits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (i, _) in line.match_indices(&open) {
            let rest = &line[i..];
            let upto = rest.find(';').unwrap_or(rest.len());
            if rest[..upto].contains(&close) {
                hits.push(n + 1);
                break;
            }
        }
    }
    hits
}

#[test]
fn driver_calls_live_only_in_the_gpu_layer() {
    let needle = ["sys", "::cu"].concat();
    let layer = crate_dir().join("src");
    let mut files = Vec::new();
    rust_files(&crates_dir(), &mut files);
    assert!(files.len() > 50, "the scan found the workspace's sources");
    let bad: Vec<String> = files
        .iter()
        .filter(|p| !p.starts_with(&layer))
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&needle)))
        .map(|p| p.display().to_string())
        .collect();
    assert!(bad.is_empty(), "driver calls outside crates/gpu/src/: {bad:?}");
}

#[test]
fn no_string_errors_in_the_gpu_crates() {
    let mut files = Vec::new();
    for c in GPU_CRATES {
        for d in ["src", "tests", "examples"] {
            rust_files(&crates_dir().join(c).join(d), &mut files);
        }
    }
    assert!(files.iter().any(|p| p.starts_with(crates_dir().join("cuda"))), "the scan found crates/cuda");
    let bad: Vec<String> = files
        .iter()
        .flat_map(|p| {
            let t = std::fs::read_to_string(p).unwrap_or_default();
            string_results(&t).into_iter().map(move |n| format!("{}:{n}", p.display()))
        })
        .collect();
    assert!(bad.is_empty(), "string errors: {bad:?}");
    let bad_line = ["fn f() -> Res", "ult<u8, Str", "ing> {"].concat();
    assert_eq!(string_results(&bad_line), vec![1]);
    assert!(string_results("fn f() -> Result<u8, E>; let s: String;").is_empty());
}

/// `Module::X, "name"` and `launch("name"` literals in the sources, as (module, name, where).
fn named_kernels() -> Vec<(Module, String, String)> {
    let mut files = Vec::new();
    for c in GPU_CRATES {
        rust_files(&crates_dir().join(c).join("src"), &mut files);
    }
    let mut out = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        for m in Module::ALL {
            let pat = format!("Module::{m:?}, \"");
            for (i, _) in text.match_indices(&pat) {
                let rest = &text[i + pat.len()..];
                let name = rest.split('"').next().unwrap_or_default().to_string();
                out.push((m, name, p.display().to_string()));
            }
        }
        if p.components().any(|c| c.as_os_str() == "ops") {
            for (i, _) in text.match_indices("launch(\"") {
                let rest = &text[i + 8..];
                let name = rest.split('"').next().unwrap_or_default().to_string();
                match Module::ops_module_of(&name) {
                    Some(m) => out.push((m, name, p.display().to_string())),
                    None => panic!("{}: ops kernel {name} is in no ops module", p.display()),
                }
            }
        }
    }
    out
}

#[test]
fn every_kernel_named_in_the_code_is_registered() {
    let named = named_kernels();
    assert!(named.len() > 40, "the scan found the launches ({})", named.len());
    for (m, name, at) in &named {
        assert!(m.functions().contains(&name.as_str()), "{at}: {name} is not a kernel of {}", m.file());
    }
    // Every probe module is launched by a literal name somewhere (the slice hammer launches its
    // one kernel through hammer::KERNEL, checked by that module's unit test; the ops modules are
    // loaded whole by OpsGpu).
    for m in Module::PROBES.into_iter().filter(|m| *m != Module::Slices) {
        assert!(named.iter().any(|(x, _, _)| *x == m), "{} is never launched", m.file());
    }
}
