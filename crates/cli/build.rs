//! Records the git commit of the source tree (when built from a git checkout) as
//! MEMSCOPE_GIT_COMMIT, for the provenance of every results file.
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // --no-optional-locks: git status must not rewrite the index it reads (a fresh clone's index
    // gets its stat data refreshed), or the index below would be newer than this run and the next
    // cargo command would rerun this script and rebuild the crate for nothing.
    let dirty = std::process::Command::new("git")
        .args(["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let value = if commit.is_empty() {
        String::new()
    } else if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=MEMSCOPE_GIT_COMMIT={value}");
    // `memscope --version`: the package version and the commit ("unknown" outside git).
    let shown = if value.is_empty() { "unknown" } else { value.as_str() };
    println!(
        "cargo:rustc-env=MEMSCOPE_VERSION={} (commit {shown})",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
    );
    // In a git worktree .git is a file: ask git where HEAD and the index live.
    let git_dir = std::process::Command::new("git")
        .args(["rev-parse", "--absolute-git-dir"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match git_dir {
        Some(dir) => {
            println!("cargo:rerun-if-changed={dir}/HEAD");
            println!("cargo:rerun-if-changed={dir}/index");
            // A commit moves the branch's ref, which lives in the common git dir.
            let git = |args: &[&str]| {
                std::process::Command::new("git")
                    .args(args)
                    .output()
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            };
            if let (Some(common), Some(branch)) = (
                git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
                git(&["symbolic-ref", "-q", "HEAD"]),
            ) {
                for f in [format!("{common}/{branch}"), format!("{common}/packed-refs")] {
                    if std::path::Path::new(&f).exists() {
                        println!("cargo:rerun-if-changed={f}");
                    }
                }
            }
        }
        None => {
            println!("cargo:rerun-if-changed=../../.git/HEAD");
            println!("cargo:rerun-if-changed=../../.git/index");
        }
    }
    // Any source change can make the tree dirty: re-check then too.
    println!("cargo:rerun-if-changed=../../crates");
}
