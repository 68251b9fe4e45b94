//! Smoke pass of every fuzz target on the stable toolchain.
//!
//! The cargo-fuzz targets in `wire/fuzz`, `storage/fuzz`, `chainspec/fuzz`, `thresholdd/fuzz` and
//! `node/fuzz` (and two of `lanes/fuzz`) are one-line calls to each crate's `fuzzing` module
//! (behind its `fuzzing` feature); this test drives the same functions with a few hundred inputs
//! each: valid seed messages and files, seeded mutations of them (bit flips,
//! interesting bytes and lengths, truncation, insertion, splicing) and pseudo-random bytes. It is
//! no substitute for coverage-guided fuzzing (`scripts/fuzz.sh SECONDS`), but it keeps the targets
//! compiling, catches regressions on the shapes the fuzzers already explored, and fails CI on any
//! panic of a target. Every input is derived from a fixed seed, so a failure reproduces.

use quasar_chainspec::SecretKeyFile;
use quasar_crypto::bls::{SecretKey, Signature};
use quasar_crypto::mldsa::{self, MlDsa65};
use quasar_crypto::rollup::circuit::ROLLUP_CONTEXT;
use quasar_crypto::{corona, magnetar, pulsar};
use quasar_lanes::bls::bitmap_from_signers;
use quasar_lanes::fuzzing::{MAGNETAR_MU, MAGNETAR_VALIDATORS};
use quasar_lanes::magnetar::MagnetarLeg;
use quasar_node::fuzzing::{self, CHAIN_ID, VALIDATORS};
use quasar_storage::{SigningGuard, VoteIntent, VoteKind as GuardVoteKind, GUARD_FILE};
use quasar_thresholdd::keystore::{self, KdfParams, Keystore, NewKey, Scheme};
use quasar_wire::{
    payload_root, vote_signing_message, BlockHeader, Certificate, CertificateKind, LaneKind,
    LaneMessage, LegKind, Message, Proposal, QuasarCert, RelayRequest, SyncRequest, SyncResponse,
    TxBatch, Vote, VoteKind,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn key(i: usize) -> SecretKey {
    SecretKey::from_seed(&[i as u8 + 1; 32])
}

fn certificate(kind: CertificateKind, view: u64, height: u64, block: [u8; 32]) -> Certificate {
    let message = vote_signing_message(
        kind.vote_kind(),
        CHAIN_ID,
        0,
        view,
        height,
        &block,
        &quasar_node::fuzzing::domain(),
    );
    let signers = [0usize, 1, 2];
    let signatures: Vec<Signature> = signers.iter().map(|&i| key(i).sign(&message)).collect();
    Certificate {
        kind,
        chain_id: CHAIN_ID,
        epoch: 0,
        view,
        height,
        block,
        signers: bitmap_from_signers(signers, VALIDATORS),
        signature: Signature::aggregate(&signatures)
            .expect("three signatures")
            .to_bytes(),
    }
}

/// One valid, validly signed message of every type (the certificates verify against the fuzzing
/// fixture; the proposal is signed but not by the view's leader unless by chance).
fn seed_messages() -> Vec<Vec<u8>> {
    let txs = vec![b"tx-1".to_vec(), b"tx-22".to_vec()];
    let header = BlockHeader {
        chain_id: CHAIN_ID,
        epoch: 0,
        view: 1,
        height: 1,
        parent_view: 0,
        parent: fuzzing::GENESIS,
        proposer: 1,
        timestamp_us: 1_000,
        payload_root: payload_root(txs.iter().map(Vec::as_slice)),
        state_root: [0; 32],
    };
    let hash = header.hash();
    let proposal = Proposal {
        signature: key(1)
            .sign(&vote_signing_message(
                VoteKind::Notarize,
                CHAIN_ID,
                0,
                1,
                1,
                &hash,
                &quasar_node::fuzzing::domain(),
            ))
            .to_bytes(),
        header,
        txs: txs.clone(),
    };
    let vote = Vote {
        kind: VoteKind::Finalize,
        chain_id: CHAIN_ID,
        epoch: 0,
        view: 1,
        height: 1,
        block: hash,
        signer: 2,
        signature: key(2)
            .sign(&vote_signing_message(
                VoteKind::Finalize,
                CHAIN_ID,
                0,
                1,
                1,
                &hash,
                &quasar_node::fuzzing::domain(),
            ))
            .to_bytes(),
    };
    let notarization = certificate(CertificateKind::Notarization, 1, 1, hash);
    let finalization = certificate(CertificateKind::Finalization, 1, 1, hash);
    let nullification = certificate(CertificateKind::Nullification, 2, 0, [0; 32]);
    let sync_response = SyncResponse {
        items: vec![
            proposal.encode().expect("encodes"),
            finalization.encode().expect("encodes"),
            nullification.encode().expect("encodes"),
        ],
    };
    [
        Message::Proposal(proposal),
        Message::Vote(vote),
        Message::Certificate(notarization),
        Message::Certificate(finalization),
        Message::Certificate(nullification),
        Message::TxBatch(TxBatch { txs }),
        Message::SyncRequest(SyncRequest {
            from_height: 3,
            block: [0; 32],
            max_blocks: 500,
        }),
        Message::SyncRequest(SyncRequest {
            from_height: 0,
            block: {
                let mut b = [0; 32];
                b[0] = 9;
                b
            },
            max_blocks: 4,
        }),
        Message::SyncResponse(sync_response),
        Message::RelayRequest(RelayRequest {
            epoch: 0,
            from_view: 9,
            signer: 1,
        }),
        Message::QuasarCert(QuasarCert {
            chain_id: CHAIN_ID,
            epoch: 0,
            height: 1,
            view: 1,
            block: hash,
            bundle: vec![[7; 32], [8; 32]],
            legs: vec![(LegKind::Bls, vec![1; 100]), (LegKind::Corona, vec![2; 40])],
        }),
        Message::Lane(LaneMessage {
            chain_id: CHAIN_ID,
            epoch: 0,
            height: 16,
            sender: 2,
            kind: LaneKind::Leg,
            leg: LegKind::Magnetar as u8,
            session: [0; 32],
            payload: vec![3; 64],
        }),
    ]
    .iter()
    .map(|m| m.encode().expect("a seed message encodes"))
    .collect()
}

fn seed_genesis() -> Vec<Vec<u8>> {
    let validators: Vec<String> = (0..VALIDATORS)
        .map(|i| {
            let k = key(i);
            let identity = mldsa::SecretKey::<MlDsa65>::from_seed(&[i as u8 + 1; 32]);
            let magnetar_key = magnetar::SecretKey::from_seed(
                magnetar::ParameterSet::Shake192f,
                &[i as u8 + 1; 32],
            );
            format!(
                r#"{{"name":"v{i}","bls_public_key":"{}","proof_of_possession":"{}","mldsa_public_key":"{}","slhdsa_public_key":"{}","tls_certificate":"3082","stake":1}}"#,
                hex::encode(k.public_key().to_bytes()),
                hex::encode(k.prove_possession().to_bytes()),
                hex::encode(identity.public_key().as_bytes()),
                hex::encode(magnetar_key.public_key().as_bytes()),
            )
        })
        .collect();
    vec![
        format!(
            r#"{{"chain_id":7,"genesis_time_us":1000,"validators":[{}]}}"#,
            validators.join(",")
        )
        .into_bytes(),
        format!(
            r#"{{"chain_id":7,"genesis_time_us":1000,"profile":"fast","epoch_length":4,"validators":[{}],"validator_changes":[{{"epoch":2,"validators":[{}]}}]}}"#,
            validators.join(","),
            validators[1..].join(",")
        )
        .into_bytes(),
        br#"{"chain_id":7,"genesis_time_us":0,"validators":[]}"#.to_vec(),
    ]
}

/// Secret key files with real shares (a 2-of-2 Corona key and a 2-of-2 Pulsar key, dealt from a
/// fixed seed) at the top level and in a `set_shares` entry, and one without any.
fn seed_secret_keys() -> Vec<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (_, corona_shares) = corona::scheme::trusted_dealer_keygen(2, 2, &mut rng).unwrap();
    let (pulsar_group, pulsar_shares) = pulsar::trusted_dealer_keygen(2, 2, &mut rng).unwrap();
    let corona = hex::encode(corona_shares[0].to_bytes().as_slice());
    let share = hex::encode(pulsar_shares[1].to_bytes().as_slice());
    let group = hex::encode(pulsar_group.to_bytes());
    let identity =
        r#""bls_secret_key":"00","mldsa_seed":"00","slhdsa_seed":"00","tls_private_key":"00""#;
    vec![
        format!("{{{identity}}}").into_bytes(),
        format!(
            r#"{{{identity},"corona_share":"{corona}","pulsar_share":"{share}","pulsar_group":"{group}","set_shares":[{{"epoch":2,"corona_share":"{corona}"}},{{"epoch":5,"pulsar_share":"{share}","pulsar_group":"{group}"}}]}}"#
        )
        .into_bytes(),
    ]
}

