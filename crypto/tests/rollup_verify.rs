//! The in-circuit ML-DSA verification gadget (crypto::rollup::verify) on real signatures from
//! libcrux-ml-dsa: satisfied for valid signatures of ML-DSA-44 and ML-DSA-65, unsatisfied when a
//! bit of the signature, the message or the key changes. Constraint counts are printed
//! (`cargo test -p quasar-crypto --test rollup_verify -- --nocapture`).

use ark_bls12_381::Fr;
use ark_relations::gr1cs::{ConstraintSystem, ConstraintSystemRef};
use quasar_crypto::mldsa::{MlDsa44, MlDsa65, ParameterSet, SecretKey};
use quasar_crypto::rollup::native::{DecodedSignature, ExpandedKey, Params, ML_DSA_44, ML_DSA_65};
use quasar_crypto::rollup::verify::{
    enforce_verify, witness_bytes, KeyVars, SignatureVars, VerifyCost,
};

const CTX: &[u8] = b"quasar-rollup";

struct Case {
    params: Params,
    key: ExpandedKey,
    message: Vec<u8>,
    sig: DecodedSignature,
}

fn case<P: ParameterSet>(params: Params, seed: u8) -> Case {
    let sk = SecretKey::<P>::from_seed(&[seed; 32]);
    let message = vec![seed ^ 0x5a; 32];
    let sig = sk.sign_deterministic(&message, CTX).unwrap();
    Case {
        params,
        key: ExpandedKey::from_public_key(&params, sk.public_key().as_bytes()).unwrap(),
        message,
        sig: DecodedSignature::from_bytes(&params, sig.as_bytes()).unwrap(),
    }
}

/// Synthesizes the gadget for `case` and returns (satisfied, constraints, cost by step).
fn run(case: &Case) -> (bool, usize, VerifyCost) {
    let cs: ConstraintSystemRef<Fr> = ConstraintSystem::new_ref();
    let key = KeyVars::new_witness(&cs, &case.params, Some(&case.key)).unwrap();
    let sig = SignatureVars::new_witness(&cs, &case.params, Some(&case.sig)).unwrap();
    let message = witness_bytes(&cs, case.message.len(), Some(case.message.clone())).unwrap();
    let before = cs.num_constraints();
    let cost = enforce_verify(&cs, &case.params, &key, &message, CTX, &sig).unwrap();
    assert_eq!(cost.total(), cs.num_constraints() - before);
    (cs.is_satisfied().unwrap(), cs.num_constraints(), cost)
}

/// Synthesizes a valid signature's verification, prints its cost and returns the constraints.
fn valid(c: &Case) -> usize {
    let t = std::time::Instant::now();
    let (ok, constraints, cost) = run(c);
    println!(
        "{} verification: {constraints} constraints (2^{:.2}), synthesized in {:?}; by step: {cost:?}",
        c.params.name,
        (constraints as f64).log2(),
        t.elapsed()
    );
    assert!(ok, "{}", c.params.name);
    constraints
}

#[test]
fn a_valid_ml_dsa_44_signature_satisfies_the_gadget() {
    valid(&case::<MlDsa44>(ML_DSA_44, 1));
}

#[test]
fn a_valid_ml_dsa_65_signature_satisfies_the_gadget() {
    let constraints = valid(&case::<MlDsa65>(ML_DSA_65, 2));
    // The target: at most 2^21.5 constraints per ML-DSA-65 signature.
    assert!((constraints as f64) <= 2f64.powf(21.5));
}

/// One change at a time, each must leave the system unsatisfied (ML-DSA-44, the cheaper set).
#[test]
fn any_changed_bit_of_message_signature_or_key_is_unsatisfied() {
    let base = case::<MlDsa44>(ML_DSA_44, 3);
    type Edit = fn(&mut Case);
    let edits: [(&str, Edit); 5] = [
        ("message bit", |c| c.message[7] ^= 0x10),
        ("c̃ bit", |c| c.sig.c_tilde[0] ^= 1),
        ("z coefficient + 1", |c| c.sig.z[1][17] += 1),
        ("hint bit", |c| c.sig.h[0][0] = !c.sig.h[0][0]),
        ("key of another signer", |c| {
            let other = SecretKey::<MlDsa44>::from_seed(&[99; 32]);
            c.key = ExpandedKey::from_public_key(&c.params, other.public_key().as_bytes()).unwrap();
        }),
    ];
    std::thread::scope(|s| {
        let handles: Vec<_> = edits
            .iter()
            .map(|(name, edit)| {
                let mut c = Case {
                    params: base.params,
                    key: base.key.clone(),
                    message: base.message.clone(),
                    sig: base.sig.clone(),
                };
                edit(&mut c);
                (name, s.spawn(move || run(&c).0))
            })
            .collect();
        for (name, handle) in handles {
            assert!(!handle.join().unwrap(), "{name}: still satisfied");
        }
    });
}

/// UseHint in-circuit against FIPS 204 Algorithm 40 on the edge values of Decompose.
#[test]
fn use_hint_gadget_matches_fips_204_on_edge_values() {
    use ark_r1cs_std::alloc::AllocVar;
    use ark_r1cs_std::boolean::Boolean;
    use ark_r1cs_std::fields::fp::FpVar;
    use ark_r1cs_std::GR1CSVar;
    use quasar_crypto::rollup::native::{use_hint, Q};
    for params in [ML_DSA_44, ML_DSA_65] {
        let g = params.gamma2;
        let values = [
            0,
            1,
            g - 1,
            g,
            g + 1,
            2 * g - 1,
            2 * g,
            2 * g + 1,
            Q / 2,
            Q - 1 - g - 1,
            Q - 1 - g,
            Q - g,
            Q - 2,
            Q - 1,
        ];
        let cs: ConstraintSystemRef<Fr> = ConstraintSystem::new_ref();
        for &r in &values {
            for hint in [false, true] {
                let rv = FpVar::new_witness(cs.clone(), || Ok(Fr::from(r))).unwrap();
                let hv = Boolean::new_witness(cs.clone(), || Ok(hint)).unwrap();
                let bits = quasar_crypto::rollup::verify::use_hint(&cs, &params, &rv, &hv).unwrap();
                let got: u32 = bits
                    .iter()
                    .enumerate()
                    .map(|(i, b)| u32::from(b.value().unwrap()) << i)
                    .sum();
                assert_eq!(
                    got,
                    use_hint(&params, hint, r),
                    "{} r = {r}, h = {hint}",
                    params.name
                );
            }
        }
        assert!(cs.is_satisfied().unwrap(), "{}", params.name);
    }
}
