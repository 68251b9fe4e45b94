//! Pulsar key generation, the key and message encodings, the three signing rounds, and
//! combining (see the module docs of [`crate::pulsar`] for the construction and its security
//! argument).

use std::collections::HashSet;

use rand::{CryptoRng, Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::Shake256;
use thiserror::Error;
use zeroize::{Zeroize, Zeroizing};

use super::params::{Parameters, D, DIMENSION, ETA, ML_DSA, NU};
use super::ring::{
    add, centered, intt, matrix_vector, ntt_of, reduce, scalar_vector, sub, Poly, Q,
};
use super::sharing::{assign, share_subsets, Mask};
use crate::corona::encode::{pack, unpack, EncodingError};
use crate::hash::tagged_hash;
use crate::mldsa::{MlDsa65, PublicKey, Signature};
use crate::rollup::native::{rej_ntt_poly, sample_in_ball, use_hint, w1_encode, N};

/// k of ML-DSA-65: rows of A, polynomials of w, t, s2, h.
const K: usize = ML_DSA.k;
/// l of ML-DSA-65: columns of A, polynomials of y, z, s1.
const L: usize = ML_DSA.l;
/// Bits per residue mod q on the wire.
const RESIDUE_BITS: u32 = 23;
/// Bytes of one polynomial of residues.
const POLY_BYTES: usize = N * RESIDUE_BITS as usize / 8;
/// γ2 = (q − 1)/32 of ML-DSA-65.
const GAMMA2: i32 = (Q - 1) / 32;

/// HighBits(r) of FIPS 204 Algorithm 36 (Decompose) for ML-DSA-65, r in [0, q), with the
/// constant 2γ2 (so the division compiles to a multiply and shift).
fn high_bits(r: i32) -> u32 {
    let mut r0 = r % (2 * GAMMA2);
    if r0 > GAMMA2 {
        r0 -= 2 * GAMMA2;
    }
    if r - r0 == Q - 1 {
        0
    } else {
        ((r - r0) / (2 * GAMMA2)) as u32
    }
}

/// Bytes of an ML-DSA-65 public key and signature.
pub const PUBLIC_KEY_BYTES: usize = 1952;
/// Bytes of an ML-DSA-65 signature.
pub const SIGNATURE_BYTES: usize = 3309;

/// Why a Pulsar operation refused. `Misbehaved` and `Missing` name the party to blame (drop
/// it from the next session); `Restart` means no attempt of the session met FIPS 204's bounds
/// with every party honest (start a new session); `SessionReused` is a local safety refusal;
/// the rest are caller mistakes or malformed input. None is fatal.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PulsarError {
    /// (t, n) outside 2 ≤ t ≤ n ≤ 6.
    #[error("unsupported threshold {threshold} of {parties} parties (need 2 <= t <= n <= 6)")]
    UnsupportedShape {
        /// t.
        threshold: usize,
        /// n.
        parties: usize,
    },
    /// A signing set must have exactly t distinct parties, all below n.
    #[error("invalid signing set: {0}")]
    InvalidSet(&'static str),
    /// This signer is not in the signing set.
    #[error("party {0} is not in the signing set")]
    NotASigner(u16),
    /// This party used the session id before (round-1 randomness is never reused).
    #[error("session id already used by this party")]
    SessionReused,
    /// A signer of the set sent no message for this round.
    #[error("party {0} sent no message for this round")]
    Missing(u16),
    /// A party sent a message that breaks the protocol (the reason says how).
    #[error("party {party} misbehaved: {reason}")]
    Misbehaved {
        /// The party to blame.
        party: u16,
        /// What it did.
        reason: &'static str,
    },
    /// No attempt of the session produced a valid signature and every response is consistent
    /// with its sender's public share: sign again with a new session id.
    #[error("no attempt met the FIPS 204 bounds; restart with a new session id")]
    Restart,
    /// The bytes are not a valid encoding (the reason says which part).
    #[error("encoding: {0}")]
    Encoding(&'static str),
    /// The context string is longer than 255 bytes (FIPS 204 Algorithm 2).
    #[error("context longer than 255 bytes")]
    ContextTooLong,
}

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

/// The public side of a Pulsar key: the ordinary ML-DSA-65 public key (ρ, t1) every signature
/// verifies under, and for each share subset U its public value t_U = A·s1_U + s2_U (used only
/// to blame a party whose response does not match its share; module docs).
#[derive(Clone, Debug)]
pub struct GroupKey {
    params: Parameters,
    public_key: PublicKey<MlDsa65>,
    public_key_bytes: Vec<u8>,
    /// Â = ExpandA(ρ), k×l row-major NTT images.
    a_hat: Vec<Poly>,
    /// NTT(t1·2^d), k images.
    t1_hat: Vec<Poly>,
    /// tr = H(pk, 64).
    tr: [u8; 64],
    /// (U, NTT(t_U)) for every share subset, in `share_subsets` order.
    share_publics: Vec<(Mask, Vec<Poly>)>,
}

/// One party's secret: its index and the short shares (s1_U, s2_U) of every subset U that
/// contains it, zeroized on drop. It never leaves the party.
pub struct KeyShare {
    party: u16,
    params: Parameters,
    /// (U, s1_U (l polys), s2_U (k polys)), coefficients in [−η, η].
    shares: Vec<(Mask, Zeroizing<Vec<Poly>>)>,
}

impl std::fmt::Debug for KeyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyShare")
            .field("party", &self.party)
            .field("shares", &self.shares.len())
            .finish_non_exhaustive()
    }
}

impl KeyShare {
    /// This party's index.
    pub fn party(&self) -> u16 {
        self.party
    }

    /// The share subsets this party holds.
    pub fn subsets(&self) -> Vec<Mask> {
        self.shares.iter().map(|(m, _)| *m).collect()
    }
}

impl GroupKey {
    /// The 1952-byte FIPS 204 public key (pkEncode(ρ, t1), Algorithm 22).
    pub fn public_key_bytes(&self) -> &[u8] {
        &self.public_key_bytes
    }

    /// The public key as an ML-DSA-65 verification key.
    pub fn public_key(&self) -> &PublicKey<MlDsa65> {
        &self.public_key
    }

    /// The key's parameters.
    pub fn params(&self) -> &Parameters {
        &self.params
    }

    /// Whether `share` is consistent with this key: every subset it holds is one of the key's,
    /// contains the party, and A·s1_U + s2_U = t_U. A party checks this once on receipt.
    pub fn check_share(&self, share: &KeyShare) -> bool {
        let expected: Vec<Mask> = share_subsets(self.params.threshold, self.params.parties)
            .into_iter()
            .filter(|m| m & (1 << share.party) != 0)
            .collect();
        share.params == self.params
            && share.subsets() == expected
            && share.shares.iter().all(|(mask, secret)| {
                let (s1, s2) = secret.split_at(L);
                let t = public_share(&self.a_hat, s1, s2);
                self.share_publics
                    .iter()
                    .any(|(m, t_hat)| m == mask && t.iter().map(ntt_of).eq(t_hat.iter().copied()))
            })
    }
}

