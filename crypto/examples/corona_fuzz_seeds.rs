//! Writes real Corona encodings (group key, signature, round-1 and round-2 message) into a
//! folder, to seed the `corona_decode` fuzz corpus; `scripts/fuzz.sh` runs it before fuzzing.
//!
//! `cargo run --release -p quasar-crypto --example corona_fuzz_seeds -- DIR`

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: corona_fuzz_seeds DIR");
        return ExitCode::from(2);
    };
    let seeds = match quasar_crypto::fuzzing::corona_seeds() {
        Ok(seeds) => seeds,
        Err(e) => {
            eprintln!("corona_fuzz_seeds: building the seeds failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("corona_fuzz_seeds: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    for (name, bytes) in seeds {
        let path = dir.join(format!("seed-{name}"));
        if let Err(e) = std::fs::write(&path, &bytes) {
            eprintln!("corona_fuzz_seeds: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("{} ({} bytes)", path.display(), bytes.len());
    }
    ExitCode::SUCCESS
}
