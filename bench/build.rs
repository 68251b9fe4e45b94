//! Records the source tree's git commit at build time (`QUASAR_BENCH_COMMIT`), so that every
//! report names the code that was measured, wherever the binary runs.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=QUASAR_COMMIT");
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{hash}-dirty")
            } else {
                hash
            }
        }
        // A build without the repository (e.g. a container context without .git).
        None => std::env::var("QUASAR_COMMIT").unwrap_or_else(|_| "unknown".into()),
    };
    println!("cargo:rustc-env=QUASAR_BENCH_COMMIT={commit}");
    // A new commit, a checkout or a staged change moves HEAD, its branch or the index; the
    // sources of this crate rebuild it anyway.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{branch}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
