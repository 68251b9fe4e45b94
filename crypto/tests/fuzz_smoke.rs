//! Smoke pass of the `crypto/fuzz` targets on the stable toolchain: valid encodings, seeded
//! mutations of them (bit flips, flag bytes, truncation, extension) and random bytes, through the
//! same functions the fuzzers call. Every input comes from a fixed seed, so a failure reproduces.

use quasar_crypto::bls::SecretKey;
use quasar_crypto::fuzzing::{bls_decode, mldsa_verify};
use quasar_crypto::mldsa::{self, MlDsa65};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut out = seed.to_vec();
    match rng.gen_range(0..5) {
        0 if !out.is_empty() => {
            let i = rng.gen_range(0..out.len());
            out[i] ^= 1 << rng.gen_range(0..8);
        }
        1 if !out.is_empty() => {
            out[0] = [0x00, 0x20, 0x40, 0x60, 0x80, 0xa0, 0xc0, 0xe0][rng.gen_range(0..8)]
        }
        2 => out.truncate(rng.gen_range(0..=out.len())),
        3 => out.extend((0..rng.gen_range(1..8)).map(|_| rng.gen::<u8>())),
        _ => out = (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect(),
    }
    out
}

#[test]
fn bls_decoders_survive_mutated_and_random_input() {
    let key = SecretKey::from_seed(&[3; 32]);
    let seeds = [
        key.public_key().to_bytes().to_vec(),
        key.sign(b"m").to_bytes().to_vec(),
        key.prove_possession().to_bytes().to_vec(),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for seed in &seeds {
        bls_decode(seed);
        for _ in 0..300 {
            bls_decode(&mutate(&mut rng, seed));
        }
    }
}

/// Real threshold BLS shares of a 2-of-3 dealing (a secret share and a signature share), mutated,
/// through the decode target and the target that signs and combines what decodes.
#[test]
fn bls_threshold_decoders_survive_mutated_and_random_input() {
    use quasar_crypto::bls_threshold::deal;
    use quasar_crypto::fuzzing::{bls_threshold_decode, bls_threshold_verify};
    let dealing = deal(2, 3, &mut ChaCha8Rng::seed_from_u64(6)).unwrap();
    let share = &dealing.shares()[2];
    let seeds = [
        share.to_bytes().to_vec(),
        share.sign(b"m").to_bytes().to_vec(),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for seed in &seeds {
        bls_threshold_decode(seed);
        bls_threshold_verify(seed);
        for _ in 0..300 {
            let input = mutate(&mut rng, seed);
            bls_threshold_decode(&input);
            bls_threshold_verify(&input);
        }
    }
}

#[test]
fn mldsa_decoders_and_verify_survive_mutated_and_random_input() {
    let sk = mldsa::SecretKey::<MlDsa65>::from_seed(&[5; 32]);
    let sig = sk.sign_deterministic(b"block", b"ctx").unwrap();
    let mut valid = vec![3u8];
    valid.extend_from_slice(b"ctx");
    valid.extend_from_slice(sk.public_key().as_bytes());
    valid.extend_from_slice(sig.as_bytes());
    valid.extend_from_slice(b"block");
    mldsa_verify(&valid);
    mldsa_verify(sk.public_key().as_bytes());
    mldsa_verify(sig.as_bytes());
    mldsa_verify(&[]);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for _ in 0..200 {
        mldsa_verify(&mutate(&mut rng, &valid));
        // Short edit lists, aimed at the signature's tail (the hint encoding) half the time.
        let edits: Vec<u8> = (0..rng.gen_range(1..6))
            .flat_map(|_| {
                let offset: u16 = if rng.gen_bool(0.5) {
                    rng.gen_range(5200..5261)
                } else {
                    rng.gen()
                };
                let [lo, hi] = offset.to_le_bytes();
                [lo, hi, rng.gen()]
            })
            .collect();
        mldsa_verify(&edits);
    }
}

/// The corpus seeds of `corona_decode` are what they claim: each decodes as its type (and
/// re-encodes, which `corona_decode` checks), and the signature verifies under the group key;
/// `corona_verify` survives the seeds and edits of the valid signature.
#[test]
fn corona_fuzz_seeds_are_real_encodings() {
    use quasar_crypto::corona::scheme::{GroupKey, Round1Message, Round2Message, Signature};
    use quasar_crypto::fuzzing::{corona_decode, corona_seeds, corona_verify};
    let seeds = corona_seeds().unwrap();
    let names: Vec<&str> = seeds.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["group_key", "signature", "round1", "round2"]);
    let bytes = |name: &str| &seeds.iter().find(|(n, _)| *n == name).unwrap().1;
    let key = GroupKey::from_bytes(bytes("group_key")).unwrap();
    let signature = Signature::from_bytes(bytes("signature")).unwrap();
    assert!(key.verify(b"quasar-fuzz", &signature).is_ok());
    assert!(key.verify(b"other", &signature).is_err());
    Round1Message::from_bytes(bytes("round1")).unwrap();
    Round2Message::from_bytes(bytes("round2")).unwrap();
    for (_, seed) in &seeds {
        corona_decode(seed);
        corona_verify(seed);
    }
    // Edits of the valid signature: none (it must verify), then single bytes and short lists,
    // three offset bytes and a value each.
    corona_verify(&[]);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let len = bytes("signature").len();
    for _ in 0..24 {
        let edits: Vec<u8> = (0..rng.gen_range(1..4))
            .flat_map(|_| {
                let [a, b, c, _] = (rng.gen_range(0..len) as u32).to_le_bytes();
                [a, b, c, rng.gen()]
            })
            .collect();
        corona_verify(&edits);
    }
}

/// Real Pulsar messages of a 2-of-3 session (prefixed with the shape byte 0), mutated.
#[test]
fn pulsar_decoders_survive_mutated_and_random_input() {
    use quasar_crypto::fuzzing::pulsar_decode;
    use quasar_crypto::pulsar::{trusted_dealer_keygen, Session, SessionId, Signer};
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let (group, shares) = trusted_dealer_keygen(2, 3, &mut rng).unwrap();
    let mut signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
    let session = Session::new(&group, SessionId([1; 32]), &[0, 1], b"m", b"").unwrap();
    let mut round1 = Vec::new();
    let mut states = Vec::new();
    for s in signers.iter_mut().take(2) {
        let (m, st) = s.round1(&group, &session, &mut rng).unwrap();
        round1.push(m);
        states.push(st);
    }
    let mut round2 = Vec::new();
    let mut states2 = Vec::new();
    for (s, st) in signers.iter().zip(states) {
        let (m, st) = s.round2(st, &round1).unwrap();
        round2.push(m);
        states2.push(st);
    }
    let round3 = signers[0]
        .round3(&group, states2.remove(0), &round2)
        .unwrap();
    let seeds: Vec<Vec<u8>> = [
        round1[0].to_bytes(),
        round2[0].to_bytes(),
        round3.to_bytes(),
    ]
    .into_iter()
    .map(|body| [vec![0u8], body].concat())
    .collect();
    let mut mutations = ChaCha8Rng::seed_from_u64(4);
    for seed in &seeds {
        pulsar_decode(seed);
        for _ in 0..100 {
            pulsar_decode(&mutate(&mut mutations, seed));
        }
    }
}
