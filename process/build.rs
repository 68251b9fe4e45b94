//! Build identity: sets `QUASAR_GIT_COMMIT` for `quasar_process::build_info` to the first 12 hex
//! digits of the commit this crate is built from, or to `QUASAR_GIT_COMMIT` from the
//! environment when one is given (a build without `.git`, such as `deploy/Dockerfile`'s), or to
//! `unknown` when neither git nor a repository is there.

use std::path::Path;
use std::process::Command;

/// `git args…` run in this crate's directory: its trimmed stdout when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=QUASAR_GIT_COMMIT");
    let given = std::env::var("QUASAR_GIT_COMMIT")
        .ok()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty());
    let commit = match given {
        Some(commit) => commit,
        None => {
            // Rebuild when HEAD moves: HEAD itself (a checkout), the branch it names (a commit)
            // and packed-refs (a gc). `--git-path` resolves both inside linked worktrees. Only
            // existing files are named: cargo reruns a script whose watched file is missing
            // on every build.
            let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
            if let Some(branch) = git(&["rev-parse", "--symbolic-full-name", "HEAD"]) {
                watched.push(branch);
            }
            for name in watched {
                if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
                    if Path::new(&path).exists() {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
            }
            git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo:rustc-env=QUASAR_GIT_COMMIT={commit}");
}