/// t_U = A·s1 + s2 in [0, q).
fn public_share(a_hat: &[Poly], s1: &[Poly], s2: &[Poly]) -> Vec<Poly> {
    let s1_hat: Vec<Poly> = s1.iter().map(ntt_of).collect();
    matrix_vector(a_hat, &s1_hat, K)
        .into_iter()
        .zip(s2)
        .map(|(a, b)| add(&a, b))
        .collect()
}

/// FIPS 204 Algorithm 32, ExpandA: Â\[r·l + s\] = RejNTTPoly(ρ ‖ s ‖ r).
fn expand_a(rho: &[u8]) -> Vec<Poly> {
    (0..K)
        .flat_map(|r| (0..L).map(move |s| (r, s)))
        .map(|(r, s)| rej_ntt_poly(rho, s as u8, r as u8).map(|v| v as i32))
        .collect()
}

/// FIPS 204 Algorithm 35, Power2Round: (t1, t0) with t = t1·2^d + t0, t0 ∈ (−2^(d−1), 2^(d−1)].
fn power2round(t: i32) -> i32 {
    let half = 1 << (D - 1);
    let t0 = t & ((1 << D) - 1);
    let t0 = if t0 > half { t0 - (1 << D) } else { t0 };
    (t - t0) >> D
}

/// Little-endian packing of values of `bits` bits each (Corona's packer).
fn pack_bits(values: impl IntoIterator<Item = u32>, bits: u32, out: &mut Vec<u8>) {
    pack(values.into_iter().map(u64::from), bits, out);
}

/// Exactly `count` values of `bits` bits from `bytes` (exact length, zero padding).
fn unpack_bits(bytes: &[u8], bits: u32, count: usize) -> Option<Vec<u32>> {
    let mut out = Vec::with_capacity(count);
    unpack(bytes, count, bits, "pulsar", |v| {
        out.push(v as u32);
        Ok(())
    })
    .ok()?;
    Some(out)
}

/// A uniform polynomial with coefficients in [−η, η] from the dealer's CSPRNG.
fn short_poly<R: RngCore + CryptoRng>(rng: &mut R) -> Poly {
    std::array::from_fn(|_| rng.gen_range(-ETA..=ETA))
}

/// Trusted-dealer key generation for a t-of-n key (module docs): a fresh ρ, one short share
/// (s1_U, s2_U) per subset U of n − t + 1 parties, t = A·Σ s1_U + Σ s2_U, the public key
/// (ρ, Power2Round(t).t1), and per party the shares of the subsets that contain it. The dealer
/// must erase everything after handing out the shares. Errors:
/// [`PulsarError::UnsupportedShape`].
pub fn trusted_dealer_keygen<R: RngCore + CryptoRng>(
    threshold: usize,
    parties: usize,
    rng: &mut R,
) -> Result<(GroupKey, Vec<KeyShare>), PulsarError> {
    let params = Parameters::new(threshold, parties)
        .ok_or(PulsarError::UnsupportedShape { threshold, parties })?;
    let mut rho = [0u8; 32];
    rng.fill_bytes(&mut rho);
    let a_hat = expand_a(&rho);
    let mut total = [[0i32; N]; K];
    let mut share_publics = Vec::new();
    let mut secrets: Vec<(Mask, Zeroizing<Vec<Poly>>)> = Vec::new();
    for mask in share_subsets(threshold, parties) {
        let secret: Zeroizing<Vec<Poly>> =
            Zeroizing::new((0..L + K).map(|_| short_poly(rng)).collect());
        let (s1, s2) = secret.split_at(L);
        let t = public_share(&a_hat, s1, s2);
        for (acc, part) in total.iter_mut().zip(&t) {
            for (a, &b) in acc.iter_mut().zip(part) {
                *a = reduce(*a + b);
            }
        }
        share_publics.push((mask, t.iter().map(ntt_of).collect()));
        secrets.push((mask, secret));
    }
    let public_key_bytes = encode_public_key(&rho, &total);
    let group = group_key(params, public_key_bytes, a_hat, share_publics)?;
    let shares = (0..parties as u16)
        .map(|party| KeyShare {
            party,
            params,
            shares: secrets
                .iter()
                .filter(|(m, _)| m & (1 << party) != 0)
                .map(|(m, s)| (*m, s.clone()))
                .collect(),
        })
        .collect();
    Ok((group, shares))
}

/// pkEncode(ρ, Power2Round(t).t1), FIPS 204 Algorithms 22 and 35: ρ ‖ SimpleBitPack(t1, 10),
/// [`PUBLIC_KEY_BYTES`] bytes for a 32-byte ρ and k polynomials t in [0, q).
fn encode_public_key(rho: &[u8], t: &[Poly]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PUBLIC_KEY_BYTES);
    out.extend_from_slice(rho);
    pack_bits(
        t.iter().flatten().map(|&c| power2round(c) as u32),
        10,
        &mut out,
    );
    out
}

/// Assembles a [`GroupKey`] from its public key bytes and share publics.
fn group_key(
    params: Parameters,
    public_key_bytes: Vec<u8>,
    a_hat: Vec<Poly>,
    share_publics: Vec<(Mask, Vec<Poly>)>,
) -> Result<GroupKey, PulsarError> {
    let public_key = PublicKey::<MlDsa65>::from_bytes(&public_key_bytes)
        .map_err(|_| PulsarError::Encoding("public key"))?;
    let packed = public_key_bytes
        .get(32..)
        .ok_or(PulsarError::Encoding("public key"))?;
    let t1 = unpack_bits(packed, 10, K * N).ok_or(PulsarError::Encoding("public key"))?;
    let t1_hat = t1
        .chunks_exact(N)
        .map(|c| {
            ntt_of(&std::array::from_fn(|i| {
                (c.get(i).copied().unwrap_or(0) << D) as i32
            }))
        })
        .collect();
    let mut tr = [0u8; 64];
    shake256(&[&public_key_bytes], &mut tr);
    Ok(GroupKey {
        params,
        public_key,
        public_key_bytes,
        a_hat,
        t1_hat,
        tr,
        share_publics,
    })
}

/// SHAKE256 of the concatenation of `parts` into `out`.
fn shake256(parts: &[&[u8]], out: &mut [u8]) {
    let mut h = Shake256::default();
    for part in parts {
        h.update(part);
    }
    h.finalize_xof().read(out);
}

// ---------------------------------------------------------------------------------------------
// Key encodings
// ---------------------------------------------------------------------------------------------

/// Bytes of one share public t_U in a [`GroupKey`] encoding: k = 6 polynomials of residues at
/// 23 bits (6·736 = 4,416).
pub const SHARE_PUBLIC_BYTES: usize = K * POLY_BYTES;

