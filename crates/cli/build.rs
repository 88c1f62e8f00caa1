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
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
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
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
    // Any source change can make the tree dirty: re-check then too.
    println!("cargo:rerun-if-changed=../../crates");
}
