//! Every party of a Corona signing set in one process: a dealer-held test or development
//! committee, `thresholdd` holding several shares, tests and benchmarks. Across hosts the same
//! two rounds run with their messages on the wire ([`super::scheme::Signer`]).

use rand::{CryptoRng, RngCore};

use super::scheme::{combine, CoronaError, GroupKey, SessionId, Signature, Signer};

/// Signs `message` with the signers at positions `parties` of `signers` (party indices, as in
/// [`super::scheme::KeyShare::signing_set`]; at least t of them) in session `session`: round 1
/// and round 2 of each, then [`combine`], which verifies the result.
///
/// `session` must be fresh for every signer involved (each refuses a reused id,
/// [`CoronaError::SessionReused`]).
///
/// Errors: [`CoronaError::TooFewSigners`] when `signers` is empty;
/// [`CoronaError::NotInSigningSet`] when `parties` names an index with no signer here; any error
/// of the signing set ([`super::scheme::KeyShare::signing_set`]), the rounds or [`combine`].
pub fn sign_in_process<R: RngCore + CryptoRng + ?Sized>(
    group: &GroupKey,
    signers: &mut [Signer],
    parties: &[u16],
    session: SessionId,
    message: &[u8],
    rng: &mut R,
) -> Result<Signature, CoronaError> {
    let no_signers = CoronaError::TooFewSigners {
        got: 0,
        threshold: signers.first().map_or(1, |s| s.share().threshold()),
    };
    let set = signers
        .first()
        .ok_or(no_signers.clone())?
        .share()
        .signing_set(parties)?;
    let mut chosen: Vec<&mut Signer> = signers
        .iter_mut()
        .filter(|s| set.contains(s.share().index()))
        .collect();
    if let Some(&absent) = parties
        .iter()
        .find(|&&p| !chosen.iter().any(|s| s.share().index() == p))
    {
        return Err(CoronaError::NotInSigningSet(absent));
    }
    let mut states = Vec::with_capacity(chosen.len());
    let mut round1 = Vec::with_capacity(chosen.len());
    for signer in chosen.iter_mut() {
        let (state, m) = signer.round1(session, &set, rng)?;
        states.push(state);
        round1.push(m);
    }
    let mut round2 = Vec::with_capacity(chosen.len());
    let mut context = None;
    for (signer, state) in chosen.iter().zip(states) {
        let (m, ctx) = signer.round2(state, message, &round1)?;
        round2.push(m);
        context = Some(ctx);
    }
    combine(group, &context.ok_or(no_signers)?, &round2)
}