/// Bits per coefficient c of a secret share in a [`KeyShare`] encoding: η − c ∈ [0, 2η] = [0, 8]
/// (FIPS 204 BitPack(w, η, η), Algorithm 17, as pkEncode/skEncode pack s1 and s2).
const SHORT_BITS: u32 = 4;

/// Bytes of one secret share (s1_U, s2_U) in a [`KeyShare`] encoding: (l + k)·256 = 2,816
/// coefficients at 4 bits (1,408).
pub const SHARE_SECRET_BYTES: usize = (L + K) * N * SHORT_BITS as usize / 8;

/// Bytes of a [`GroupKey`] encoding's header: t, n.
const GROUP_KEY_HEADER_BYTES: usize = 2;

/// Bytes of a [`KeyShare`] encoding's header: party (u16 big-endian), t, n.
const KEY_SHARE_HEADER_BYTES: usize = 4;

/// The parameters of the (t, n) of an encoding's header. Errors:
/// [`PulsarError::UnsupportedShape`].
fn header_shape(threshold: u8, parties: u8) -> Result<Parameters, PulsarError> {
    let (threshold, parties) = (usize::from(threshold), usize::from(parties));
    Parameters::new(threshold, parties).ok_or(PulsarError::UnsupportedShape { threshold, parties })
}

impl GroupKey {
    /// The group key's encoding, for a key file or a genesis (ours; the public key inside is
    /// FIPS 204's):
    ///
    /// ```text
    /// t (1 byte) ‖ n (1 byte)
    ///   ‖ pk (1,952 bytes: pkEncode(ρ, t1), FIPS 204 Algorithm 22)
    ///   ‖ for every share subset U, in `share_subsets(t, n)` order (increasing masks):
    ///       t_U = A·s1_U + s2_U, k = 6 polynomials in the normal (not NTT) domain,
    ///       coefficients in [0, q) at 23 bits, packed least-significant bit first (4,416 bytes)
    /// ```
    ///
    /// The masks are not stored: (t, n) determines them. Length 2 + 1,952 + C(n, t − 1)·4,416
    /// bytes: 15,202 for 2-of-3, 28,450 for 3-of-4, at most 90,274 (4-of-6).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            GROUP_KEY_HEADER_BYTES
                + PUBLIC_KEY_BYTES
                + self.share_publics.len() * SHARE_PUBLIC_BYTES,
        );
        // t ≤ n ≤ MAX_PARTIES = 6: both fit a byte.
        out.push(self.params.threshold as u8);
        out.push(self.params.parties as u8);
        out.extend_from_slice(&self.public_key_bytes);
        for (_, t_hat) in &self.share_publics {
            let t: Vec<Poly> = t_hat
                .iter()
                .map(|image| {
                    let mut p = *image;
                    intt(&mut p);
                    p
                })
                .collect();
            pack_polys(&t, &mut out);
        }
        out
    }

    /// Decodes [`GroupKey::to_bytes`]: reads (t, n), requires the exact length for that shape
    /// (before anything is allocated), every t_U coefficient below q, and that the share publics
    /// belong to the public key: pkEncode(ρ, Power2Round(Σ_U t_U mod q).t1) must equal the stored
    /// public key (how [`trusted_dealer_keygen`] derives it). Â is recomputed from ρ.
    ///
    /// Errors: [`PulsarError::UnsupportedShape`] for a (t, n) without parameters;
    /// [`PulsarError::Encoding`] naming the field: `"group key header"` (under 2 bytes),
    /// `"group key length"`, `"share public coefficient not below q"`, `"share publics do not
    /// sum to the public key's t1"`, `"public key"`.
    pub fn from_bytes(bytes: &[u8]) -> Result<GroupKey, PulsarError> {
        let (&[threshold, parties], rest) = bytes
            .split_first_chunk::<GROUP_KEY_HEADER_BYTES>()
            .ok_or(PulsarError::Encoding("group key header"))?;
        let params = header_shape(threshold, parties)?;
        let subsets = share_subsets(params.threshold, params.parties);
        if rest.len() != PUBLIC_KEY_BYTES + subsets.len() * SHARE_PUBLIC_BYTES {
            return Err(PulsarError::Encoding("group key length"));
        }
        let (public_key_bytes, publics) = rest
            .split_at_checked(PUBLIC_KEY_BYTES)
            .ok_or(PulsarError::Encoding("group key length"))?;
        let mut total = vec![[0i32; N]; K];
        let mut share_publics = Vec::with_capacity(subsets.len());
        for (mask, block) in subsets
            .into_iter()
            .zip(publics.chunks_exact(SHARE_PUBLIC_BYTES))
        {
            let t = unpack_polys(block, K)
                .map_err(|_| PulsarError::Encoding("share public coefficient not below q"))?;
            for (acc, part) in total.iter_mut().zip(&t) {
                for (a, &b) in acc.iter_mut().zip(part) {
                    *a = reduce(*a + b);
                }
            }
            share_publics.push((mask, t.iter().map(ntt_of).collect()));
        }
        let rho = public_key_bytes
            .get(..32)
            .ok_or(PulsarError::Encoding("public key"))?;
        if encode_public_key(rho, &total) != public_key_bytes {
            return Err(PulsarError::Encoding(
                "share publics do not sum to the public key's t1",
            ));
        }
        group_key(
            params,
            public_key_bytes.to_vec(),
            expand_a(rho),
            share_publics,
        )
    }
}