fn seed_node_toml() -> Vec<Vec<u8>> {
    vec![
        br#"data_dir = "data"
key_dir = "keys"
genesis = "genesis.json"
p2p_listen = "127.0.0.1:9000"
api_listen = "127.0.0.1:8080"
block_time_ms = 500
view_timeout_ms = 2000
mempool_max_txs = 1000
max_block_txs = 100
rollup_proving_key = "rollup/rollup.pk"

[[peers]]
bls_public_key = "aa"
address = "127.0.0.1:9001"
"#
        .to_vec(),
        b"data_dir = \"d\"\nblock_time_ms = 18446744073709551615\n".to_vec(),
    ]
}

fn seed_guard_files() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut guard = SigningGuard::open(dir.path(), &[7; 32]).expect("a fresh guard opens");
    for view in 1..4 {
        let kinds = [GuardVoteKind::Notarize, GuardVoteKind::Finalize];
        for kind in kinds {
            guard
                .check_and_record(&VoteIntent {
                    view,
                    kind,
                    block: [view as u8; 32],
                })
                .expect("fresh votes are allowed");
        }
    }
    guard
        .check_and_record(&VoteIntent {
            view: 9,
            kind: GuardVoteKind::Nullify,
            block: [0; 32],
        })
        .expect("a nullify in a new view is allowed");
    vec![std::fs::read(dir.path().join(GUARD_FILE)).expect("the guard wrote its file")]
}

