//! Corona's hash suite: cSHAKE256, KMAC256/KMACXOF256 and TupleHash256/TupleHashXOF256 (NIST
//! SP 800-185), with one customization string `QUASAR-CORONA-<ROLE>-v1` per use in the scheme.
//!
//! # What is implemented, and on what
//!
//! - **cSHAKE256** (SP 800-185 §3) is RustCrypto `sha3`'s [`sha3::CShake256`] (the Keccak-f\[1600\]
//!   permutation of FIPS 202 and `bytepad(encode_string(N) ‖ encode_string(S), 136)` prefix).
//! - **KMAC256 / KMACXOF256** (§4) and **TupleHash256 / TupleHashXOF256** (§5) are built here on
//!   that cSHAKE256 with function names `"KMAC"` and `"TupleHash"`, using this module's
//!   `left_encode`, `right_encode`, `encode_string` and `bytepad` (§2.3), about sixty lines.
//!
//! Why not a crate for KMAC/TupleHash: `sha3` 0.10 has no KMAC or TupleHash; `tiny-keccak`
//! 2.0.2 (features `kmac`, `tuple_hash`) has had no release since 2020 and would add a second
//! Keccak implementation to the build next to the one `sha3` (and `libcrux`) already bring.
//! The constructions on top of cSHAKE are short and fully specified, and the tests pin them to
//! NIST's published sample values (`crypto/tests/corona_sample.rs`: cSHAKE256 samples #3–#4,
//! KMAC256 #4–#6, KMACXOF256 #4–#6, TupleHash256 #4–#6, TupleHashXOF256 #4–#6).
//!
//! # Corona's roles
//!
//! Every use in the scheme has its own customization string S ([`Role::customization`]); the
//! function name N separates the constructions as well (`""` for [`xof`]/[`prg`], `"KMAC"` for
//! [`mac`]/[`keyed_xof`], `"TupleHash"` for [`hash`]), so no two roles or constructions ever
//! share a Keccak input:
//!
//! | role | S | construction | used for |
//! |---|---|---|---|
//! | [`Role::Transcript`] | `QUASAR-CORONA-TRANSCRIPT-v1` | TupleHash256, 32 B | round-2 transcript hash over the group key, session id, signing set and every D_j of the set in order |
//! | [`Role::Hu`] | `QUASAR-CORONA-HU-v1` | TupleHash256 seed, then [`prg`] per polynomial | the hashed Gaussian vector h_u |
//! | [`Role::Challenge`] | `QUASAR-CORONA-CHALLENGE-v1` | TupleHash256 seed, then [`xof`] | the sparse ternary challenge c |
//! | [`Role::ExpandA`] | `QUASAR-CORONA-EXPAND-A-v1` | [`xof`] keyed by the public 32-byte seed, one index per entry | the public matrix A (never a stream that also feeds secrets) |
//! | [`Role::Prf`] | `QUASAR-CORONA-PRF-v1` | KMAC256 / KMACXOF256 keyed by a pairwise seed | the pairwise masks of round 2 |
//! | [`Role::Mac`] | `QUASAR-CORONA-MAC-v1` | KMAC256 keyed by a pairwise MAC key | the round-1 MACs |
//!
//! The reference Go code (luxfi/corona `hash/`) uses the same constructions with tags
//! `CORONA-…-v1`; ours add the `QUASAR-` prefix (docs/architecture.md §4) and split the challenge seed from
//! H_u, so Quasar's outputs are deliberately different from Lux's.
//!
//! Structured inputs (`parts`) are framed with `encode_string` per part, as TupleHash does, so
//! `["ab", "c"]` and `["a", "bc"]` never collide.
//!
//! # The Gaussian stream ([`prg`])
//!
//! The Gaussian sampler reads 256 bytes of randomness per σ_U coefficient (16 base samples of
//! 128 bits, `sample.rs`), about 3 MB for h_u. `sha3`'s SHAKE256 squeezes about 320 MB/s on this
//! machine, ChaCha20 (`rand_chacha`, RFC 8439 block function) about 2.1 GB/s, so the stream that
//! feeds the Gaussian sampler from a hash is ChaCha20 keyed by 32 bytes of cSHAKE256 output:
//! an XOF seeded by a hash, six times faster. ChaCha20 is a PRF under its key, as SHAKE is.

use rand::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{CShake256, CShake256Core, CShake256Reader};