impl KeyShare {
    /// The share's encoding, for the party's key file (ours), zeroized on drop:
    ///
    /// ```text
    /// party (u16 big-endian) ‖ t (1 byte) ‖ n (1 byte)
    ///   ‖ for every share subset U ∋ party, in `share_subsets(t, n)` order (increasing masks):
    ///       s1_U (l = 5 polynomials) then s2_U (k = 6 polynomials), each coefficient c in
    ///       [−η, η] stored as η − c in 4 bits, packed least-significant bit first
    ///       (FIPS 204 BitPack, Algorithm 17): 1,408 bytes
    /// ```
    ///
    /// The masks are not stored: (party, t, n) determines them. Length 4 + C(n − 1, t − 1)·1,408
    /// bytes: 2,820 for 2-of-3, 4,228 for 3-of-4, at most 14,084 (3-of-6 and 4-of-6).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        // Exact capacity: packing never reallocates, so no copy of the secret is left behind.
        let mut out = Zeroizing::new(Vec::with_capacity(
            KEY_SHARE_HEADER_BYTES + self.shares.len() * SHARE_SECRET_BYTES,
        ));
        out.extend_from_slice(&self.party.to_be_bytes());
        // t ≤ n ≤ MAX_PARTIES = 6: both fit a byte.
        out.push(self.params.threshold as u8);
        out.push(self.params.parties as u8);
        for (_, secret) in &self.shares {
            pack_bits(
                secret.iter().flatten().map(|&c| (ETA - c) as u32),
                SHORT_BITS,
                &mut out,
            );
        }
        out
    }

    /// Decodes [`KeyShare::to_bytes`]: reads (party, t, n), requires a supported shape, party
    /// below n, the exact length for them (before anything is allocated) and every coefficient
    /// in [−η, η]. The decoded secret is zeroized on drop. This checks the encoding only: bind
    /// the share to its key with [`GroupKey::check_share`] before signing with it.
    ///
    /// Errors: [`PulsarError::UnsupportedShape`] for a (t, n) without parameters;
    /// [`PulsarError::Encoding`] naming the field: `"key share header"` (under 4 bytes),
    /// `"key share party not below n"`, `"key share length"`, `"key share coefficient outside
    /// [-eta, eta]"`.
    pub fn from_bytes(bytes: &[u8]) -> Result<KeyShare, PulsarError> {
        let (&[p0, p1, threshold, parties], rest) = bytes
            .split_first_chunk::<KEY_SHARE_HEADER_BYTES>()
            .ok_or(PulsarError::Encoding("key share header"))?;
        let party = u16::from_be_bytes([p0, p1]);
        let params = header_shape(threshold, parties)?;
        if usize::from(party) >= params.parties {
            return Err(PulsarError::Encoding("key share party not below n"));
        }
        // party < n ≤ 6, so the shift stays inside a Mask.
        let masks: Vec<Mask> = share_subsets(params.threshold, params.parties)
            .into_iter()
            .filter(|m| m & (1 << party) != 0)
            .collect();
        if rest.len() != masks.len() * SHARE_SECRET_BYTES {
            return Err(PulsarError::Encoding("key share length"));
        }
        let shares = masks
            .into_iter()
            .zip(rest.chunks_exact(SHARE_SECRET_BYTES))
            .map(|(mask, block)| Ok((mask, unpack_short_polys(block)?)))
            .collect::<Result<_, PulsarError>>()?;
        Ok(KeyShare {
            party,
            params,
            shares,
        })
    }
}

/// One secret share of a [`KeyShare`] encoding ([`SHARE_SECRET_BYTES`] bytes): l + k
/// polynomials, coefficient η − v for each 4-bit v, which must be at most 2η. Written straight
/// into zeroized memory.
fn unpack_short_polys(bytes: &[u8]) -> Result<Zeroizing<Vec<Poly>>, PulsarError> {
    let mut polys = Zeroizing::new(vec![[0i32; N]; L + K]);
    let mut slots = polys.iter_mut().flatten();
    let max = (2 * ETA) as u64;
    unpack(bytes, (L + K) * N, SHORT_BITS, "pulsar key share", |v| {
        if v > max {
            return Err(EncodingError::OutOfRange {
                what: "pulsar key share",
            });
        }
        if let Some(slot) = slots.next() {
            *slot = ETA - v as i32;
        }
        Ok(())
    })
    .map_err(|e| match e {
        EncodingError::OutOfRange { .. } => {
            PulsarError::Encoding("key share coefficient outside [-eta, eta]")
        }
        _ => PulsarError::Encoding("key share length"),
    })?;
    Ok(polys)
}

// ---------------------------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------------------------

/// A signing session id, 32 bytes, chosen by the caller; a [`Signer`] uses each at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionId(pub [u8; 32]);

/// What a session signs and who signs it: exactly t distinct parties (increasing), the message
/// and the FIPS 204 context string. μ = H(tr ‖ 0 ‖ |ctx| ‖ ctx ‖ M, 64) (Algorithms 2, 7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    id: SessionId,
    signers: Vec<u16>,
    message: Vec<u8>,
    context: Vec<u8>,
    mu: [u8; 64],
    /// For each share subset (in `share_subsets` order), the signer that uses it.
    owners: Vec<u16>,
}

impl Session {
    /// A session of `group`'s key. Errors: [`PulsarError::InvalidSet`] unless `signers` are
    /// exactly t distinct parties below n; [`PulsarError::ContextTooLong`].
    pub fn new(
        group: &GroupKey,
        id: SessionId,
        signers: &[u16],
        message: &[u8],
        context: &[u8],
    ) -> Result<Session, PulsarError> {
        let params = group.params;
        let mut sorted = signers.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != signers.len() {
            return Err(PulsarError::InvalidSet("a party appears twice"));
        }
        if sorted.len() != params.threshold {
            return Err(PulsarError::InvalidSet("a session has exactly t signers"));
        }
        if sorted.iter().any(|&p| usize::from(p) >= params.parties) {
            return Err(PulsarError::InvalidSet("party index not below n"));
        }
        let ctx_len = u8::try_from(context.len()).map_err(|_| PulsarError::ContextTooLong)?;
        let mut mu = [0u8; 64];
        shake256(&[&group.tr, &[0, ctx_len], context, message], &mut mu);
        let owners = assign(params.threshold, params.parties, &sorted)
            .ok_or(PulsarError::InvalidSet("no balanced share assignment"))?;
        Ok(Session {
            id,
            signers: sorted,
            message: message.to_vec(),
            context: context.to_vec(),
            mu,
            owners,
        })
    }

    /// The session id.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// The signers, increasing.
    pub fn signers(&self) -> &[u16] {
        &self.signers
    }

    /// The share subsets `party` uses in this session.
    fn subsets_of(&self, group: &GroupKey, party: u16) -> Vec<Mask> {
        share_subsets(group.params.threshold, group.params.parties)
            .into_iter()
            .zip(&self.owners)
            .filter(|(_, &o)| o == party)
            .map(|(m, _)| m)
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

/// Round 1: a commitment to the party's K values w_{i,k}.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round1Message {
    /// Sender.
    pub party: u16,
    /// Session.
    pub session: SessionId,
    /// tagged_hash(`QUASAR-PULSAR-COMMIT-v1`; tr, sid, signers, μ, party, w_{i,1..K}).
    pub commitment: [u8; 32],
}

/// Round 2: the committed w_{i,k}, k = 1..K (k polynomials each, residues).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round2Message {
    /// Sender.
    pub party: u16,
    /// Session.
    pub session: SessionId,
    /// w_{i,k}: K entries of k polynomials in [0, q).
    pub w: Vec<Vec<Poly>>,
}

/// Round 3: per attempt k, z_{i,k} = y_{i,k} + c_k·s1_i if the party accepted it, else nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round3Message {
    /// Sender.
    pub party: u16,
    /// Session.
    pub session: SessionId,
    /// K entries: l polynomials in [0, q) (z centered mod q), or `None` for a rejected attempt.
    pub z: Vec<Option<Vec<Poly>>>,
}

/// Encodes polynomials of residues at 23 bits per coefficient.
fn pack_polys<'a>(polys: impl IntoIterator<Item = &'a Poly>, out: &mut Vec<u8>) {
    pack_bits(
        polys.into_iter().flatten().map(|&v| v as u32),
        RESIDUE_BITS,
        out,
    );
}