/// The files of a real keystore (Argon2id at its minimum cost): two key files, one with a
/// 200-byte secret and one with an empty one, and the `keystore.json` header.
fn seed_keystore_files() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Keystore::open_with(dir.path(), b"fuzz", KdfParams::for_tests())
        .expect("a fresh keystore opens");
    let secret: Vec<u8> = (0..200u8).collect();
    for (key_id, scheme, secret) in [
        ("pulsar-1", Scheme::Pulsar, &secret[..]),
        ("bls-2", Scheme::Bls, &[][..]),
    ] {
        store
            .put(&NewKey {
                key_id,
                scheme,
                threshold: 2,
                participants: 3,
                public_key: &[0x5A; 48],
                secret,
            })
            .expect("stores");
    }
    ["pulsar-1.json", "bls-2.json", "keystore.json"]
        .iter()
        .map(|name| std::fs::read(dir.path().join(name)).expect("the keystore wrote it"))
        .collect()
}

/// A hand-written `core_inputs` program that must reach finality: the leader's proposal for
/// view 1 (on genesis), then a finalization of it by validators 1, 2 and 3.
fn seed_core_programs() -> Vec<Vec<u8>> {
    vec![
        // op 2: proposal, view byte 4 (current view), parent genesis, flags 0, no txs, time 0;
        // op 3: finalization, view byte 4, first proposed block, signers {1,2,3}, flags 0.
        vec![2, 4, 0, 0, 0, 0, 3, 1, 4, 0, 0x0E, 0],
        // The same, then a timeout (time steps), votes and a notarization for view 2.
        vec![
            2, 4, 0, 0, 0, 0, 3, 1, 4, 0, 0x0E, 0, 6, 60, 0, 1, 0, 4, 1, 0, 2, 4, 1, 0, 0, 3, 0, 4,
            1, 0x0B, 0, 4, 0, 0,
        ],
    ]
}

/// Bytes that tend to matter to decoders: zero, one, sign bits, all ones.
const INTERESTING: [u8; 6] = [0, 1, 0x7F, 0x80, 0xFE, 0xFF];