/// Rate of cSHAKE256 in bytes (1600 − 2·256 bits); the `bytepad` width of KMAC256 (SP 800-185 §4.3).
const RATE_256: usize = 136;

/// A use of a hash in Corona; each has its own customization string (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Round-2 transcript hash (TupleHash256).
    Transcript,
    /// Seed and stream of the hashed Gaussian vector h_u.
    Hu,
    /// Seed and stream of the sparse ternary challenge.
    Challenge,
    /// Expansion of the public matrix A from its 32-byte seed.
    ExpandA,
    /// Pairwise pseudorandom masks (KMAC256 / KMACXOF256).
    Prf,
    /// Round-1 pairwise MACs (KMAC256).
    Mac,
}

impl Role {
    /// The SP 800-185 customization string S of this role, `QUASAR-CORONA-<ROLE>-v1` in ASCII.
    pub const fn customization(self) -> &'static [u8] {
        match self {
            Role::Transcript => b"QUASAR-CORONA-TRANSCRIPT-v1",
            Role::Hu => b"QUASAR-CORONA-HU-v1",
            Role::Challenge => b"QUASAR-CORONA-CHALLENGE-v1",
            Role::ExpandA => b"QUASAR-CORONA-EXPAND-A-v1",
            Role::Prf => b"QUASAR-CORONA-PRF-v1",
            Role::Mac => b"QUASAR-CORONA-MAC-v1",
        }
    }
}

/// A 32-byte digest of `parts` for `role`: TupleHash256(parts, L = 256, S = role's string)
/// (SP 800-185 §5.3). Never fails.
pub fn hash(role: Role, parts: &[&[u8]]) -> [u8; 32] {
    let mut h = TupleHash256::new(role.customization());
    for part in parts {
        h.part(part);
    }
    h.finalize()
}

/// A 32-byte MAC (or PRF output) of `parts` under a 32-byte `key` for `role`:
/// KMAC256(K = key, X = encode_string(parts\[0\]) ‖ … ‖ encode_string(parts\[n−1\]), L = 256,
/// S = role's string) (SP 800-185 §4.3). Compare tags with a constant-time comparison.
pub fn mac(role: Role, key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut k = Kmac256::new(key, role.customization());
    for part in parts {
        absorb_encoded_string(&mut k.inner, part);
    }
    let mut out = [0u8; 32];
    k.finalize_into(&mut out);
    out
}

/// A pseudorandom stream keyed by a 32-byte `key` over `parts` for `role`: KMACXOF256 with the
/// same input framing as [`mac`] (SP 800-185 §4.3.1). Used to expand a pairwise seed into a
/// uniform mask vector.
pub fn keyed_xof(role: Role, key: &[u8; 32], parts: &[&[u8]]) -> Xof {
    let mut k = Kmac256::new(key, role.customization());
    for part in parts {
        absorb_encoded_string(&mut k.inner, part);
    }
    k.finalize_xof()
}

/// The byte stream number `index` of a 32-byte `seed` for `role`:
/// cSHAKE256(X = seed ‖ le64(index) ‖ 0x00, N = "", S = role's string) (SP 800-185 §3.3).
/// E.g. entry (i, j) of A is `uniform(&mut xof(Role::ExpandA, &seed_a, (i * N + j) as u64))`.
pub fn xof(role: Role, seed: &[u8; 32], index: u64) -> Xof {
    let mut h = CShake256::from_core(CShake256Core::new(role.customization()));
    h.update(seed);
    h.update(&index.to_le_bytes());
    h.update(&[0x00]);
    Xof {
        reader: h.finalize_xof(),
    }
}

/// A fast deterministic CSPRNG for the Gaussian sampler: ChaCha20 (`rand_chacha`'s
/// [`ChaCha20Rng`], stream 0) keyed by the first 32 bytes of
/// cSHAKE256(X = seed ‖ le64(index) ‖ 0x01, N = "", S = role's string). The trailing byte keeps
/// the key apart from every [`xof`] stream of the same role, seed and index.
pub fn prg(role: Role, seed: &[u8; 32], index: u64) -> ChaCha20Rng {
    let mut h = CShake256::from_core(CShake256Core::new(role.customization()));
    h.update(seed);
    h.update(&index.to_le_bytes());
    h.update(&[0x01]);
    let mut key = [0u8; 32];
    h.finalize_xof().read(&mut key);
    ChaCha20Rng::from_seed(key)
}

