//! The rollup circuit (crypto::rollup::circuit) with real ML-DSA-44 keys and signatures:
//! satisfied for a quorum, unsatisfied for a wrong h_x, a wrong μ, or a signer below quorum;
//! the native witness checks refuse what the circuit would refuse.

use ark_bls12_381::Fr;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem};
use quasar_crypto::mldsa::{MlDsa44, SecretKey};
use quasar_crypto::rollup::circuit::{
    commitment, RollupCircuit, RollupError, RollupWitness, Shape, Statement, Validator,
    ROLLUP_CONTEXT,
};
use quasar_crypto::rollup::native::{DecodedSignature, ExpandedKey, ML_DSA_44};

const DIGEST: [u8; 32] = [0x42; 32];

/// Two validators (stakes 10 and 1) and validator `signer`'s signature on DIGEST.
fn setup(signer: usize) -> (Shape, Vec<Validator>, Vec<(usize, DecodedSignature)>) {
    let shape = Shape {
        params: ML_DSA_44,
        validators: 2,
        slots: 1,
    };
    let keys: Vec<SecretKey<MlDsa44>> = (0..2u8)
        .map(|i| SecretKey::from_seed(&[i + 10; 32]))
        .collect();
    let validators = keys
        .iter()
        .zip([10u64, 1])
        .map(|(sk, stake)| Validator {
            key: ExpandedKey::from_public_key(&ML_DSA_44, sk.public_key().as_bytes()).unwrap(),
            stake,
        })
        .collect();
    let sig = keys[signer]
        .sign_deterministic(&DIGEST, ROLLUP_CONTEXT)
        .unwrap();
    let sig = DecodedSignature::from_bytes(&ML_DSA_44, sig.as_bytes()).unwrap();
    (shape, validators, vec![(signer, sig)])
}

fn satisfied(circuit: RollupCircuit) -> (bool, usize) {
    let cs = ConstraintSystem::<Fr>::new_ref();
    circuit.generate_constraints(cs.clone()).unwrap();
    (cs.is_satisfied().unwrap(), cs.num_constraints())
}

#[test]
fn rollup_circuit_accepts_a_quorum_and_rejects_wrong_statements_and_minorities() {
    let (shape, validators, sigs) = setup(0);
    let witness = RollupWitness::new(shape, validators.clone(), sigs.clone(), DIGEST).unwrap();
    let statement = witness.statement();
    assert_eq!(statement.h_x, commitment(&validators));
    let wrong_hx = Statement {
        h_x: statement.h_x + Fr::from(1u64),
        ..statement
    };
    let mut other_digest = DIGEST;
    other_digest[31] ^= 1;
    let wrong_mu = Statement {
        digest: other_digest,
        ..statement
    };
    // Validator 1 alone holds 1 of 11: the native check refuses, and so does the circuit.
    let (_, _, minority) = setup(1);
    assert_eq!(
        RollupWitness::new(shape, validators.clone(), minority.clone(), DIGEST).unwrap_err(),
        RollupError::NoQuorum {
            signed: 1,
            total: 11
        }
    );
    let unchecked = RollupWitness::new_unchecked(shape, validators.clone(), minority, DIGEST);

    let cases = [
        ("valid", RollupCircuit::for_proof(witness.clone()), true),
        (
            "wrong h_x",
            RollupCircuit::for_statement(witness.clone(), wrong_hx),
            false,
        ),
        (
            "wrong μ",
            RollupCircuit::for_statement(witness, wrong_mu),
            false,
        ),
        ("below quorum", RollupCircuit::for_proof(unchecked), false),
    ];
    std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .into_iter()
            .map(|(name, circuit, expected)| (name, expected, s.spawn(move || satisfied(circuit))))
            .collect();
        for (name, expected, handle) in handles {
            let (ok, constraints) = handle.join().unwrap();
            println!("{name}: satisfied = {ok}, {constraints} constraints");
            assert_eq!(ok, expected, "{name}");
        }
    });
}

#[test]
fn witness_checks_refuse_bad_shapes_orders_and_signatures() {
    let (shape, validators, sigs) = setup(0);
    assert!(matches!(
        RollupWitness::new(shape, validators[..1].to_vec(), sigs.clone(), DIGEST),
        Err(RollupError::ValidatorCount {
            got: 1,
            expected: 2
        })
    ));
    assert!(matches!(
        RollupWitness::new(shape, validators.clone(), vec![], DIGEST),
        Err(RollupError::SignatureCount {
            got: 0,
            expected: 1
        })
    ));
    let out_of_range = vec![(5, sigs[0].1.clone())];
    assert_eq!(
        RollupWitness::new(shape, validators.clone(), out_of_range, DIGEST).unwrap_err(),
        RollupError::SignerOrder
    );
    // Validator 0's signature claimed as validator 1's.
    let wrong_signer = vec![(1, sigs[0].1.clone())];
    assert_eq!(
        RollupWitness::new(shape, validators.clone(), wrong_signer, DIGEST).unwrap_err(),
        RollupError::BadSignature(1)
    );
    let two_slots = Shape { slots: 2, ..shape };
    let duplicate = vec![sigs[0].clone(), sigs[0].clone()];
    assert_eq!(
        RollupWitness::new(two_slots, validators, duplicate, DIGEST).unwrap_err(),
        RollupError::SignerOrder
    );
}