/// Decodes `count` polynomials of residues; every value must be below q.
fn unpack_polys(bytes: &[u8], count: usize) -> Result<Vec<Poly>, PulsarError> {
    if bytes.len() != count * POLY_BYTES {
        return Err(PulsarError::Encoding("polynomial block length"));
    }
    let values = unpack_bits(bytes, RESIDUE_BITS, count * N)
        .ok_or(PulsarError::Encoding("polynomial block length"))?;
    if values.iter().any(|&v| v >= Q as u32) {
        return Err(PulsarError::Encoding("coefficient not below q"));
    }
    Ok(values
        .chunks_exact(N)
        .map(|c| std::array::from_fn(|i| c.get(i).copied().unwrap_or(0) as i32))
        .collect())
}

/// Reads the 2-byte party (big-endian) and 32-byte session header.
fn read_header(bytes: &[u8]) -> Result<(u16, SessionId, &[u8]), PulsarError> {
    if bytes.len() < 34 {
        return Err(PulsarError::Encoding("shorter than its header"));
    }
    let (party, rest) = bytes.split_at(2);
    let (session, rest) = rest.split_at(32);
    let party = u16::from_be_bytes(
        party
            .try_into()
            .map_err(|_| PulsarError::Encoding("header"))?,
    );
    let mut id = [0u8; 32];
    id.copy_from_slice(session);
    Ok((party, SessionId(id), rest))
}

fn header(party: u16, session: &SessionId) -> Vec<u8> {
    let mut out = party.to_be_bytes().to_vec();
    out.extend_from_slice(&session.0);
    out
}

impl Round1Message {
    /// party (u16 BE) ‖ session (32 B) ‖ commitment (32 B): 66 bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = header(self.party, &self.session);
        out.extend_from_slice(&self.commitment);
        out
    }

    /// Decodes [`Round1Message::to_bytes`]. Errors: [`PulsarError::Encoding`] unless exactly
    /// 66 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Round1Message, PulsarError> {
        let (party, session, rest) = read_header(bytes)?;
        let commitment = <[u8; 32]>::try_from(rest)
            .map_err(|_| PulsarError::Encoding("round-1 message length"))?;
        Ok(Round1Message {
            party,
            session,
            commitment,
        })
    }
}

impl Round2Message {
    /// party ‖ session ‖ K·k polynomials at 23 bits (K·4,416 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = header(self.party, &self.session);
        pack_polys(self.w.iter().flatten(), &mut out);
        out
    }

    /// Decodes [`Round2Message::to_bytes`] for a key with `params` (K attempts). Errors:
    /// [`PulsarError::Encoding`] for a wrong length or a coefficient ≥ q. The length is checked
    /// before anything is allocated.
    pub fn from_bytes(bytes: &[u8], params: &Parameters) -> Result<Round2Message, PulsarError> {
        let (party, session, rest) = read_header(bytes)?;
        if rest.len() != params.attempts * K * POLY_BYTES {
            return Err(PulsarError::Encoding("round-2 message length"));
        }
        let w = rest
            .chunks_exact(K * POLY_BYTES)
            .map(|chunk| unpack_polys(chunk, K))
            .collect::<Result<_, _>>()?;
        Ok(Round2Message { party, session, w })
    }
}

impl Round3Message {
    /// party ‖ session ‖ per attempt a flag byte (1 accepted, 0 rejected) then, if accepted,
    /// l polynomials at 23 bits (3,680 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = header(self.party, &self.session);
        for z in &self.z {
            match z {
                Some(z) => {
                    out.push(1);
                    pack_polys(z, &mut out);
                }
                None => out.push(0),
            }
        }
        out
    }

    /// Decodes [`Round3Message::to_bytes`] for a key with `params`. Errors:
    /// [`PulsarError::Encoding`] for a flag other than 0/1, a coefficient ≥ q, or a wrong or
    /// inconsistent length (checked as it reads; at most K entries are allocated).
    pub fn from_bytes(bytes: &[u8], params: &Parameters) -> Result<Round3Message, PulsarError> {
        let (party, session, mut rest) = read_header(bytes)?;
        if rest.len() > params.attempts * (1 + L * POLY_BYTES) {
            return Err(PulsarError::Encoding("round-3 message length"));
        }
        let mut z = Vec::with_capacity(params.attempts);
        for _ in 0..params.attempts {
            let (&flag, tail) = rest
                .split_first()
                .ok_or(PulsarError::Encoding("round-3 message length"))?;
            rest = tail;
            match flag {
                0 => z.push(None),
                1 => {
                    if rest.len() < L * POLY_BYTES {
                        return Err(PulsarError::Encoding("round-3 message length"));
                    }
                    let (block, tail) = rest.split_at(L * POLY_BYTES);
                    rest = tail;
                    z.push(Some(unpack_polys(block, L)?));
                }
                _ => return Err(PulsarError::Encoding("round-3 flag")),
            }
        }
        if !rest.is_empty() {
            return Err(PulsarError::Encoding("trailing bytes"));
        }
        Ok(Round3Message { party, session, z })
    }
}

// ---------------------------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------------------------

/// A signer: its key share plus the never-reuse guard of session ids (in memory; a restarted
/// process must not reuse ids either, which thresholdd's persistent guard will enforce).
pub struct Signer {
    share: KeyShare,
    used_sessions: HashSet<SessionId>,
}

/// A party's secret state between rounds 1 and 3: the continuous hyperball samples (zeroized
/// on drop) and its own w_{i,k}. Consumed by round 3, so it can answer one challenge only.
pub struct Round1State {
    session: Session,
    commitment: [u8; 32],
    /// K samples of [`DIMENSION`] coordinates: the z part (l·256, scaled by ν) then the k·256
    /// part that hides s2.
    samples: Zeroizing<Vec<f64>>,
    w: Vec<Vec<Poly>>,
}

/// Round 2's state: round 1's plus every signer's commitment.
pub struct Round2State {
    round1: Round1State,
    commitments: Vec<Round1Message>,
}

/// The commitment of `party` to `w` in `session`.
fn commitment(group: &GroupKey, session: &Session, party: u16, w: &[Vec<Poly>]) -> [u8; 32] {
    let signers: Vec<u8> = session
        .signers
        .iter()
        .flat_map(|p| p.to_be_bytes())
        .collect();
    let mut packed = Vec::with_capacity(w.len() * K * POLY_BYTES);
    pack_polys(w.iter().flatten(), &mut packed);
    tagged_hash(
        "QUASAR-PULSAR-COMMIT-v1",
        &[
            &group.tr,
            &session.id.0,
            &signers,
            &session.mu,
            &party.to_be_bytes(),
            &packed,
        ],
    )
}

/// A uniform point of the ν-weighted hyperball of radius r': D + 2 standard normals scaled to
/// the sphere of radius r', the first D kept (uniform in the D-ball), the z part times ν.
fn hyperball<R: RngCore + CryptoRng>(radius: f64, rng: &mut R, out: &mut [f64]) {
    let mut extra = [0f64; 2];
    let mut norm2 = 0.0;
    for x in out.iter_mut().chain(extra.iter_mut()) {
        let g: f64 = rng.sample(StandardNormal);
        norm2 += g * g;
        *x = g;
    }
    let scale = radius / norm2.sqrt();
    for (i, x) in out.iter_mut().enumerate() {
        *x *= if i < L * N { scale * NU } else { scale };
    }
    extra.zeroize();
}

