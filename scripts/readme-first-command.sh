#!/usr/bin/env bash
# Runs README.md's first command exactly as written (the first line of the first ```sh block
# under "## The two commands") and checks its summary: every validator agrees, every accepted
# transaction finalized, and the blocks reached Quasar finality with no leg unavailable.
# .ci/run calls this, so the first command a newcomer types cannot silently break.
set -euo pipefail
cd "$(dirname "$0")/.."

cmd=$(awk '/^## The two commands/ { found = 1 } found && /^```sh/ { getline; print; exit }' README.md)
case "${cmd}" in
  "cargo run --release -p quasar-node -- testnet"*) ;;
  *)
    echo "readme-first-command: README's first command is not a testnet run: '${cmd}'" >&2
    exit 1
    ;;
esac
echo "readme-first-command: ${cmd}" >&2
out=$(mktemp)
trap 'rm -f "${out}"' EXIT
bash -c "${cmd}" >"${out}"
summary=$(tail -n 1 "${out}")
python3 - "${summary}" <<'PY'
import json
import sys

report = json.loads(sys.argv[1])
problems = []
if not report.get("agreement"):
    problems.append("the validators disagree")
if report.get("txs_finalized") != report.get("txs_accepted"):
    problems.append("accepted transactions were not finalized")
if report.get("quasar_unavailable") is not None:
    problems.append(f"Quasar finality unavailable: {report['quasar_unavailable']}")
if not report.get("quasar_finalized_height"):
    problems.append("no block reached Quasar finality")
if problems:
    sys.exit("readme-first-command: " + "; ".join(problems) + f"\n{sys.argv[1]}")
print(
    f"readme-first-command: profile {report['profile']}, Nova finality at "
    f"{report['finalized_height']}, Quasar finality at {report['quasar_finalized_height']}",
    file=sys.stderr,
)
PY
