#!/usr/bin/env bash
# Runs every cargo-fuzz target of crypto/fuzz, lanes/fuzz, wire/fuzz, storage/fuzz, app/fuzz,
# chainspec/fuzz, thresholdd/fuzz and node/fuzz for SECONDS each (default 60).
#
#   scripts/fuzz.sh [SECONDS]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). cargo-fuzz needs nightly compiler flags; on a
# stable toolchain this script sets RUSTC_BOOTSTRAP=1, which lets stable rustc accept them.
# Corpora grow under <crate>/fuzz/corpus/<target>/ (kept between runs, git-ignored).
# Ends with a table of every target's executions and executions per second (libFuzzer's
# stat::number_of_executed_units and stat::average_exec_per_sec): how fast each one explores.
# Exits non-zero on the first target that crashes and prints the crashing input; reproduce with
#   cd <crate> && RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir ../target/fuzz <target> <input>
# Extra arguments for cargo fuzz (e.g. --sanitizer none) can be passed in FUZZ_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
if [ "$#" -gt 1 ] || ! [[ "${seconds}" =~ ^[0-9]{1,7}$ ]] || [ "${seconds}" -eq 0 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS]   (whole seconds per target, 1 to 9999999, default 60)" >&2
  exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: run \`cargo install cargo-fuzz\` (then rerun this script)" >&2
  exit 2
fi
if ! rustc --version | grep -q nightly; then
  export RUSTC_BOOTSTRAP=1
fi
read -r -a extra <<<"${FUZZ_ARGS:-}"
# One target dir for the fuzz crates, so the crates they share (quasar-crypto and up) build once.
target_dir="$(pwd)/target/fuzz"

# Real Corona encodings (up to 615 KB) as seeds, so that corona_decode starts from full-length
# messages (libFuzzer takes its maximum input length from the corpus).
cargo run --release -q -p quasar-crypto --example corona_fuzz_seeds -- crypto/fuzz/corpus/corona_decode

log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
# One of libFuzzer's -print_final_stats lines of the last run, e.g. `final_stat average_exec_per_sec`.
final_stat() { sed -n "s/^stat::$1: *//p" "${log}" | tail -n 1; }
summary=()
for crate in crypto lanes wire storage app chainspec thresholdd node; do
  for target in $(cd "${crate}" && cargo fuzz list); do
    echo "=== ${crate}/fuzz ${target}: ${seconds} s"
    artifacts="${crate}/fuzz/artifacts/${target}"
    mkdir -p "${artifacts}"
    before=$(find "${artifacts}" -type f | wc -l)
    status=0
    (cd "${crate}" && cargo fuzz run --target-dir "${target_dir}" "${extra[@]}" "${target}" -- \
      -max_total_time="${seconds}" -print_final_stats=1) 2>&1 | tee "${log}" || status=${PIPESTATUS[0]}
    summary+=("$(printf '%-26s %12s %10s' "${crate}/${target}" \
      "$(final_stat number_of_executed_units)" "$(final_stat average_exec_per_sec)")")
    if [ "${status}" -ne 0 ] || [ "$(find "${artifacts}" -type f | wc -l)" -gt "${before}" ]; then
      echo "FAILED: ${crate}/fuzz ${target} (exit ${status}); crashing inputs, newest first:" >&2
      ls -1t "${artifacts}" | sed "s|^|  ${artifacts}/|" >&2
      echo "reproduce: (cd ${crate} && RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir ../target/fuzz ${target} <input>)" >&2
      exit 1
    fi
  done
done
echo "all fuzz targets ran ${seconds} s each without a crash"
printf '%-26s %12s %10s\n' target executions "per second"
printf '%s\n' "${summary[@]}"
