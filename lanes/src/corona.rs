//! The Corona lane: one Corona lattice threshold signature (the Ringtail construction, IACR
//! ePrint 2024/1113; `quasar_crypto::corona`) under the epoch's group key (docs/architecture.md §3).
//!
//! The leg body is the signature's compact encoding ([`Signature::to_bytes`]); the message is
//! the digest the leg signs (the bundle digest of a QuasarCert, [`crate::cert`]). Decoding is
//! bounded by the encoding itself (every length is checked against its header before anything
//! is allocated), and the group key is decoded once per epoch, when A is expanded.

use quasar_crypto::accel::BatchArithmetic;
use quasar_crypto::corona::scheme::{GroupKey, Signature, VerifyError};

use crate::LaneError;

/// Decodes the epoch's Corona group key (4,640 bytes: ρ ‖ b̃ packed at 18 bits) and expands A
/// once. Errors: [`LaneError::CoronaGroupKey`] for any other length.
pub fn decode_group_key(bytes: &[u8]) -> Result<GroupKey, LaneError> {
    GroupKey::from_bytes(bytes).map_err(LaneError::CoronaGroupKey)
}

/// Verifies a Corona leg: `signature` must decode as a compact Corona signature that verifies on
/// `message` under `group_key` (challenge recomputation and the exact L2 norm bound), its NTTs
/// on `backend`.
///
/// Errors: [`LaneError::CoronaEncoding`] when the bytes are not a canonical signature encoding;
/// [`LaneError::CoronaSignature`] when it does not verify (norm above the bound, or the
/// challenge differs: another message, another key, tampered bytes);
/// [`LaneError::Arithmetic`] when the backend failed.
pub fn verify_leg(
    group_key: &GroupKey,
    message: &[u8],
    signature: &[u8],
    backend: &dyn BatchArithmetic,
) -> Result<(), LaneError> {
    let signature = Signature::from_bytes(signature).map_err(LaneError::CoronaEncoding)?;
    group_key
        .verify_on(backend, message, &signature)
        .map_err(|e| match e {
            VerifyError::Arithmetic(e) => LaneError::Arithmetic(e),
            e => LaneError::CoronaSignature(e),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_of_the_wrong_length_is_refused() {
        assert!(matches!(
            decode_group_key(&[0u8; 10]),
            Err(LaneError::CoronaGroupKey(_))
        ));
    }

    #[test]
    fn garbage_signature_bytes_are_an_encoding_error() {
        let key =
            decode_group_key(&vec![7u8; quasar_crypto::corona::scheme::GROUP_KEY_BYTES]).unwrap();
        for bytes in [&[][..], &[1u8; 3][..], &[0xffu8; 200][..]] {
            let got = verify_leg(&key, b"m", bytes, &quasar_crypto::accel::CpuBackend);
            assert!(matches!(got, Err(LaneError::CoronaEncoding(_))), "{got:?}");
        }
    }
}