/// Rounds `sample[offset..offset + polys·256]` to integer polynomials (residues).
fn round_polys(sample: &[f64], offset: usize, polys: usize) -> Vec<Poly> {
    (0..polys)
        .map(|p| {
            std::array::from_fn(|i| {
                let v = sample.get(offset + p * N + i).copied().unwrap_or(0.0);
                reduce(v.round() as i32)
            })
        })
        .collect()
}

/// The ν-weighted squared norm of an integer response (z part, hiding part), both centered.
fn weighted_norm2(z: &[Poly], hiding: &[Poly]) -> f64 {
    let sum = |polys: &[Poly]| -> f64 {
        polys
            .iter()
            .flatten()
            .map(|&v| f64::from(centered(v)).powi(2))
            .sum()
    };
    sum(z) / (NU * NU) + sum(hiding)
}

/// The challenge of attempt k from the aggregated w_k: (w1, c̃, NTT(c)).
fn challenge(mu: &[u8; 64], w: &[Poly]) -> (Vec<[u32; N]>, Vec<u8>, Poly) {
    let w1: Vec<[u32; N]> = w.iter().map(|p| p.map(high_bits)).collect();
    let mut c_tilde = vec![0u8; ML_DSA.c_tilde_bytes];
    shake256(&[mu, &w1_encode(&ML_DSA, &w1)], &mut c_tilde);
    let c = sample_in_ball(&ML_DSA, &c_tilde).map(i32::from);
    (w1, c_tilde, ntt_of(&c))
}

/// Σ over `messages` of their w_k, per attempt.
fn aggregate_w(reveals: &[Round2Message], attempts: usize) -> Vec<Vec<Poly>> {
    (0..attempts)
        .map(|k| {
            (0..K)
                .map(|r| {
                    let mut acc = [0i32; N];
                    for m in reveals {
                        if let Some(p) = m.w.get(k).and_then(|w| w.get(r)) {
                            for (a, &b) in acc.iter_mut().zip(p) {
                                *a = reduce(*a + b);
                            }
                        }
                    }
                    acc
                })
                .collect()
        })
        .collect()
}

/// The messages of `session`'s signers in signer order: each signer exactly once, from this
/// session; a stranger or a duplicate is misbehaviour, a gap is [`PulsarError::Missing`].
fn ordered<'a, M>(
    session: &Session,
    messages: &'a [M],
    sender: impl Fn(&M) -> (u16, SessionId),
) -> Result<Vec<&'a M>, PulsarError> {
    for (i, m) in messages.iter().enumerate() {
        let (party, id) = sender(m);
        if !session.signers.contains(&party) {
            return Err(PulsarError::Misbehaved {
                party,
                reason: "sent a message but is not a signer of the session",
            });
        }
        if id != session.id {
            return Err(PulsarError::Misbehaved {
                party,
                reason: "message for another session",
            });
        }
        if messages
            .iter()
            .take(i)
            .any(|other| sender(other).0 == party)
        {
            return Err(PulsarError::Misbehaved {
                party,
                reason: "sent two messages for one round",
            });
        }
    }
    session
        .signers
        .iter()
        .map(|&p| {
            messages
                .iter()
                .find(|m| sender(m).0 == p)
                .ok_or(PulsarError::Missing(p))
        })
        .collect()
}

/// Checks every reveal against its commitment and its shape.
fn check_reveals<'a>(
    group: &GroupKey,
    session: &Session,
    commitments: &[Round1Message],
    reveals: &'a [Round2Message],
) -> Result<Vec<&'a Round2Message>, PulsarError> {
    let commitments = ordered(session, commitments, |m| (m.party, m.session))?;
    let reveals = ordered(session, reveals, |m| (m.party, m.session))?;
    let mismatch = commitments
        .par_iter()
        .zip(reveals.par_iter())
        .find_first(|(c, r)| {
            r.w.len() != group.params.attempts
                || r.w.iter().any(|w| w.len() != K)
                || commitment(group, session, r.party, &r.w) != c.commitment
        });
    match mismatch {
        Some((_, r)) => Err(PulsarError::Misbehaved {
            party: r.party,
            reason: "revealed values that do not match its commitment",
        }),
        None => Ok(reveals),
    }
}

impl Signer {
    /// A signer for `share`, with no session used yet.
    pub fn new(share: KeyShare) -> Signer {
        Signer {
            share,
            used_sessions: HashSet::new(),
        }
    }

    /// This signer's party index.
    pub fn party(&self) -> u16 {
        self.share.party
    }

    /// Round 1: K fresh hyperball samples (y_{i,k}, e_{i,k}) from `rng`, w_{i,k} = A·y + e,
    /// and the commitment to them. Errors: [`PulsarError::SessionReused`] (even if the earlier
    /// use failed), [`PulsarError::NotASigner`].
    pub fn round1<R: RngCore + CryptoRng>(
        &mut self,
        group: &GroupKey,
        session: &Session,
        rng: &mut R,
    ) -> Result<(Round1Message, Round1State), PulsarError> {
        let party = self.share.party;
        if !session.signers.contains(&party) {
            return Err(PulsarError::NotASigner(party));
        }
        if !self.used_sessions.insert(session.id) {
            return Err(PulsarError::SessionReused);
        }
        let attempts = group.params.attempts;
        // One 32-byte seed from the caller's CSPRNG per session, expanded by ChaCha12 with one
        // stream per attempt, so the attempts are sampled in parallel.
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(seed.as_mut());
        let mut samples = Zeroizing::new(vec![0f64; attempts * DIMENSION]);
        let radius = group.params.sampling_radius;
        let w: Vec<Vec<Poly>> = samples
            .par_chunks_exact_mut(DIMENSION)
            .enumerate()
            .map(|(k, sample)| {
                let mut stream = ChaCha12Rng::from_seed(*seed);
                stream.set_stream(k as u64);
                hyperball(radius, &mut stream, sample);
                let y = Zeroizing::new(round_polys(sample, 0, L));
                let e = Zeroizing::new(round_polys(sample, L * N, K));
                let y_hat: Zeroizing<Vec<Poly>> = Zeroizing::new(y.iter().map(ntt_of).collect());
                let ay = matrix_vector(&group.a_hat, &y_hat, K);
                ay.iter().zip(e.iter()).map(|(a, b)| add(a, b)).collect()
            })
            .collect();
        let commitment = commitment(group, session, party, &w);
        let message = Round1Message {
            party,
            session: session.id,
            commitment,
        };
        let state = Round1State {
            session: session.clone(),
            commitment,
            samples,
            w,
        };
        Ok((message, state))
    }

