//! The Pulsar certificate lane: one standard ML-DSA-65 signature (FIPS 204) on the round digest μ
//! under the epoch's Pulsar group key (docs/architecture.md §3, §4).
//!
//! Pulsar is threshold ML-DSA-65: a sampled committee produces, jointly, a signature that is an
//! ordinary FIPS 204 signature under an ordinary 1952-byte ML-DSA-65 public key (the group key,
//! fixed per epoch by the committee's key generation). So the verifier is unmodified
//! ML-DSA.Verify (FIPS 204 §5.3 Algorithm 3) with `quasar_crypto::mldsa`: M = μ (32 bytes),
//! context string [`CERT_CONTEXT`] (`quasar-cert-v1`), signature exactly 3309 bytes. Nothing in
//! the leg depends on how many parties signed or which; the threshold protocol is the signers'
//! business, and the verifier learns nothing about it.
//!
//! Checks: the group key is exactly 1952 bytes (any such string is a pkEncode output, FIPS 204
//! §7.2); the signature is exactly 3309 bytes (no trailing bytes, §3.6.2); then verification
//! (well-formed hints, ‖z‖∞ < γ1 − β, the commitment hash recomputes). Nothing here panics or
//! allocates on the input.

use quasar_crypto::mldsa::{MlDsa65, PublicKey, Signature};

use crate::{LaneError, CERT_CONTEXT};

/// Decodes the epoch's Pulsar group key: a 1952-byte ML-DSA-65 public key (FIPS 204 Table 2).
/// Errors: [`LaneError::PulsarGroupKey`] for any other length.
pub fn decode_group_key(bytes: &[u8]) -> Result<PublicKey<MlDsa65>, LaneError> {
    PublicKey::from_bytes(bytes).map_err(LaneError::PulsarGroupKey)
}

/// Verifies a Pulsar leg: `signature` must be a 3309-byte ML-DSA-65 signature on `mu` with context
/// [`CERT_CONTEXT`] under `group_key`.
///
/// Errors: [`LaneError::PulsarSignature`] with `InvalidLength` when the signature is not exactly
/// 3309 bytes, or `InvalidSignature` when it does not verify (another message, context or key,
/// malformed hints, ‖z‖∞ too large).
pub fn verify_leg(
    group_key: &PublicKey<MlDsa65>,
    mu: &[u8; 32],
    signature: &[u8],
) -> Result<(), LaneError> {
    let signature =
        Signature::<MlDsa65>::from_bytes(signature).map_err(LaneError::PulsarSignature)?;
    group_key
        .verify(mu, CERT_CONTEXT, &signature)
        .map_err(LaneError::PulsarSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quasar_crypto::mldsa::{MlDsaError, SecretKey};
    use quasar_crypto::rollup::circuit::ROLLUP_CONTEXT;
    use rand::SeedableRng;

    const MU: [u8; 32] = [0x3c; 32];

    fn group() -> SecretKey<MlDsa65> {
        SecretKey::from_seed(&[11; 32])
    }

    fn leg(sk: &SecretKey<MlDsa65>, mu: &[u8; 32], ctx: &[u8]) -> Vec<u8> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        sk.sign(mu, ctx, &mut rng).unwrap().as_bytes().to_vec()
    }

    #[test]
    fn a_standard_mldsa_65_signature_on_mu_verifies_through_bytes() {
        let sk = group();
        let key = decode_group_key(sk.public_key().as_bytes()).unwrap();
        let sig = leg(&sk, &MU, CERT_CONTEXT);
        assert_eq!(sig.len(), 3309);
        assert_eq!(verify_leg(&key, &MU, &sig), Ok(()));
    }

    #[test]
    fn another_digest_context_or_group_key_is_rejected() {
        let sk = group();
        let key = decode_group_key(sk.public_key().as_bytes()).unwrap();
        let invalid = Err(LaneError::PulsarSignature(MlDsaError::InvalidSignature));
        let mut other = MU;
        other[0] ^= 1;
        assert_eq!(
            verify_leg(&key, &other, &leg(&sk, &MU, CERT_CONTEXT)),
            invalid
        );
        // Signed with another context (the rollup's, or none) is not a certificate leg.
        assert_eq!(verify_leg(&key, &MU, &leg(&sk, &MU, b"")), invalid);
        assert_eq!(
            verify_leg(&key, &MU, &leg(&sk, &MU, ROLLUP_CONTEXT)),
            invalid
        );
        let stranger = SecretKey::<MlDsa65>::from_seed(&[12; 32]);
        assert_eq!(
            verify_leg(&key, &MU, &leg(&stranger, &MU, CERT_CONTEXT)),
            invalid
        );
    }

    #[test]
    fn wrong_lengths_are_clear_errors() {
        let sk = group();
        let key = decode_group_key(sk.public_key().as_bytes()).unwrap();
        let sig = leg(&sk, &MU, CERT_CONTEXT);
        for len in [0, 3308, 3310] {
            let mut bytes = sig.clone();
            bytes.resize(len, 0);
            assert_eq!(
                verify_leg(&key, &MU, &bytes),
                Err(LaneError::PulsarSignature(MlDsaError::InvalidLength {
                    expected: 3309,
                    got: len
                }))
            );
        }
        let mut long_key = sk.public_key().as_bytes().to_vec();
        long_key.push(0);
        assert_eq!(
            decode_group_key(&long_key).unwrap_err(),
            LaneError::PulsarGroupKey(MlDsaError::InvalidLength {
                expected: 1952,
                got: 1953
            })
        );
        assert!(decode_group_key(&long_key[..1951]).is_err());
    }
}
