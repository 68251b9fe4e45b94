//! The Keccak-f[1600] / SHAKE256 gadgets (crypto::rollup::keccak) against the native sha3 crate
//! (FIPS 202), their constraint counts, and unsatisfiability when an output bit is wrong.

use ark_bls12_381::Fr;
use ark_r1cs_std::alloc::AllocVar;
use ark_r1cs_std::boolean::Boolean;
use ark_r1cs_std::GR1CSVar;
use ark_relations::gr1cs::{ConstraintSystem, ConstraintSystemRef};
use quasar_crypto::rollup::keccak::{
    shake256, shake256_permutations, KeccakState, PERMUTATION_CONSTRAINTS,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha3::digest::{ExtendableOutput, Update, XofReader};

fn witness_bits(cs: &ConstraintSystemRef<Fr>, bytes: &[u8]) -> Vec<Boolean<Fr>> {
    bytes
        .iter()
        .flat_map(|b| (0..8).map(move |j| (b >> j) & 1 == 1))
        .map(|bit| Boolean::new_witness(cs.clone(), || Ok(bit)).unwrap())
        .collect()
}

fn bits_to_bytes(bits: &[Boolean<Fr>]) -> Vec<u8> {
    bits.chunks(8)
        .map(|byte| {
            byte.iter()
                .enumerate()
                .map(|(j, b)| u8::from(b.value().unwrap()) << j)
                .sum()
        })
        .collect()
}

fn native_shake256(message: &[u8], output_bytes: usize) -> Vec<u8> {
    let mut h = sha3::Shake256::default();
    h.update(message);
    let mut out = vec![0u8; output_bytes];
    h.finalize_xof().read(&mut out);
    out
}

#[test]
fn shake256_gadget_matches_fips_202() {
    let mut rng = ChaCha20Rng::seed_from_u64(202);
    // Block boundaries of the padding (135, 136) and of the output (136, 137), and the shapes
    // ML-DSA uses: 64-byte tr ‖ M' → 64 bytes, 48-byte c̃ → SampleInBall stream.
    for (message_bytes, output_bytes) in
        [(0, 32), (1, 1), (135, 64), (136, 64), (137, 137), (48, 272)]
    {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let message: Vec<u8> = (0..message_bytes).map(|_| rng.gen()).collect();
        let bits = witness_bits(&cs, &message);
        let out = shake256(&bits, output_bytes).unwrap();
        assert_eq!(out.len(), 8 * output_bytes);
        assert_eq!(
            bits_to_bytes(&out),
            native_shake256(&message, output_bytes),
            "SHAKE256 of {message_bytes} bytes to {output_bytes}"
        );
        assert!(cs.is_satisfied().unwrap());
        let permutations = shake256_permutations(message_bytes, output_bytes);
        assert!(
            cs.num_constraints() <= message_bytes * 8 + permutations * PERMUTATION_CONSTRAINTS,
            "{} constraints for {permutations} permutations",
            cs.num_constraints()
        );
    }
}

#[test]
fn a_permutation_of_variable_bits_costs_153600_constraints() {
    let cs = ConstraintSystem::<Fr>::new_ref();
    let mut rng = ChaCha20Rng::seed_from_u64(1600);
    let lanes: Vec<u64> = (0..25).map(|_| rng.gen()).collect();
    let bytes: Vec<u8> = lanes.iter().flat_map(|l| l.to_le_bytes()).collect();
    let bits = witness_bits(&cs, &bytes);
    let before = cs.num_constraints();
    let mut state = KeccakState::zero();
    state.xor_bits(&bits).unwrap();
    state.permute();
    assert_eq!(cs.num_constraints() - before, PERMUTATION_CONSTRAINTS);
    let mut native: [u64; 25] = lanes.try_into().unwrap();
    keccak::f1600(&mut native);
    let got = bits_to_bytes(&state.bits());
    let want: Vec<u8> = native.iter().flat_map(|l| l.to_le_bytes()).collect();
    assert_eq!(got, want);
    assert!(cs.is_satisfied().unwrap());
}

#[test]
fn a_wrong_claimed_digest_is_unsatisfiable() {
    use ark_r1cs_std::eq::EqGadget;
    let message = b"quasar rollup";
    let digest = native_shake256(message, 32);
    for flip in [None, Some(0usize), Some(255)] {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let bits = witness_bits(&cs, message);
        let out = shake256(&bits, 32).unwrap();
        let mut claimed = digest.clone();
        if let Some(bit) = flip {
            claimed[bit / 8] ^= 1 << (bit % 8);
        }
        let claimed = witness_bits(&cs, &claimed);
        for (a, b) in out.iter().zip(&claimed) {
            a.enforce_equal(b).unwrap();
        }
        assert_eq!(cs.is_satisfied().unwrap(), flip.is_none(), "flip {flip:?}");
    }
}

#[test]
fn xor_bits_refuses_more_than_the_state() {
    let mut state = KeccakState::zero();
    assert!(state.xor_bits(&vec![Boolean::TRUE; 1601]).is_err());
}
