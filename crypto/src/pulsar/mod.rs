//! Pulsar: threshold ML-DSA-65 whose signatures are ordinary FIPS 204 signatures (issue 7,
//! docs/architecture.md §3–§4). Any t of n parties (2 ≤ t ≤ n ≤ 6) sign together; the result is a
//! 3,309-byte ML-DSA-65 signature that any unmodified FIPS 204 verifier accepts under the
//! group's 1,952-byte public key (the tests check it with libcrux-ml-dsa and with fips204).
//!
//! # Construction
//!
//! The ML-DSA threshold scheme of "Threshold Signatures Reloaded: ML-DSA and Enhanced Raccoon
//! with Identifiable Aborts" (Borin, Celi, del Pino, Espitau, Niot, Prest; IACR ePrint
//! 2025/1166), with the parameters its authors published for ML-DSA-65 ([`params`]). The
//! authors' revised version, "Efficient Threshold ML-DSA" (Celi, del Pino, Espitau, Niot,
//! Prest; IACR ePrint 2026/013, USENIX Security '26), supersedes that preprint. Section numbers
//! of either paper are not cited here: only their abstracts and the public parameter script
//! could be consulted when this was written, so the description below is of what this code
//! does, checked against FIPS 204 by the tests, not a transcription of the paper.
//!
//! - **Key generation** ([`trusted_dealer_keygen`], a trusted dealer). A fresh ρ, Â =
//!   ExpandA(ρ). For every subset U of n − t + 1 parties a short share (s1_U, s2_U) with
//!   coefficients uniform in [−η, η] ([`sharing`]: replicated secret sharing). The key is
//!   s1 = Σ s1_U, s2 = Σ s2_U, t = A·s1 + s2 and the public key is the FIPS 204 encoding of
//!   (ρ, Power2Round(t).t1). Party i receives the shares of every U ∋ i. The dealer also
//!   publishes t_U = A·s1_U + s2_U for every U (used only to blame; see below). s1 and s2 are
//!   sums of C(n, t−1) short vectors, so their coefficients exceed η: the public key is a
//!   standard encoding, but the secret does not follow FIPS 204's key distribution (the
//!   verifier never looks at it; the signing bounds below account for it).
//! - **Session.** Exactly t signers S, a 32-byte session id, the message M and context ctx;
//!   μ = H(tr ‖ 0 ‖ |ctx| ‖ ctx ‖ M, 64) as in FIPS 204 (Algorithms 2 and 7). The shares are
//!   split among S so each is used by exactly one signer and no signer sums more than
//!   ⌈C(n, t−1)/t⌉ of them; s1_i, s2_i denote signer i's sums.
//! - **Round 1** ([`Signer::round1`]). For k = 1..K: a uniform point of the ν-weighted
//!   hyperball of radius r' in dimension (l + k)·256 (D + 2 Gaussians normalized to the sphere,
//!   the first D kept), split into y_k (z part, weighted by ν) and e_k; w_{i,k} = A·round(y_k) +
//!   round(e_k). The message is a commitment: `QUASAR-PULSAR-COMMIT-v1` tagged hash of (tr, sid,
//!   S, μ, i, w_{i,1..K}).
//! - **Round 2** ([`Signer::round2`]). After every commitment arrived: reveal w_{i,1..K}.
//! - **Round 3** ([`Signer::round3`]). Check each reveal against its commitment; for each k,
//!   w_k = Σ_j w_{j,k}, c̃_k = H(μ ‖ w1Encode(HighBits(w_k)), 48), c_k = SampleInBall(c̃_k)
//!   (FIPS 204 Algorithms 7, 29, 36). Accept attempt k if the continuous response
//!   (y_k + c_k·s1_i, e_k + c_k·s2_i) lies in the ν-weighted ball of radius r; send
//!   z_{i,k} = round(y_k) + c_k·s1_i for accepted attempts, a rejection marker otherwise.
//! - **Combine** ([`combine`], public). For the first attempt every signer accepted where
//!   z = Σ_i z_{i,k} has ‖z‖∞ < γ1 − β, w' = A·z − c·t1·2^d is within γ2 of w_k, and the hint
//!   h = \[HighBits(w') ≠ HighBits(w_k)\] has at most ω ones and satisfies
//!   UseHint(h, w') = HighBits(w_k): output sigEncode(c̃_k, z, h) (Algorithm 26), after
//!   verifying it under the public key.
//!
//! Correctness: A·z − c·t = w_k − Σ_i (e_{i,k} + c·s2_i), so w' = w_k − (e + c·s2) + c·t0 and
//! the FIPS 204 verifier's UseHint(h, w') recovers HighBits(w_k), hence the same c̃. A session
//! fails only when no attempt meets the bounds; K is chosen so that this happens with
//! probability at most 1/2 ([`params`]): the expected number of sessions per signature is at
//! most 2 (the tests and the `pulsar` bench report the measured count).
//!
//! # Security model (as we understand the construction; the paper has the proofs)
//!
//! - Unforgeability against a static adversary corrupting up to t − 1 of the n parties
//!   (dishonest majority among signers), in the random oracle model, under MLWE and
//!   SelfTargetMSIS as for ML-DSA, with a trusted dealer. The commitment round stops a
//!   corrupted signer from choosing its w after seeing the honest ones.
//! - Privacy of shares: a response z_{i,k} is released only when the continuous response lies
//!   in the radius-r ball, whose distribution then does not depend on the share beyond a
//!   statistically small term (hyperball rejection sampling); the part hiding s2 is never sent.
//!   Round-1 randomness is fresh from the caller's CSPRNG per session, never reused
//!   ([`Signer`] refuses a session id it used, and round 3 consumes the round-1 state): a
//!   second challenge for the same y would reveal c·s1_i differences. The tests check that no
//!   message repeats across sessions with the same share and message.
//! - **Aborts.** A missing message names the silent party ([`PulsarError::Missing`]); a
//!   foreign, duplicated or other-session message, or a reveal that does not match its
//!   commitment, names its sender. When no attempt succeeds, the combiner checks every accepted
//!   response against its sender's public share t_i = Σ t_U: A·z_{i,k} − c_k·t_i − w_{i,k} =
//!   −(e + c·s2_i) must keep the response within the radius (plus rounding); a response made
//!   with a wrong share or altered fails this and names its sender. What cannot be attributed:
//!   a corrupted signer may reject every attempt, or send responses that pass its own check but
//!   make the sum miss FIPS 204's ∞-norm bounds, forcing restarts (denial of service, not
//!   forgery). Drop such a signer from the committee at the epoch boundary.
//! - Publishing t_U: each t_U is an MLWE sample of a short secret, and their sum reveals t
//!   (hence t0) in full. Dilithium's security analysis treats t0 as public; the t_U add MLWE
//!   samples under independent short secrets. This is our addition for blame, not the paper's.
//! - Side channels: the hyperball sampler uses floating point (`rand_distr` Gaussians, `f64`
//!   norms), which is not constant time. Signers run on validators' own hosts; a co-located
//!   attacker timing them is outside this model.
//!
//! # Limits and costs
//!
//! n ≤ [`params::MAX_PARTIES`] = 6: the shares grow as C(n, t−1) and K with them (K = 6 for
//! 2-of-3, 62 for 3-of-5, 1,070 for 4-of-6; [`params`] says how K was measured). Messages:
//! round 2 is K·4,416 bytes and round 3 up to K·3,681 bytes per party (3-of-5: about 274 KB and 228 KB).
//!
//! # Committees for large validator sets
//!
//! A validator set larger than 6 signs through a committee ([`committee`]): per epoch, a
//! deterministic stake-weighted sample of n validators (from a public epoch seed) holds a t-of-n
//! key. The trust this adds is stated there.
//!
//! # Deviations
//!
//! - Blame by public shares (above) is ours.
//! - The commitment binds (tr, sid, S, μ, party) as well as the w values, so a commitment is
//!   meaningless outside its session.
//! - Keys come from a trusted dealer only (thresholdd runs it); no distributed key generation.
//! - Encodings are ours: 23-bit residues for w and z; signatures and public keys are FIPS 204's.
//!   Key files ([`GroupKey::to_bytes`], [`KeyShare::to_bytes`]): the group key is (t, n), the
//!   FIPS 204 public key and every t_U at 23 bits; a share is (party, t, n) and its short
//!   shares at 4 bits (η − c, as FIPS 204's BitPack). Decoding a group key checks that
//!   Power2Round(Σ t_U).t1 is the public key's t1; a decoded share is bound to its key by
//!   [`GroupKey::check_share`].

pub mod committee;
mod local;
pub mod params;
pub mod ring;
mod scheme;
pub mod sharing;

pub use local::{sign_in_process, LocalSignature};
pub use scheme::{
    combine, trusted_dealer_keygen, GroupKey, KeyShare, PulsarError, Round1Message, Round1State,
    Round2Message, Round2State, Round3Message, Session, SessionId, Signer, PUBLIC_KEY_BYTES,
    SHARE_PUBLIC_BYTES, SHARE_SECRET_BYTES, SIGNATURE_BYTES,
};