fn mutate(rng: &mut ChaCha8Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut out = seeds[rng.gen_range(0..seeds.len())].clone();
    for _ in 0..rng.gen_range(1..=4) {
        let len = out.len();
        match rng.gen_range(0..7) {
            0 if len > 0 => {
                let i = rng.gen_range(0..len);
                out[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.gen_range(0..len);
                out[i] = INTERESTING[rng.gen_range(0..INTERESTING.len())];
            }
            2 if len >= 4 => {
                // A 32-bit little-endian length or offset: small, huge, or off by one.
                let i = rng.gen_range(0..=len - 4);
                let value: u32 = match rng.gen_range(0..4) {
                    0 => rng.gen_range(0..64),
                    1 => u32::MAX - rng.gen_range(0..8),
                    2 => len as u32 + rng.gen_range(0..3),
                    _ => rng.gen(),
                };
                out[i..i + 4].copy_from_slice(&value.to_le_bytes());
            }
            3 => out.truncate(rng.gen_range(0..=len)),
            4 => {
                let i = rng.gen_range(0..=len);
                out.insert(i, rng.gen());
            }
            5 => {
                let other = &seeds[rng.gen_range(0..seeds.len())];
                let from = rng.gen_range(0..=other.len());
                let at = rng.gen_range(0..=len);
                out.truncate(at);
                out.extend_from_slice(&other[from..]);
            }
            _ => {}
        }
    }
    out
}

/// `seeds` as they are, then `cases` inputs: three quarters mutated seeds, the rest random bytes.
fn drive(name: &str, seed: u64, cases: usize, seeds: &[Vec<u8>], target: impl Fn(&[u8])) {
    let started = std::time::Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for input in seeds {
        target(input);
    }
    for _ in 0..cases {
        let input = if rng.gen_range(0..4) < 3 {
            mutate(&mut rng, seeds)
        } else {
            let len = rng.gen_range(0..256);
            (0..len).map(|_| rng.gen()).collect()
        };
        target(&input);
    }
    eprintln!(
        "{name}: {} inputs in {:?}",
        seeds.len() + cases,
        started.elapsed()
    );
}

#[test]
fn wire_decode_survives_mutated_messages() {
    drive(
        "decode",
        1,
        1000,
        &seed_messages(),
        quasar_wire::fuzzing::decode,
    );
}

#[test]
fn frame_len_survives_any_header() {
    let seeds = vec![vec![0; 4], 16u32.to_le_bytes().to_vec(), vec![0xFF; 4]];
    drive("frame", 2, 500, &seeds, quasar_wire::fuzzing::frame);
}

#[test]
fn certificate_verification_survives_mutated_certificates() {
    drive(
        "certificate",
        3,
        300,
        &seed_messages(),
        fuzzing::certificate,
    );
}

#[test]
fn sync_response_survives_mutated_replies() {
    drive(
        "sync_response",
        4,
        300,
        &seed_messages(),
        fuzzing::sync_response,
    );
}

#[test]
fn sync_request_serving_survives_mutated_requests() {
    drive(
        "sync_request",
        5,
        500,
        &seed_messages(),
        fuzzing::sync_request,
    );
}

#[test]
fn relay_request_serving_survives_mutated_requests() {
    drive(
        "relay_request",
        31,
        500,
        &seed_messages(),
        fuzzing::relay_request,
    );
}

#[test]
fn genesis_json_survives_mutated_files() {
    drive(
        "genesis_json",
        6,
        300,
        &seed_genesis(),
        quasar_chainspec::fuzzing::genesis_json,
    );
}

/// A real exported history (notarize, finalize, nullify and a fenced view) and a minimal one.
fn seed_signing_histories() -> Vec<Vec<u8>> {
    use quasar_chainspec::guard_history::{guard_owner, SigningHistory};
    let public_key = key(0).public_key();
    let genesis = [9; 32];
    let mut guard = quasar_storage::SigningGuard::in_memory_for(guard_owner(&public_key, &genesis));
    for (view, kind, block) in [
        (3, quasar_storage::VoteKind::Notarize, [1; 32]),
        (3, quasar_storage::VoteKind::Finalize, [1; 32]),
        (4, quasar_storage::VoteKind::Nullify, [0; 32]),
    ] {
        guard
            .check_and_record(&quasar_storage::VoteIntent { view, kind, block })
            .unwrap();
    }
    guard.fence(5).unwrap();
    let full = SigningHistory::export(&guard, &public_key.to_bytes(), Some(genesis));
    let mut empty = full.clone();
    empty.views.clear();
    [full, empty]
        .iter()
        .map(|h| serde_json::to_vec_pretty(h).unwrap())
        .collect()
}

#[test]
fn signing_history_survives_mutated_documents() {
    let seeds = seed_signing_histories();
    assert!(quasar_chainspec::guard_history::SigningHistory::parse(&seeds[0]).is_ok());
    drive(
        "signing_history",
        13,
        300,
        &seeds,
        quasar_chainspec::fuzzing::signing_history,
    );
}

#[test]
fn secret_key_json_survives_mutated_files() {
    let seeds = seed_secret_keys();
    // The seed with shares decodes in full, so mutations start from the deep paths.
    let text = std::str::from_utf8(&seeds[1]).unwrap();
    let dealt = SecretKeyFile::from_json(text).unwrap().dealt().unwrap();
    assert_eq!(dealt.keys().copied().collect::<Vec<_>>(), [0, 2, 5]);
    drive(
        "secret_key_json",
        12,
        300,
        &seeds,
        quasar_chainspec::fuzzing::secret_key_json,
    );
}

/// Signer byte + real ML-DSA-65 signatures on the fixture's rollup digest: each validator's
/// own, one claimed by the wrong validator, one by an unknown index.
fn seed_rollup_signatures() -> Vec<Vec<u8>> {
    let signature = |i: usize| {
        mldsa::SecretKey::<MlDsa65>::from_seed(&[i as u8 + 1; 32])
            .sign_deterministic(&fuzzing::ROLLUP_DIGEST, ROLLUP_CONTEXT)
            .expect("signs")
            .as_bytes()
            .to_vec()
    };
    let mut seeds: Vec<Vec<u8>> = (0..VALIDATORS)
        .map(|i| [vec![i as u8], signature(i)].concat())
        .collect();
    seeds.push([vec![1], signature(0)].concat());
    seeds.push([vec![200], signature(0)].concat());
    seeds
}

#[test]
fn rollup_signature_collection_agrees_with_fips_204() {
    drive(
        "rollup_signature",
        10,
        300,
        &seed_rollup_signatures(),
        fuzzing::rollup_signature,
    );
}

/// Real Magnetar legs (SLH-DSA-SHAKE-192f) by the lanes fuzzing fixture's validators on its
/// digest: everyone, a quorum without validator 0, and two signers (no quorum).
fn seed_magnetar_legs() -> Vec<Vec<u8>> {
    let signatures: Vec<magnetar::Signature> = (0..MAGNETAR_VALIDATORS)
        .map(|i| {
            magnetar::SecretKey::from_seed(magnetar::ParameterSet::Shake192f, &[i as u8 + 1; 32])
                .sign_deterministic(&MAGNETAR_MU, quasar_lanes::CERT_CONTEXT)
                .expect("signs")
        })
        .collect();
    let leg = |signers: &[usize]| {
        let pairs = signers
            .iter()
            .map(|&i| (i, signatures[i].clone()))
            .collect();
        MagnetarLeg::new(MAGNETAR_VALIDATORS, pairs)
            .expect("a leg")
            .encode()
    };
    vec![leg(&[0, 1, 2, 3]), leg(&[1, 2, 3]), leg(&[0, 1])]
}

#[test]
fn magnetar_leg_decode_and_verify_survive_mutated_legs() {
    let seeds = seed_magnetar_legs();
    drive(
        "magnetar_leg",
        11,
        200,
        &seeds,
        quasar_lanes::fuzzing::magnetar_leg,
    );
    drive(
        "magnetar_leg_verify",
        11,
        200,
        &seeds,
        quasar_lanes::fuzzing::magnetar_leg_verify,
    );
}

#[test]
fn account_answers_survive_mutation() {
    drive(
        "account_answer",
        13,
        300,
        &[fuzzing::account_answer_seed()],
        fuzzing::account_answer,
    );
}

#[test]
fn epoch_set_answers_survive_mutation() {
    drive(
        "epoch_set_answer",
        17,
        300,
        &[fuzzing::epoch_set_answer_seed()],
        fuzzing::epoch_set_answer,
    );
}

#[test]
fn node_toml_survives_mutated_files() {
    drive("node_toml", 7, 500, &seed_node_toml(), fuzzing::node_toml);
}

#[test]
fn guard_file_survives_mutated_files() {
    drive(
        "guard_file",
        8,
        500,
        &seed_guard_files(),
        quasar_storage::fuzzing::guard_file,
    );
}

#[test]
fn thresholdd_keystore_files_survive_mutation() {
    let seeds = seed_keystore_files();
    // The seeds decode in full, so mutations start from the deep paths.
    for seed in &seeds[..2] {
        keystore::parse_key_file(seed).expect("a key file the keystore wrote parses");
    }
    keystore::parse_header(&seeds[2]).expect("the header the keystore wrote parses");
    drive(
        "thresholdd_key_file",
        13,
        2000,
        &seeds,
        quasar_thresholdd::fuzzing::key_file,
    );
}

#[test]
fn sealed_validator_key_files_survive_mutation() {
    use quasar_chainspec::key_file::{parse_sealed, Purpose, SealedKeyFile};
    use quasar_chainspec::sealing::KdfParams;
    let seeds: Vec<Vec<u8>> = [&b"{}"[..], &[0x41; 300][..]]
        .iter()
        .map(|plaintext| {
            SealedKeyFile::seal(
                Purpose::ValidatorKey,
                b"fuzz passphrase",
                KdfParams::for_tests(),
                plaintext,
            )
            .expect("sealing a short plaintext")
            .to_bytes()
        })
        .collect();
    // The seeds decode in full, so mutations start from the deep paths.
    for seed in &seeds {
        parse_sealed(seed).expect("a sealed file this build wrote parses");
    }
    drive(
        "sealed_key_file",
        29,
        2000,
        &seeds,
        quasar_chainspec::fuzzing::sealed_key_file,
    );
}

#[test]
fn thresholdd_session_records_survive_mutation() {
    let seeds = vec![Vec::new(), [7u8; 64].to_vec(), [1u8; 31].to_vec()];
    drive(
        "thresholdd_session_record",
        17,
        2000,
        &seeds,
        quasar_thresholdd::fuzzing::session_record,
    );
}

#[test]
fn the_consensus_core_keeps_its_invariants_under_fuzzed_inputs() {
    let programs = seed_core_programs();
    let first = fuzzing::core_inputs(&programs[0]);
    assert_eq!(
        first.finalized_height, 1,
        "the scripted program must finalize block 1 (harness broken?): {first:?}"
    );
    let most = std::sync::Mutex::new(fuzzing::CoreRun::default());
    drive("core_inputs", 9, 600, &programs, |data| {
        let run = fuzzing::core_inputs(data);
        let mut most = most.lock().expect("not poisoned");
        most.view = most.view.max(run.view);
        most.accepted = most.accepted.max(run.accepted);
        most.finalized_height = most.finalized_height.max(run.finalized_height);
    });
    let most = most.into_inner().expect("not poisoned");
    eprintln!("core_inputs reached at most: {most:?}");
    assert!(most.view > 2, "the fuzzed runs never left view 2: {most:?}");
}

// Regression (found by the `core_inputs` fuzz target): a Byzantine quorum's finalization of a
// block whose height skips its parent's was committed as a height jump. `try_commit` now requires
// consecutive heights down to the tip.
#[test]
fn a_finalized_block_with_a_height_gap_is_not_committed() {
    quasar_node::fuzzing::core_inputs(&[2, 4, 0, 8, 0, 0, 3, 1, 4, 0, 0x0E, 0]);
}

// Regression (found by the `core_inputs` fuzz target): a notarize vote for the right block with a
// wrong height was counted, so the core built a certificate whose aggregate did not verify and
// then could never build a valid one for that view. Votes now count only with matching heights.
#[test]
fn a_vote_with_a_wrong_height_does_not_spoil_the_certificate() {
    let input = [
        0xfe, 0xfb, 0xff, 0x00, 0x00, 0x89, 0xff, 0x00, 0x32, 0x29, 0x00, 0xff, 0xd2,
    ];
    quasar_node::fuzzing::core_inputs(&input);
}
