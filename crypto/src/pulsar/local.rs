//! Every party of a Pulsar signing set in one process: a dealer-held test or development
//! committee, `thresholdd` holding several shares, tests and benchmarks. Across hosts the same
//! rounds run with their messages on the wire ([`super::Signer`]).

use rand::{CryptoRng, RngCore};

use super::scheme::{combine, GroupKey, PulsarError, Session, SessionId, Signer};
use crate::hash::tagged_hash;

/// Domain tag of the session ids [`sign_in_process`] derives.
const LOCAL_SESSION_TAG: &str = "QUASAR-PULSAR-LOCAL-SESSION-v1";

/// A successful in-process signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalSignature {
    /// The 3,309-byte FIPS 204 signature.
    pub signature: Vec<u8>,
    /// Sessions it took (1 + the restarts).
    pub sessions: u32,
}

/// Signs `message` with context `context` by running whole sessions (round 1, 2 and 3 of every
/// signer, then [`combine`]) among `signers`, which must be exactly the group's t parties,
/// restarting with a fresh session id while [`combine`] answers [`PulsarError::Restart`], at
/// most `max_sessions` times. Session k's id is `tagged_hash("QUASAR-PULSAR-LOCAL-SESSION-v1",
/// [base, k])`: give every call a `base` never used before with these signers (a repeated id
/// is refused by the signers, [`PulsarError::SessionReused`]).
///
/// Errors: any error of the rounds or of [`combine`] other than a restart (for honest signers:
/// [`PulsarError::InvalidSet`], [`PulsarError::SessionReused`], [`PulsarError::ContextTooLong`]);
/// [`PulsarError::Restart`] when `max_sessions` sessions all restarted.
pub fn sign_in_process<R: RngCore + CryptoRng>(
    group: &GroupKey,
    signers: &mut [Signer],
    base: &[u8; 32],
    message: &[u8],
    context: &[u8],
    max_sessions: u32,
    rng: &mut R,
) -> Result<LocalSignature, PulsarError> {
    let parties: Vec<u16> = signers.iter().map(Signer::party).collect();
    for k in 0..max_sessions {
        let id = SessionId(tagged_hash(LOCAL_SESSION_TAG, &[base, &k.to_le_bytes()]));
        let session = Session::new(group, id, &parties, message, context)?;
        let mut round1 = Vec::with_capacity(signers.len());
        let mut states1 = Vec::with_capacity(signers.len());
        for signer in signers.iter_mut() {
            let (m, st) = signer.round1(group, &session, rng)?;
            round1.push(m);
            states1.push(st);
        }
        let mut round2 = Vec::with_capacity(signers.len());
        let mut states2 = Vec::with_capacity(signers.len());
        for (signer, st) in signers.iter().zip(states1) {
            let (m, st) = signer.round2(st, &round1)?;
            round2.push(m);
            states2.push(st);
        }
        let round3 = signers
            .iter()
            .zip(states2)
            .map(|(signer, st)| signer.round3(group, st, &round2))
            .collect::<Result<Vec<_>, _>>()?;
        match combine(group, &session, &round1, &round2, &round3) {
            Ok(signature) => {
                return Ok(LocalSignature {
                    signature,
                    sessions: k + 1,
                })
            }
            Err(PulsarError::Restart) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(PulsarError::Restart)
}
