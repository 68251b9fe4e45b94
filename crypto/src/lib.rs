//! Cryptographic primitives of Quasar (DESIGN.md §1, §4).
//!
//! - [`hash`]: SHA3-256 (FIPS 202) and the project's domain-separated [`hash::tagged_hash`].
//! - [`bls`]: BLS12-381 min-pk signatures on `blst`, proof-of-possession ciphersuite of
//!   draft-irtf-cfrg-bls-signature-05. A [`bls::PublicKey`] or [`bls::Signature`] that exists has
//!   passed its subgroup check and is not the identity point.
//!
//! This crate depends on nothing else in the workspace; consensus, wire and storage depend on it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod bls;
pub mod hash;
