#!/usr/bin/env bash
# The QuasarGPU device check, for a machine with an NVIDIA GPU (about 3 minutes once built):
# builds the CUDA backend, runs its device tests (which fail when no device is found) and the ntt
# benchmark with the CUDA rows, and writes everything to $OUT (default: gpu/device-results/,
# relative to the repository root).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-gpu/device-results}"
mkdir -p "$out"
{
    date -u
    git rev-parse HEAD 2>/dev/null || true
    nvidia-smi 2>&1 || echo "nvidia-smi not available"
} >"$out/machine.txt"
status=0
cargo test --release -p quasar-gpu --features cuda --test cuda -- --ignored --nocapture \
    >"$out/cuda-tests.txt" 2>&1 || status=$?
cargo test --release -p quasar-gpu --features cuda >"$out/gpu-tests.txt" 2>&1 || status=$?
cargo bench -p quasar-bench --features cuda --bench ntt -- summary-only \
    >"$out/ntt-bench.txt" 2>&1 || status=$?
summary="${CARGO_TARGET_DIR:-target}/criterion/ntt-summary.json"
if [ -f "$summary" ] && [ "$summary" -nt "$out/machine.txt" ]; then
    cp "$summary" "$out/"
else
    echo "no fresh $summary: the bench did not finish" | tee -a "$out/ntt-bench.txt"
fi
# Test verdicts with each failure's message (the line after "panicked at"), then the bench.
grep -E -A1 "test result|panicked" "$out"/cuda-tests.txt "$out"/gpu-tests.txt || true
grep -E "^\||CUDA device|CUDA backend" "$out/ntt-bench.txt" || true
exit "$status"
