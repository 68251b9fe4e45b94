//! ML-DSA verification under a prepared key with its NTTs on the SIMD CPU backend (the node's
//! transaction path, `quasar_app::VerificationCache`): the same verdict as libcrux
//! (`PublicKey::verify`) and as the reference backend, for ML-DSA-44, -65 and -87, on valid
//! signatures, other messages and contexts, another signer's key and single-bit flips anywhere
//! in the signature.

use quasar_crypto::accel::CpuBackend;
use quasar_crypto::mldsa::{
    MlDsa44, MlDsa65, MlDsa87, ParameterSet, PreparedKey, SecretKey, Signature,
};
use quasar_gpu::SimdCpuBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn agree_with_libcrux<P: ParameterSet>() {
    let simd = SimdCpuBackend::new();
    let mut rng = ChaCha20Rng::seed_from_u64(204);
    for round in 0..4 {
        let sk = SecretKey::<P>::from_seed(&rng.gen());
        let pk = sk.public_key();
        let prepared = PreparedKey::new(pk, &simd);
        let message: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
        let ctx: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
        let sig = sk.sign(&message, &ctx, &mut rng).expect("signs");
        let other = SecretKey::<P>::from_seed(&rng.gen());
        let other_prepared = PreparedKey::new(other.public_key(), &simd);

        let check = |prepared: &PreparedKey<P>, msg: &[u8], ctx: &[u8], sig: &Signature<P>| {
            let libcrux = prepared.public_key().verify(msg, ctx, sig);
            assert_eq!(
                prepared.verify(msg, ctx, sig, &simd),
                libcrux,
                "round {round}"
            );
            assert_eq!(
                prepared.verify(msg, ctx, sig, &CpuBackend),
                libcrux,
                "round {round}"
            );
            libcrux.is_ok()
        };
        assert!(check(&prepared, &message, &ctx, &sig));
        assert!(!check(&prepared, b"another message", &ctx, &sig));
        assert!(!check(&prepared, &message, b"another context", &sig));
        assert!(!check(&other_prepared, &message, &ctx, &sig));
        for _ in 0..24 {
            let mut bad = sig.as_bytes().to_vec();
            let bit = rng.gen_range(0..bad.len() * 8);
            bad[bit / 8] ^= 1 << (bit % 8);
            let bad = Signature::<P>::from_bytes(&bad).expect("same length");
            check(&prepared, &message, &ctx, &bad);
        }
    }
}

#[test]
fn prepared_ml_dsa_44_on_the_simd_backend_agrees_with_libcrux() {
    agree_with_libcrux::<MlDsa44>();
}

#[test]
fn prepared_ml_dsa_65_on_the_simd_backend_agrees_with_libcrux() {
    agree_with_libcrux::<MlDsa65>();
}

#[test]
fn prepared_ml_dsa_87_on_the_simd_backend_agrees_with_libcrux() {
    agree_with_libcrux::<MlDsa87>();
}
