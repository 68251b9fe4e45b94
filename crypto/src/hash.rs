//! Hashing: SHA3-256 (FIPS 202 §6.1) and a domain-separated, injective "tagged hash".
//!
//! [`tagged_hash`] is the project's way to hash structured data under a domain tag such as
//! `QUASAR-BLOCK-v1` (docs/architecture.md §4, "`QUASAR-…-v1` customization strings"). It length-prefixes the
//! tag and every part, so different `(tag, parts)` inputs never collide unless SHA3-256 itself
//! does. It is *not* TupleHash (SP 800-185 §5); the round digest μ, which docs/architecture.md §3 pins to
//! TupleHash256, must not use it.

use sha3::{Digest, Sha3_256};

/// A 32-byte SHA3-256 digest.
pub type Hash = [u8; 32];

/// SHA3-256 of `data` (FIPS 202 §6.1). Returns 32 bytes; never fails.
pub fn sha3_256(data: &[u8]) -> Hash {
    Sha3_256::digest(data).into()
}

/// Domain-separated SHA3-256 over a tag and a list of byte strings.
///
/// The hashed message is
/// `u64_le(len(tag)) ‖ tag ‖ u64_le(len(parts[0])) ‖ parts[0] ‖ … ‖ u64_le(len(parts[n-1])) ‖ parts[n-1]`.
/// The encoding is prefix-free per field, so the map `(tag, parts) → message` is injective: two
/// different tags, a different number of parts, or a different split of the same bytes into parts
/// (`["ab", "c"]` vs `["a", "bc"]`) always give different messages, and hence different hashes
/// unless SHA3-256 collides. Tags in this project look like `QUASAR-BLOCK-v1`.
///
/// Returns 32 bytes; never fails. Source: SHA3-256, FIPS 202 §6.1; the encoding is Quasar's own.
pub fn tagged_hash(tag: &str, parts: &[&[u8]]) -> Hash {
    let mut hasher = Sha3_256::new();
    absorb_field(&mut hasher, tag.as_bytes());
    for part in parts {
        absorb_field(&mut hasher, part);
    }
    hasher.finalize().into()
}

/// Absorbs `u64_le(len(field)) ‖ field`.
fn absorb_field(hasher: &mut Sha3_256, field: &[u8]) {
    // usize → u64 is lossless on every platform Rust supports (pointer width ≤ 64).
    hasher.update((field.len() as u64).to_le_bytes());
    hasher.update(field);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FIPS 202 example values (NIST "SHA3-256" examples) for "" and "abc".
    #[test]
    fn sha3_256_matches_fips202_examples() {
        assert_eq!(
            hex::encode(sha3_256(b"")),
            "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"
        );
        assert_eq!(
            hex::encode(sha3_256(b"abc")),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
        );
    }

    /// Pinned output; a change here is a consensus-breaking change of every tagged hash.
    #[test]
    fn tagged_hash_golden() {
        assert_eq!(
            hex::encode(tagged_hash("QUASAR-BLOCK-v1", &[b"ab", b"c"])),
            GOLDEN_TAGGED
        );
        assert_eq!(
            hex::encode(tagged_hash("QUASAR-TEST-v1", &[])),
            GOLDEN_EMPTY
        );
    }

    // Computed once (and cross-checked with Python hashlib.sha3_256 over the documented encoding).
    const GOLDEN_TAGGED: &str = "9abde8f8051e67cac502559e6e9a48a1ab7e45f56d8914a7db06a6a92caa18c8";
    const GOLDEN_EMPTY: &str = "2f58668faaa1b0d1c0c871b4a1d4bd24a18f6832726973b6115aef1da2c99b75";

    /// The encoding is the documented one, recomputed by hand with plain SHA3-256.
    #[test]
    fn tagged_hash_is_the_documented_encoding() {
        let mut msg = Vec::new();
        msg.extend_from_slice(&15u64.to_le_bytes());
        msg.extend_from_slice(b"QUASAR-BLOCK-v1");
        msg.extend_from_slice(&2u64.to_le_bytes());
        msg.extend_from_slice(b"ab");
        msg.extend_from_slice(&1u64.to_le_bytes());
        msg.extend_from_slice(b"c");
        assert_eq!(
            tagged_hash("QUASAR-BLOCK-v1", &[b"ab", b"c"]),
            sha3_256(&msg)
        );
    }

    #[test]
    fn tagged_hash_separates_part_boundaries_tags_and_counts() {
        let tag = "QUASAR-BLOCK-v1";
        assert_ne!(
            tagged_hash(tag, &[b"ab", b"c"]),
            tagged_hash(tag, &[b"a", b"bc"])
        );
        assert_ne!(
            tagged_hash(tag, &[b"abc"]),
            tagged_hash(tag, &[b"ab", b"c"])
        );
        assert_ne!(tagged_hash(tag, &[]), tagged_hash(tag, &[b""]));
        assert_ne!(
            tagged_hash("QUASAR-BLOCK-v1", &[b"x"]),
            tagged_hash("QUASAR-VOTE-v1", &[b"x"])
        );
        // Tag/part boundary: moving bytes between the tag and the first part changes the hash.
        assert_ne!(tagged_hash("ab", &[b"c"]), tagged_hash("a", &[b"bc"]));
    }
}
