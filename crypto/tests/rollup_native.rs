//! The rollup's native decomposition of FIPS 204 verification (crypto::rollup::native) agrees
//! with libcrux-ml-dsa (through crypto::mldsa) for ML-DSA-44, -65 and -87, through the reference
//! NTT and through a backend that refuses every batch, and its NTT is the FIPS 204 one
//! (evaluation at ζ^(2·brv8(i)+1)).

use quasar_crypto::accel::{AccelError, BatchArithmetic, NttClass, RowResults, Workload};
use quasar_crypto::mldsa::{MlDsa44, MlDsa65, MlDsa87, ParameterSet, SecretKey};
use quasar_crypto::rollup::native::{
    intt, ntt, sample_in_ball, trace, verify, verify_with, DecodeError, DecodedSignature,
    ExpandedKey, Params, ML_DSA_44, ML_DSA_65, ML_DSA_87, N, Q, ZETA,
};

/// A backend that refuses every call: `verify_with` must fall back to its own NTT.
struct Refusing;

impl BatchArithmetic for Refusing {
    fn name(&self) -> &'static str {
        "refusing"
    }
    fn forward_ntt(&self, class: NttClass, _: &mut [u64]) -> Result<RowResults, AccelError> {
        Err(AccelError::Unsupported {
            backend: "refusing",
            workload: Workload::Ntt(class),
        })
    }
    fn inverse_ntt(&self, class: NttClass, _: &mut [u64]) -> Result<RowResults, AccelError> {
        Err(AccelError::Unsupported {
            backend: "refusing",
            workload: Workload::Ntt(class),
        })
    }
    fn pointwise_mul(
        &self,
        class: NttClass,
        _: &mut [u64],
        _: &[u64],
    ) -> Result<RowResults, AccelError> {
        Err(AccelError::Unsupported {
            backend: "refusing",
            workload: Workload::Ntt(class),
        })
    }
}
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn pow(a: u64, e: u64) -> u64 {
    (0..e).fold(1, |acc, _| acc * a % u64::from(Q))
}

#[test]
fn ntt_evaluates_at_the_fips_204_points_and_inverts() {
    let mut rng = ChaCha20Rng::seed_from_u64(41);
    let w: [u32; N] = std::array::from_fn(|_| rng.gen_range(0..Q));
    let w_hat = ntt(&w);
    for i in [0usize, 1, 2, 100, 255] {
        let point = pow(u64::from(ZETA), 2 * u64::from((i as u8).reverse_bits()) + 1);
        let mut acc = 0u64;
        for &c in w.iter().rev() {
            acc = (acc * point + u64::from(c)) % u64::from(Q);
        }
        assert_eq!(u64::from(w_hat[i]), acc, "slot {i}");
    }
    assert_eq!(intt(&w_hat), w);
}

#[test]
fn sample_in_ball_has_exactly_tau_nonzero_coefficients() {
    for params in [ML_DSA_44, ML_DSA_65] {
        for seed in 0..20u8 {
            let c = sample_in_ball(&params, &vec![seed; params.c_tilde_bytes]);
            assert_eq!(c.iter().filter(|&&v| v != 0).count(), params.tau);
            assert!(c.iter().all(|&v| (-1..=1).contains(&v)));
        }
    }
}

fn check_against_libcrux<P: ParameterSet>(params: Params) {
    assert_eq!(params.public_key_bytes(), P::PUBLIC_KEY_LEN);
    assert_eq!(params.signature_bytes(), P::SIGNATURE_LEN);
    let mut rng = ChaCha20Rng::seed_from_u64(204);
    for round in 0..6 {
        let sk = SecretKey::<P>::from_seed(&rng.gen());
        let pk = sk.public_key();
        let message: Vec<u8> = (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect();
        let ctx: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
        let sig = sk.sign_deterministic(&message, &ctx).unwrap();
        let key = ExpandedKey::from_public_key(&params, pk.as_bytes()).unwrap();
        assert!(
            verify(&params, &key, &message, &ctx, sig.as_bytes()),
            "round {round}"
        );
        assert!(verify_with(
            &params,
            &key,
            &message,
            &ctx,
            sig.as_bytes(),
            &Refusing
        ));

        let decoded = DecodedSignature::from_bytes(&params, sig.as_bytes()).unwrap();
        let t = trace(&params, &key, &message, &ctx, &decoded).unwrap();
        assert_eq!(t.c_tilde_prime, decoded.c_tilde);
        assert!(t.w1.iter().flatten().all(|&v| v < params.w1_values()));

        // Every single-bit change of the message, context or signature is rejected by both.
        let mut bad_message = message.clone();
        bad_message.push(0);
        assert!(!verify(&params, &key, &bad_message, &ctx, sig.as_bytes()));
        let mut bad_ctx = ctx.clone();
        bad_ctx.push(1);
        assert!(!verify(&params, &key, &message, &bad_ctx, sig.as_bytes()));
        for _ in 0..8 {
            let mut bad = sig.as_bytes().to_vec();
            let bit = rng.gen_range(0..bad.len() * 8);
            bad[bit / 8] ^= 1 << (bit % 8);
            let ours = verify(&params, &key, &message, &ctx, &bad);
            assert_eq!(
                verify_with(&params, &key, &message, &ctx, &bad, &Refusing),
                ours
            );
            let theirs = quasar_crypto::mldsa::Signature::<P>::from_bytes(&bad)
                .map(|s| pk.verify(&message, &ctx, &s).is_ok())
                .unwrap_or(false);
            assert_eq!(ours, theirs, "bit {bit}");
        }
        // A key for another message's signer does not verify.
        let other_sk = SecretKey::<P>::from_seed(&rng.gen());
        let other = other_sk.public_key();
        let other_key = ExpandedKey::from_public_key(&params, other.as_bytes()).unwrap();
        assert!(!verify(&params, &other_key, &message, &ctx, sig.as_bytes()));
    }
}

#[test]
fn native_verification_agrees_with_libcrux_ml_dsa_44() {
    check_against_libcrux::<MlDsa44>(ML_DSA_44);
}

#[test]
fn native_verification_agrees_with_libcrux_ml_dsa_65() {
    check_against_libcrux::<MlDsa65>(ML_DSA_65);
}

#[test]
fn native_verification_agrees_with_libcrux_ml_dsa_87() {
    check_against_libcrux::<MlDsa87>(ML_DSA_87);
}

#[test]
fn malformed_inputs_are_errors() {
    let params = ML_DSA_65;
    assert!(matches!(
        ExpandedKey::from_public_key(&params, &[0; 10]),
        Err(DecodeError::Length { .. })
    ));
    assert!(matches!(
        DecodedSignature::from_bytes(&params, &[0; 10]),
        Err(DecodeError::Length { .. })
    ));
    // Hint counts must not decrease: count[0] = 5, count[1] = 3.
    let mut sig = vec![0u8; params.signature_bytes()];
    let counts = params.signature_bytes() - params.k;
    sig[counts] = 5;
    sig[counts + 1] = 3;
    assert_eq!(
        DecodedSignature::from_bytes(&params, &sig),
        Err(DecodeError::Hint)
    );
    let key = ExpandedKey::from_public_key(&params, &vec![0u8; params.public_key_bytes()]).unwrap();
    let zero_sig =
        DecodedSignature::from_bytes(&params, &vec![0u8; params.signature_bytes()]).unwrap();
    assert_eq!(
        trace(&params, &key, b"m", &[0u8; 256], &zero_sig),
        Err(DecodeError::Context(256))
    );
}