    /// Round 2: checks that every signer committed once, and reveals w_{i,1..K}. Errors:
    /// [`PulsarError::Missing`], [`PulsarError::Misbehaved`] (a stranger, a duplicate, another
    /// session, or a changed copy of this party's own commitment).
    pub fn round2(
        &self,
        state: Round1State,
        commitments: &[Round1Message],
    ) -> Result<(Round2Message, Round2State), PulsarError> {
        let session = &state.session.clone();
        let ordered = ordered(session, commitments, |m| (m.party, m.session))?;
        if ordered
            .iter()
            .any(|m| m.party == self.share.party && m.commitment != state.commitment)
        {
            return Err(PulsarError::Misbehaved {
                party: self.share.party,
                reason: "its commitment was altered in transit",
            });
        }
        let message = Round2Message {
            party: self.share.party,
            session: session.id,
            w: state.w.clone(),
        };
        let commitments = ordered.into_iter().cloned().collect();
        Ok((
            message,
            Round2State {
                round1: state,
                commitments,
            },
        ))
    }

    /// Round 3: checks every reveal against its commitment, computes each attempt's challenge
    /// c_k from Σ_j w_{j,k}, and answers z_{i,k} = y_{i,k} + c_k·s1_i for the attempts whose
    /// response (y + c·s1, e + c·s2) lies in the ν-weighted ball of radius r; rejected attempts
    /// are sent as empty. s1_i, s2_i are the sums of the shares this party uses in the session.
    /// Consumes the state. Errors: [`PulsarError::Missing`], [`PulsarError::Misbehaved`].
    pub fn round3(
        &self,
        group: &GroupKey,
        state: Round2State,
        reveals: &[Round2Message],
    ) -> Result<Round3Message, PulsarError> {
        let session = state.round1.session.clone();
        let reveals = check_reveals(group, &session, &state.commitments, reveals)?;
        let owned: Vec<Round2Message> = reveals.into_iter().cloned().collect();
        let w = aggregate_w(&owned, group.params.attempts);
        let (s1_hat, s2_hat) = self.session_share(group, &session);
        let radius2 = group.params.radius.powi(2);
        let z = w
            .par_iter()
            .zip(state.round1.samples.par_chunks_exact(DIMENSION))
            .map(|(w_k, sample)| {
                let (_, _, c_hat) = challenge(&session.mu, w_k);
                let cs1 = Zeroizing::new(scalar_vector(&c_hat, &s1_hat));
                let cs2 = Zeroizing::new(scalar_vector(&c_hat, &s2_hat));
                let (z_part, hiding_part) = sample.split_at(L * N);
                let shifted_norm2 = |part: &[f64], shift: &[Poly]| -> f64 {
                    part.iter()
                        .zip(shift.iter().flatten())
                        .map(|(&v, &c)| (v + f64::from(centered(c))).powi(2))
                        .sum()
                };
                let norm2 =
                    shifted_norm2(z_part, &cs1) / (NU * NU) + shifted_norm2(hiding_part, &cs2);
                (norm2 <= radius2).then(|| {
                    let y = Zeroizing::new(round_polys(sample, 0, L));
                    y.iter().zip(cs1.iter()).map(|(a, b)| add(a, b)).collect()
                })
            })
            .collect();
        Ok(Round3Message {
            party: self.share.party,
            session: session.id,
            z,
        })
    }

    /// NTT(Σ s1_U), NTT(Σ s2_U) over the subsets this party uses in `session`.
    fn session_share(
        &self,
        group: &GroupKey,
        session: &Session,
    ) -> (Zeroizing<Vec<Poly>>, Zeroizing<Vec<Poly>>) {
        let used = session.subsets_of(group, self.share.party);
        let mut sum = Zeroizing::new(vec![[0i32; N]; L + K]);
        for (mask, secret) in &self.share.shares {
            if used.contains(mask) {
                for (acc, p) in sum.iter_mut().zip(secret.iter()) {
                    for (a, &b) in acc.iter_mut().zip(p) {
                        *a += b;
                    }
                }
            }
        }
        let hat: Vec<Poly> = sum.iter().map(ntt_of).collect();
        let mut hat = Zeroizing::new(hat);
        let s2 = Zeroizing::new(hat.split_off(L));
        (hat, s2)
    }
}

// ---------------------------------------------------------------------------------------------
// Combining
// ---------------------------------------------------------------------------------------------

/// Combines a session's messages into a standard ML-DSA-65 signature (3309 bytes, FIPS 204
/// sigEncode, Algorithm 26), verified under the group's public key before it is returned.
///
/// For each attempt k that every signer accepted: z = Σ z_{i,k} must have ‖z‖∞ < γ1 − β;
/// w' = A·z − c·t1·2^d must be within γ2 of w_k = Σ w_{i,k} (‖f‖∞ < γ2 for f = w' − w_k); the
/// hint h_j = \[HighBits(w'_j) ≠ HighBits(w_{k,j})\] must have at most ω ones and make
/// UseHint(h, w') = HighBits(w_k). The first such attempt gives (c̃_k, z, h).
///
/// Errors: [`PulsarError::Missing`] and [`PulsarError::Misbehaved`] for a missing, foreign,
/// duplicated or mismatched message; when no attempt works, every accepted response is
/// checked against its sender's public share (A·z_{i,k} − c_k·t_i − w_{i,k} = −(e + c·s2) must
/// keep the response in the ball) and the first inconsistent party is blamed
/// ([`PulsarError::Misbehaved`]); otherwise [`PulsarError::Restart`].
pub fn combine(
    group: &GroupKey,
    session: &Session,
    commitments: &[Round1Message],
    reveals: &[Round2Message],
    responses: &[Round3Message],
) -> Result<Vec<u8>, PulsarError> {
    let attempts = group.params.attempts;
    let reveals: Vec<Round2Message> = check_reveals(group, session, commitments, reveals)?
        .into_iter()
        .cloned()
        .collect();
    let responses = ordered(session, responses, |m| (m.party, m.session))?;
    for r in &responses {
        if r.z.len() != attempts || r.z.iter().flatten().any(|z| z.len() != L) {
            return Err(PulsarError::Misbehaved {
                party: r.party,
                reason: "response of the wrong shape",
            });
        }
    }
    let w = aggregate_w(&reveals, attempts);
    for (k, w_k) in w.iter().enumerate() {
        let parts: Option<Vec<&Vec<Poly>>> = responses
            .iter()
            .map(|r| r.z.get(k).and_then(Option::as_ref))
            .collect();
        let Some(parts) = parts else {
            continue;
        };
        let z: Vec<Poly> = (0..L)
            .map(|j| {
                let mut acc = [0i32; N];
                for part in &parts {
                    if let Some(p) = part.get(j) {
                        for (a, &b) in acc.iter_mut().zip(p) {
                            *a = reduce(*a + b);
                        }
                    }
                }
                acc
            })
            .collect();
        if let Some(signature) = try_attempt(group, session, w_k, &z) {
            return Ok(signature);
        }
    }
    blame(group, session, &reveals, &responses, &w)?;
    Err(PulsarError::Restart)
}

