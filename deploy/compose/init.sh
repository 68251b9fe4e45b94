#!/usr/bin/env bash
# One-shot bootstrap of the compose network (compose.yaml's `init` service): validator keys,
# the genesis, the trusted dealer's threshold shares, each validator's node.toml, and each
# thresholdd keystore with its validator's keys imported. Runs once: when the genesis exists it
# only says so and exits 0, so `docker compose up` can run it again safely.
#
# Layout under $QUASAR_OUT (one named volume each):
#   genesis/genesis.json           shared, read-only for the validators; written last, so its
#                                  presence means the bootstrap completed
#   keys-<i>/                      validator i's key directory (its secret file encrypted under
#                                  key.passphrase, 0600), node.toml, signer.token (0600)
#   signer-<i>/keystore/           thresholdd i's keystore (vote key, shares, signing guards)
#   signer-<i>/passphrase, token   its keystore passphrase and bearer token (0600)
#
# Settings (environment): QUASAR_VALIDATORS (4), QUASAR_PROFILE (aurora: every leg without
# rollup keys; `quasar` and `hybrid-…` also need a rollup setup, see docs/operations.md),
# QUASAR_NET_PREFIX (validator i's address is <prefix>.<10+i>), QUASAR_START_DELAY_SECS,
# QUASAR_SIGNER_URL, QUASAR_P2P_LISTEN, QUASAR_API_LISTEN, QUASAR_METRICS_LISTEN (`{i}` and
# `{ip}` are replaced),
# QUASAR_UID (owner of what is written, when run as root).
set -euo pipefail

out=${QUASAR_OUT:-/out}
n=${QUASAR_VALIDATORS:-4}
profile=${QUASAR_PROFILE:-aurora}
prefix=${QUASAR_NET_PREFIX:-172.29.64}
delay=${QUASAR_START_DELAY_SECS:-30}
default_signer_url='http://thresholdd-{i}:7300'
signer_url=${QUASAR_SIGNER_URL:-${default_signer_url}}
p2p_listen=${QUASAR_P2P_LISTEN:-0.0.0.0:9000}
api_listen=${QUASAR_API_LISTEN:-0.0.0.0:8000}
metrics_listen=${QUASAR_METRICS_LISTEN:-0.0.0.0:8100}
uid=${QUASAR_UID:-10001}

if [[ -s "${out}/genesis/genesis.json" ]]; then
  echo "init: ${out}/genesis/genesis.json exists; the network is already bootstrapped"
  exit 0
fi

# 32 random bytes as hex (od: coreutils, present in the slim runtime image).
random_hex() { head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n'; }
# A template with {i} and {ip} filled in.
fill() { local text=${1//\{i\}/$2}; printf '%s' "${text//\{ip\}/$3}"; }
# Writes stdin to $1 with mode 0600.
write_secret() { (umask 077 && cat >"$1"); }

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

dirs=()
for ((i = 0; i < n; i++)); do
  # Plaintext only in this private temporary directory: each is sealed under its own
  # passphrase below, once dealt.
  quasar-node keygen --out "${work}/v${i}" --name "v${i}" --plaintext >/dev/null
  dirs+=("${work}/v${i}")
done
quasar-node genesis --validators "${dirs[@]}" --out "${work}/genesis.json" \
  --start-delay-secs "${delay}"
if [[ "${profile}" != quasar ]]; then
  sed -i "s/\"profile\": \"quasar\"/\"profile\": \"${profile}\"/" "${work}/genesis.json"
  grep -q "\"profile\": \"${profile}\"" "${work}/genesis.json" || {
    echo "init: could not set the profile ${profile} in the genesis" >&2
    exit 1
  }
fi
# Every profile but `fast` has a Corona leg, so the dealer has threshold keys to deal.
if [[ "${profile}" != fast ]]; then
  quasar-node deal --genesis "${work}/genesis.json" --validators "${dirs[@]}" --plaintext
fi

# The peers table every node.toml shares (a node skips its own entry).
peers=""
for ((i = 0; i < n; i++)); do
  key=$(sed -n 's/.*"bls_public_key": *"\([0-9a-fA-F]*\)".*/\1/p' "${work}/v${i}/validator.pub.json")
  peers+=$'\n'"[[peers]]"$'\n'"bls_public_key = \"${key}\""$'\n'"address = \"${prefix}.$((10 + i)):9000\""$'\n'
done

mkdir -p "${out}/genesis"
for ((i = 0; i < n; i++)); do
  keys="${out}/keys-${i}"
  signer="${out}/signer-${i}"
  ip="${prefix}.$((10 + i))"
  mkdir -p "${keys}" "${signer}"
  chmod 0700 "${keys}" "${signer}"
  # Nothing has run on these volumes yet (no genesis): clear what an interrupted run left,
  # including a keystore whose passphrase is lost.
  find "${keys}" "${signer}" -mindepth 1 -delete
  install -m 0600 "${work}/v${i}/validator.key.json" "${keys}/validator.key.json"
  install -m 0644 "${work}/v${i}/validator.pub.json" "${keys}/validator.pub.json"
  token=$(random_hex)
  printf '%s\n' "${token}" | write_secret "${keys}/signer.token"
  printf '%s\n' "${token}" | write_secret "${signer}/token"
  random_hex | write_secret "${signer}/passphrase"
  random_hex | write_secret "${keys}/key.passphrase"
  quasar-node keys seal --dir "${keys}" --passphrase-file "${keys}/key.passphrase"
  cat >"${keys}/node.toml" <<TOML
# Written by deploy/compose/init.sh for validator ${i}.
data_dir = "/var/lib/quasar"
key_dir = "/etc/quasar/keys"
key_passphrase_file = "/etc/quasar/keys/key.passphrase"
genesis = "/etc/quasar/genesis/genesis.json"
p2p_listen = "$(fill "${p2p_listen}" "${i}" "${ip}")"
api_listen = "$(fill "${api_listen}" "${i}" "${ip}")"
metrics_listen = "$(fill "${metrics_listen}" "${i}" "${ip}")"
signer = "remote"

[remote_signer]
url = "$(fill "${signer_url}" "${i}" "${ip}")"
token_file = "/etc/quasar/keys/signer.token"
timeout_ms = 5000
${peers}
TOML
  thresholdd keys import-validator --key-dir "${keys}" \
    --key-passphrase-file "${keys}/key.passphrase" \
    --data-dir "${signer}/keystore" --passphrase-file "${signer}/passphrase"
done

if [[ "$(id -u)" == 0 ]]; then
  chown -R "${uid}:${uid}" "${out}"
fi
install -m 0644 "${work}/genesis.json" "${out}/genesis/genesis.json.partial"
[[ "$(id -u)" != 0 ]] || chown "${uid}:${uid}" "${out}/genesis/genesis.json.partial"
mv "${out}/genesis/genesis.json.partial" "${out}/genesis/genesis.json"
echo "init: ${n} validators bootstrapped under profile ${profile}"