/// cSHAKE256(X = input, L = any, N = function_name, S = customization) (SP 800-185 §3.3); read
/// as many bytes as needed from the returned stream. With N and S both empty it is SHAKE256.
pub fn cshake256(function_name: &[u8], customization: &[u8], input: &[u8]) -> Xof {
    let mut h = CShake256::from_core(CShake256Core::new_with_function_name(
        function_name,
        customization,
    ));
    h.update(input);
    Xof {
        reader: h.finalize_xof(),
    }
}

/// An output stream of cSHAKE256, KMACXOF256 or TupleHashXOF256. It is a deterministic
/// [`RngCore`] + [`CryptoRng`] (little-endian `next_u32`/`next_u64`), so the samplers take it
/// like any other CSPRNG.
#[derive(Clone)]
pub struct Xof {
    reader: CShake256Reader,
}

impl std::fmt::Debug for Xof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Xof(..)")
    }
}

impl Xof {
    /// Fills `out` with the next `out.len()` bytes of the stream.
    pub fn read(&mut self, out: &mut [u8]) {
        self.reader.read(out);
    }
}

impl RngCore for Xof {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.reader.read(&mut b);
        u32::from_le_bytes(b)
    }

    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.reader.read(&mut b);
        u64::from_le_bytes(b)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.reader.read(dest);
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.reader.read(dest);
        Ok(())
    }
}

impl CryptoRng for Xof {}

/// Streaming KMAC256 / KMACXOF256 (SP 800-185 §4.3): `new(K, S)`, any number of `update(X part)`,
/// then `finalize_into(out)` (L = 8·out.len() bits) or `finalize_xof()` (L = 0, arbitrary length).
#[derive(Clone)]
pub struct Kmac256 {
    inner: CShake256,
}

impl std::fmt::Debug for Kmac256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kmac256(..)")
    }
}

impl Kmac256 {
    /// Starts KMAC256 with key `key` (any length) and customization string `customization`:
    /// absorbs bytepad(encode_string(K), 136) into cSHAKE256(N = "KMAC", S).
    pub fn new(key: &[u8], customization: &[u8]) -> Self {
        let mut inner = CShake256::from_core(CShake256Core::new_with_function_name(
            b"KMAC",
            customization,
        ));
        // bytepad(encode_string(K), 136) = left_encode(136) ‖ left_encode(8·|K|) ‖ K ‖ 0*.
        let mut enc = [0u8; 17];
        let w = left_encode(RATE_256 as u128, &mut enc);
        inner.update(w);
        let mut absorbed = w.len();
        let mut enc = [0u8; 17];
        let lk = left_encode(bit_len(key.len()), &mut enc);
        inner.update(lk);
        absorbed += lk.len();
        inner.update(key);
        absorbed += key.len();
        let pad = (RATE_256 - absorbed % RATE_256) % RATE_256;
        let zeros = [0u8; RATE_256];
        inner.update(zeros.get(..pad).unwrap_or(&[]));
        Kmac256 { inner }
    }

    /// Absorbs more of the message X.
    pub fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    /// KMAC256 with L = 8·`out.len()` bits, written into `out`.
    pub fn finalize_into(self, out: &mut [u8]) {
        finish_into(self.inner, out);
    }

    /// KMACXOF256 (L = 0 encoded): an output stream of any length.
    pub fn finalize_xof(self) -> Xof {
        finish_xof(self.inner)
    }
}

/// Streaming TupleHash256 / TupleHashXOF256 (SP 800-185 §5.3): `new(S)`, one `part` call per
/// tuple element in order, then `finalize` (32 bytes), `finalize_into(out)` (L = 8·out.len())
/// or `finalize_xof()`. An element must be passed whole to one `part` call.
#[derive(Clone)]
pub struct TupleHash256 {
    inner: CShake256,
}

impl std::fmt::Debug for TupleHash256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TupleHash256(..)")
    }
}

impl TupleHash256 {
    /// Starts TupleHash256 with customization string `customization` (cSHAKE256 with
    /// N = "TupleHash").
    pub fn new(customization: &[u8]) -> Self {
        TupleHash256 {
            inner: CShake256::from_core(CShake256Core::new_with_function_name(
                b"TupleHash",
                customization,
            )),
        }
    }

    /// Appends one element of the tuple: absorbs encode_string(part).
    pub fn part(&mut self, part: &[u8]) {
        absorb_encoded_string(&mut self.inner, part);
    }

    /// TupleHash256 with L = 256: 32 bytes.
    pub fn finalize(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        self.finalize_into(&mut out);
        out
    }