/// One attempt of [`combine`]: the encoded signature if it meets every bound and verifies.
fn try_attempt(group: &GroupKey, session: &Session, w: &[Poly], z: &[Poly]) -> Option<Vec<u8>> {
    let bound = (ML_DSA.gamma1 - ML_DSA.beta) as i32;
    if z.iter().flatten().any(|&v| centered(v).abs() >= bound) {
        return None;
    }
    let (w1, c_tilde, c_hat) = challenge(&session.mu, w);
    let z_hat: Vec<Poly> = z.iter().map(ntt_of).collect();
    let az = matrix_vector(&group.a_hat, &z_hat, K);
    let ct1 = scalar_vector(&c_hat, &group.t1_hat);
    let mut hints = Vec::with_capacity(K);
    let mut weight = 0;
    for ((az_r, ct_r), (w_r, w1_r)) in az.iter().zip(&ct1).zip(w.iter().zip(&w1)) {
        let mut h = [false; N];
        let w_prime = sub(az_r, ct_r);
        for (((hint, &wp), &w), &w1) in h.iter_mut().zip(&w_prime).zip(w_r).zip(w1_r) {
            if centered(wp - w).abs() >= GAMMA2 {
                return None;
            }
            *hint = high_bits(wp) != w1;
            if use_hint(&ML_DSA, *hint, wp as u32) != w1 {
                return None;
            }
        }
        weight += h.iter().filter(|&&b| b).count();
        hints.push(h);
    }
    if weight > ML_DSA.omega {
        return None;
    }
    let signature = encode_signature(&c_tilde, z, &hints);
    let decoded = Signature::<MlDsa65>::from_bytes(&signature).ok()?;
    group
        .public_key
        .verify(&session.message, &session.context, &decoded)
        .ok()?;
    Some(signature)
}

/// FIPS 204 Algorithm 26, sigEncode: c̃ ‖ BitPack(z, γ1 − 1, γ1) ‖ HintBitPack(h).
fn encode_signature(c_tilde: &[u8], z: &[Poly], hints: &[[bool; N]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SIGNATURE_BYTES);
    out.extend_from_slice(c_tilde);
    pack_bits(
        z.iter()
            .flatten()
            .map(|&v| (ML_DSA.gamma1 as i32 - centered(v)) as u32),
        ML_DSA.z_bits() as u32,
        &mut out,
    );
    let mut indices = Vec::with_capacity(ML_DSA.omega + K);
    let mut counts = Vec::with_capacity(K);
    for h in hints {
        indices.extend(
            h.iter()
                .enumerate()
                .filter(|(_, &b)| b)
                .map(|(i, _)| i as u8),
        );
        counts.push(indices.len() as u8);
    }
    indices.resize(ML_DSA.omega, 0);
    out.extend_from_slice(&indices);
    out.extend_from_slice(&counts);
    out
}

/// After a failed combine: the first party whose accepted response is inconsistent with its
/// public share t_i = Σ t_U over the subsets it uses (module docs), if any.
fn blame(
    group: &GroupKey,
    session: &Session,
    reveals: &[Round2Message],
    responses: &[&Round3Message],
    w: &[Vec<Poly>],
) -> Result<(), PulsarError> {
    // Rounding adds at most 1/2 per coordinate to an honest response's weighted norm.
    let slack = 0.5 * ((L * N) as f64 / (NU * NU) + (K * N) as f64).sqrt();
    let limit2 = (group.params.radius + slack).powi(2);
    for (reveal, response) in reveals.iter().zip(responses) {
        let party = response.party;
        let used = session.subsets_of(group, party);
        let mut t_hat = vec![[0i32; N]; K];
        for (mask, t) in &group.share_publics {
            if used.contains(mask) {
                for (acc, p) in t_hat.iter_mut().zip(t) {
                    for (a, &b) in acc.iter_mut().zip(p) {
                        *a = reduce(*a + b);
                    }
                }
            }
        }
        for (k, z) in response.z.iter().enumerate() {
            let (Some(z), Some(w_k), Some(own_w)) = (z, w.get(k), reveal.w.get(k)) else {
                continue;
            };
            let (_, _, c_hat) = challenge(&session.mu, w_k);
            let z_hat: Vec<Poly> = z.iter().map(ntt_of).collect();
            let az = matrix_vector(&group.a_hat, &z_hat, K);
            let ct = scalar_vector(&c_hat, &t_hat);
            let hiding: Vec<Poly> = az
                .iter()
                .zip(&ct)
                .zip(own_w)
                .map(|((a, c), w)| sub(&sub(a, c), w))
                .collect();
            if weighted_norm2(z, &hiding) > limit2 {
                return Err(PulsarError::Misbehaved {
                    party,
                    reason: "response inconsistent with its public share",
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollup::native::decompose;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn high_bits_is_fips_204_decompose() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let edges = [
            0,
            1,
            GAMMA2,
            GAMMA2 + 1,
            2 * GAMMA2,
            Q - GAMMA2 - 1,
            Q - GAMMA2,
            Q - 1,
        ];
        for r in edges
            .into_iter()
            .chain((0..10_000).map(|_| rng.gen_range(0..Q)))
        {
            assert_eq!(high_bits(r), decompose(&ML_DSA, r as u32).0, "r = {r}");
        }
    }

    #[test]
    fn a_party_signing_with_a_wrong_share_is_named() {
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let (group, mut shares) = trusted_dealer_keygen(2, 3, &mut rng).unwrap();
        // Party 1's share of subset {1, 2} (its second) is corrupted, one coefficient off by 3:
        // in a session of {0, 1} only party 1 holds that subset, so it must use it.
        if let Some((mask, secret)) = shares.get_mut(1).and_then(|s| s.shares.get_mut(1)) {
            assert_eq!(*mask, 0b110);
            secret[0][0] += 3;
        }
        assert!(!group.check_share(&shares[1]));
        let mut signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
        let session = Session::new(&group, SessionId([1; 32]), &[0, 1], b"m", b"").unwrap();
        let (r1a, s1a) = signers[0].round1(&group, &session, &mut rng).unwrap();
        let (r1b, s1b) = signers[1].round1(&group, &session, &mut rng).unwrap();
        let r1 = [r1a, r1b];
        let (r2a, s2a) = signers[0].round2(s1a, &r1).unwrap();
        let (r2b, s2b) = signers[1].round2(s1b, &r1).unwrap();
        let r2 = [r2a, r2b];
        let r3 = [
            signers[0].round3(&group, s2a, &r2).unwrap(),
            signers[1].round3(&group, s2b, &r2).unwrap(),
        ];
        assert_eq!(
            combine(&group, &session, &r1, &r2, &r3),
            Err(PulsarError::Misbehaved {
                party: 1,
                reason: "response inconsistent with its public share"
            })
        );
    }
}
