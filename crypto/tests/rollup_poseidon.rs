//! The Poseidon parameters against the authors' test vector, and the gadget against the
//! native hash (crypto::rollup::poseidon).

use ark_bls12_381::Fr;
use ark_crypto_primitives::sponge::poseidon::PoseidonSponge;
use ark_crypto_primitives::sponge::{CryptographicSponge, FieldBasedCryptographicSponge};
use ark_ff::{BigInteger, PrimeField};
use ark_r1cs_std::alloc::AllocVar;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::GR1CSVar;
use ark_relations::gr1cs::{ConstraintSystem, ConstraintSystemRef};
use quasar_crypto::rollup::poseidon::{config, hash, hash_gadget, PERMUTATION_CONSTRAINTS};

fn hex(x: &Fr) -> String {
    hex::encode(x.into_bigint().to_bytes_be())
}

/// poseidonperm_x5_255_3 of the reference implementation (hadeshash `test_vectors.txt`):
/// permutation of [0, 1, 2]. The sponge absorbs 1 and 2 into the rate (the capacity element
/// stays 0), so its first two squeezed elements are outputs 1 and 2 of the permutation.
#[test]
fn permutation_matches_the_reference_test_vector() {
    let mut sponge = PoseidonSponge::new(config());
    sponge.absorb(&vec![Fr::from(1u64), Fr::from(2u64)]);
    let out = sponge.squeeze_native_field_elements(2);
    assert_eq!(
        hex(&out[0]),
        "51f3e312c95343a896cfd8945ea82ba956c1118ce9b9859b6ea56637b4b1ddc4"
    );
    assert_eq!(
        hex(&out[1]),
        "3b2b69139b235626a0bfb56c9527ae66a7bf486ad8c11c14d1da0c69bbe0f79a"
    );
}

fn witnesses(cs: &ConstraintSystemRef<Fr>, inputs: &[Fr]) -> Vec<FpVar<Fr>> {
    inputs
        .iter()
        .map(|x| FpVar::new_witness(cs.clone(), || Ok(*x)).unwrap())
        .collect()
}

#[test]
fn gadget_matches_native_hash_and_lengths_hash_apart() {
    let mut seen = Vec::new();
    for len in [0usize, 1, 2, 3, 10] {
        let inputs: Vec<Fr> = (0..len as u64).map(|i| Fr::from(i * 7 + 3)).collect();
        let native = hash(&inputs);
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vars = witnesses(&cs, &inputs);
        let out = hash_gadget(cs.clone(), &vars).unwrap();
        assert_eq!(out.value().unwrap(), native, "length {len}");
        assert!(cs.is_satisfied().unwrap());
        let permutations = (len + 2).div_ceil(2);
        assert!(cs.num_constraints() <= permutations * PERMUTATION_CONSTRAINTS);
        assert!(!seen.contains(&native));
        seen.push(native);
    }
    // A trailing zero is a different input.
    assert_ne!(
        hash(&[Fr::from(5u64)]),
        hash(&[Fr::from(5u64), Fr::from(0u64)])
    );
}

#[test]
fn a_wrong_claimed_hash_is_unsatisfiable() {
    use ark_r1cs_std::eq::EqGadget;
    let inputs = [Fr::from(11u64), Fr::from(12u64), Fr::from(13u64)];
    for claimed in [hash(&inputs), hash(&inputs) + Fr::from(1u64)] {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vars = witnesses(&cs, &inputs);
        let out = hash_gadget(cs.clone(), &vars).unwrap();
        let c = FpVar::new_input(cs.clone(), || Ok(claimed)).unwrap();
        out.enforce_equal(&c).unwrap();
        assert_eq!(cs.is_satisfied().unwrap(), claimed == hash(&inputs));
    }
}
