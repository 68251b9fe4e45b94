#!/usr/bin/env bash
# Init container of each validator pod: picks this pod's own keys out of the
# quasar-validator-keys Secret by its ordinal, and renders node.toml with every validator of the
# StatefulSet as a peer. Writes into the pod's in-memory /run/quasar volume:
#   keys/validator.key.json (0600, encrypted under the Secret's key-passphrase),
#   keys/validator.pub.json, signer.token (0600), node.toml
# Refuses the base's placeholders, so an unconfigured set never starts.
#
# Environment: POD_NAME (downward API), SIGNER_TOKEN, KEYSTORE_PASSPHRASE and KEY_PASSPHRASE (the
# quasar-signer Secret). Validator j is reached through its own ClusterIP Service <statefulset>-<j>
# (services.yaml), named in node.toml's [[peers]]: the node resolves the name at every dial, so
# it follows the Service and retries (with backoff) while DNS has not caught up with it yet.
# QUASAR_PREPARE_ROOT (tests only) prefixes every path below.
set -euo pipefail

root=${QUASAR_PREPARE_ROOT:-}
all_keys=${root}/etc/quasar/validator-keys
config=${root}/etc/quasar/config
genesis=${root}/etc/quasar/genesis/genesis.json
run=${root}/run/quasar

ordinal=${POD_NAME##*-}
statefulset=${POD_NAME%-*}

fail() {
  echo "prepare: $*" >&2
  exit 1
}

if grep -q REPLACE_ME "${genesis}"; then
  fail "genesis.json is the base's placeholder: supply the network's genesis (docs/operations.md)"
fi
case "${SIGNER_TOKEN}${KEYSTORE_PASSPHRASE}${KEY_PASSPHRASE}" in
  *REPLACE_ME*) fail "the quasar-signer Secret still holds the base's placeholder values" ;;
esac
[[ -f "${all_keys}/validator-${ordinal}.key.json" ]] ||
  fail "no validator-${ordinal}.key.json in the quasar-validator-keys Secret"

umask 077
mkdir -p "${run}/keys"
cp "${all_keys}/validator-${ordinal}.key.json" "${run}/keys/validator.key.json"
cp "${all_keys}/validator-${ordinal}.pub.json" "${run}/keys/validator.pub.json"
printf '%s\n' "${SIGNER_TOKEN}" >"${run}/signer.token"

{
  cat "${config}/node.toml" "${config}/peers.toml"
  for pub in "${all_keys}"/validator-*.pub.json; do
    j=${pub##*/validator-}
    j=${j%.pub.json}
    [[ "${j}" == "${ordinal}" ]] && continue
    key=$(sed -n 's/.*"bls_public_key": *"\([0-9a-fA-F]*\)".*/\1/p' "${pub}")
    [[ -n "${key}" ]] || fail "no bls_public_key in ${pub}"
    printf '\n[[peers]]\nbls_public_key = "%s"\naddress = "%s:9000"\n' "${key}" "${statefulset}-${j}"
  done
} >"${run}/node.toml.partial"
mv "${run}/node.toml.partial" "${run}/node.toml"
echo "prepare: validator ${ordinal} of ${statefulset}: $(grep -c '^\[\[peers\]\]' "${run}/node.toml") peers"