    /// TupleHash256 with L = 8·`out.len()` bits, written into `out`.
    pub fn finalize_into(self, out: &mut [u8]) {
        finish_into(self.inner, out);
    }

    /// TupleHashXOF256 (L = 0 encoded): an output stream of any length.
    pub fn finalize_xof(self) -> Xof {
        finish_xof(self.inner)
    }
}

/// The common ending of KMAC256 and TupleHash256 (SP 800-185 §4.3.1, §5.3.1): absorb
/// right_encode(L) with L = 8·`out.len()`, then squeeze `out`.
fn finish_into(mut inner: CShake256, out: &mut [u8]) {
    let mut enc = [0u8; 17];
    inner.update(right_encode(bit_len(out.len()), &mut enc));
    inner.finalize_xof().read(out);
}

/// The common ending of KMACXOF256 and TupleHashXOF256 (SP 800-185 §4.3.1, §5.3.1): absorb
/// right_encode(0), then hand out the stream.
fn finish_xof(mut inner: CShake256) -> Xof {
    let mut enc = [0u8; 17];
    inner.update(right_encode(0, &mut enc));
    Xof {
        reader: inner.finalize_xof(),
    }
}

/// Absorbs encode_string(s) = left_encode(8·|s|) ‖ s (SP 800-185 §2.3.2).
fn absorb_encoded_string(h: &mut CShake256, s: &[u8]) {
    let mut enc = [0u8; 17];
    h.update(left_encode(bit_len(s.len()), &mut enc));
    h.update(s);
}

/// 8·len as the u128 that SP 800-185 encodes (no overflow for any slice length).
fn bit_len(len: usize) -> u128 {
    // usize → u128 is lossless.
    (len as u128) << 3
}

/// left_encode(x) (SP 800-185 §2.3.1): n ‖ x as n big-endian bytes, n ≥ 1 minimal. Returns the
/// used tail of `buf`.
fn left_encode(x: u128, buf: &mut [u8; 17]) -> &[u8] {
    let n = byte_len(x);
    let be = x.to_be_bytes();
    // buf = [_, be[0..16]]; the encoding is buf[16 − n ..= 16] with buf[16 − n] = n.
    let (head, tail) = buf.split_at_mut(1);
    tail.copy_from_slice(&be);
    let start = 16 - n;
    if let Some(slot) = head.get_mut(0) {
        *slot = 0;
    }
    match buf.get_mut(start) {
        Some(slot) => *slot = n as u8,
        None => return &[],
    }
    buf.get(start..).unwrap_or(&[])
}

/// right_encode(x) (SP 800-185 §2.3.1): x as n big-endian bytes ‖ n, n ≥ 1 minimal.
fn right_encode(x: u128, buf: &mut [u8; 17]) -> &[u8] {
    let n = byte_len(x);
    let be = x.to_be_bytes();
    let (body, last) = buf.split_at_mut(16);
    body.copy_from_slice(&be);
    if let Some(slot) = last.get_mut(0) {
        *slot = n as u8;
    }
    buf.get(16 - n..).unwrap_or(&[])
}

/// Number of bytes of x in big-endian without leading zero bytes, at least 1 (≤ 16).
fn byte_len(x: u128) -> usize {
    let bits = 128 - x.leading_zeros() as usize;
    bits.div_ceil(8).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_sp800_185_section_2_3() {
        let mut b = [0u8; 17];
        assert_eq!(left_encode(0, &mut b), &[1, 0]);
        assert_eq!(left_encode(136, &mut b), &[1, 136]);
        assert_eq!(left_encode(256, &mut b), &[2, 1, 0]);
        assert_eq!(right_encode(0, &mut b), &[0, 1]);
        assert_eq!(right_encode(256, &mut b), &[1, 0, 2]);
        assert_eq!(left_encode(u128::MAX, &mut b).len(), 17);
        assert_eq!(right_encode(u128::MAX, &mut b).len(), 17);
    }

    #[test]
    fn customization_strings_are_distinct_and_prefixed() {
        let roles = [
            Role::Transcript,
            Role::Hu,
            Role::Challenge,
            Role::ExpandA,
            Role::Prf,
            Role::Mac,
        ];
        for (i, a) in roles.iter().enumerate() {
            let s = a.customization();
            assert!(s.starts_with(b"QUASAR-CORONA-") && s.ends_with(b"-v1"));
            for b in &roles[i + 1..] {
                assert_ne!(s, b.customization());
            }
        }
    }
}
