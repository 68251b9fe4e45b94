//! Pulsar (threshold ML-DSA-65): every signing set of (2,3), (3,5) and (4,6) produces signatures
//! that two independent FIPS 204 implementations accept under the ordinary group public key;
//! misbehaving parties are named; sessions never reuse randomness; messages round-trip and bad
//! encodings are refused.

use quasar_crypto::mldsa::{MlDsa65, PublicKey, Signature};
use quasar_crypto::pulsar::{
    combine, trusted_dealer_keygen, GroupKey, KeyShare, PulsarError, Round1Message, Round2Message,
    Round3Message, Session, SessionId, Signer, PUBLIC_KEY_BYTES, SIGNATURE_BYTES,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CONTEXT: &[u8] = b"quasar-cert-v1";

/// The three rounds' messages of one session among `signers`.
struct Transcript {
    session: Session,
    round1: Vec<Round1Message>,
    round2: Vec<Round2Message>,
    round3: Vec<Round3Message>,
}

fn run_session(
    group: &GroupKey,
    signers: &mut [&mut Signer],
    id: u64,
    message: &[u8],
    rng: &mut ChaCha20Rng,
) -> Transcript {
    let parties: Vec<u16> = signers.iter().map(|s| s.party()).collect();
    let mut sid = [0u8; 32];
    sid[..8].copy_from_slice(&id.to_le_bytes());
    let session = Session::new(group, SessionId(sid), &parties, message, CONTEXT).unwrap();
    let mut states = Vec::new();
    let mut round1 = Vec::new();
    for s in signers.iter_mut() {
        let (m, st) = s.round1(group, &session, rng).unwrap();
        round1.push(m);
        states.push(st);
    }
    let mut states2 = Vec::new();
    let mut round2 = Vec::new();
    for (s, st) in signers.iter().zip(states) {
        let (m, st) = s.round2(st, &round1).unwrap();
        round2.push(m);
        states2.push(st);
    }
    let round3 = signers
        .iter()
        .zip(states2)
        .map(|(s, st)| s.round3(group, st, &round2).unwrap())
        .collect();
    Transcript {
        session,
        round1,
        round2,
        round3,
    }
}

/// Signs `message` with `signers`, restarting on `Restart`; returns the signature and the
/// number of sessions it took.
fn sign(
    group: &GroupKey,
    signers: &mut [&mut Signer],
    first_id: u64,
    message: &[u8],
    rng: &mut ChaCha20Rng,
) -> (Vec<u8>, u64) {
    for attempt in 0..40 {
        let t = run_session(group, signers, first_id + attempt, message, rng);
        match combine(group, &t.session, &t.round1, &t.round2, &t.round3) {
            Ok(sig) => return (sig, attempt + 1),
            Err(PulsarError::Restart) => continue,
            Err(e) => panic!("honest session failed: {e}"),
        }
    }
    panic!("40 sessions without a signature");
}

fn verify_twice(group: &GroupKey, message: &[u8], signature: &[u8]) {
    assert_eq!(signature.len(), SIGNATURE_BYTES);
    let pk = PublicKey::<MlDsa65>::from_bytes(group.public_key_bytes()).unwrap();
    let sig = Signature::<MlDsa65>::from_bytes(signature).unwrap();
    pk.verify(message, CONTEXT, &sig)
        .expect("libcrux accepts the threshold signature");
    use fips204::traits::{SerDes, Verifier};
    let pk2 =
        fips204::ml_dsa_65::PublicKey::try_from_bytes(group.public_key_bytes().try_into().unwrap())
            .unwrap();
    let sig2: [u8; SIGNATURE_BYTES] = signature.try_into().unwrap();
    assert!(
        pk2.verify(message, &sig2, CONTEXT),
        "fips204 accepts the threshold signature"
    );
    assert!(!pk2.verify(b"another message", &sig2, CONTEXT));
}

fn subsets(n: u16, t: usize) -> Vec<Vec<u16>> {
    (0u32..1 << n)
        .filter(|m| m.count_ones() as usize == t)
        .map(|m| (0..n).filter(|i| m & (1 << i) != 0).collect())
        .collect()
}

fn every_signing_set_signs(t: usize, n: usize, seed: u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (group, shares) = trusted_dealer_keygen(t, n, &mut rng).unwrap();
    assert_eq!(group.public_key_bytes().len(), PUBLIC_KEY_BYTES);
    assert!(shares.iter().all(|s| group.check_share(s)));
    let mut signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
    let mut sessions = 0;
    let sets = subsets(n as u16, t);
    for (i, set) in sets.iter().enumerate() {
        let message = format!("block digest {i}");
        let mut chosen: Vec<&mut Signer> = signers
            .iter_mut()
            .filter(|s| set.contains(&s.party()))
            .collect();
        let (signature, used) = sign(
            &group,
            &mut chosen,
            1000 * i as u64,
            message.as_bytes(),
            &mut rng,
        );
        verify_twice(&group, message.as_bytes(), &signature);
        sessions += used;
    }
    println!(
        "({t}, {n}): {} signing sets, {sessions} sessions ({:.2} per signature)",
        sets.len(),
        sessions as f64 / sets.len() as f64
    );
}

#[test]
fn every_2_of_3_set_signs() {
    every_signing_set_signs(2, 3, 1);
}

#[test]
fn every_3_of_5_set_signs() {
    every_signing_set_signs(3, 5, 2);
}

#[test]
fn every_4_of_6_set_signs() {
    every_signing_set_signs(4, 6, 3);
}

fn two_of_three() -> (GroupKey, Vec<Signer>, ChaCha20Rng) {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let (group, shares) = trusted_dealer_keygen(2, 3, &mut rng).unwrap();
    let signers = shares.into_iter().map(Signer::new).collect();
    (group, signers, rng)
}

#[test]
fn a_reveal_that_differs_from_its_commitment_names_its_sender() {
    let (group, mut signers, mut rng) = two_of_three();
    let (a, b) = signers.split_at_mut(1);
    let mut t = run_session(&group, &mut [&mut a[0], &mut b[0]], 1, b"m", &mut rng);
    t.round2[1].w[0][0][0] = (t.round2[1].w[0][0][0] + 1) % 8_380_417;
    assert_eq!(
        combine(&group, &t.session, &t.round1, &t.round2, &t.round3),
        Err(PulsarError::Misbehaved {
            party: 1,
            reason: "revealed values that do not match its commitment"
        })
    );
}

#[test]
fn a_withheld_message_names_the_silent_party() {
    let (group, mut signers, mut rng) = two_of_three();
    let (a, b) = signers.split_at_mut(2);
    let t = run_session(&group, &mut [&mut a[0], &mut b[0]], 1, b"m", &mut rng);
    assert_eq!(
        combine(&group, &t.session, &t.round1, &t.round2, &t.round3[..1]),
        Err(PulsarError::Missing(2))
    );
    assert_eq!(
        combine(&group, &t.session, &t.round1[1..], &t.round2, &t.round3),
        Err(PulsarError::Missing(0))
    );
}

#[test]
fn responses_that_do_not_match_the_share_name_the_sender() {
    let (group, mut signers, mut rng) = two_of_three();
    let (a, b) = signers.split_at_mut(1);
    let mut t = run_session(&group, &mut [&mut a[0], &mut b[0]], 1, b"m", &mut rng);
    // Party 1 answers with z computed from a different share: every accepted z shifted.
    for z in t.round3[1].z.iter_mut().flatten() {
        z[0][0] = (z[0][0] + 5_000) % 8_380_417;
    }
    assert_eq!(
        combine(&group, &t.session, &t.round1, &t.round2, &t.round3),
        Err(PulsarError::Misbehaved {
            party: 1,
            reason: "response inconsistent with its public share"
        })
    );
}

#[test]
fn strangers_duplicates_and_other_sessions_are_named() {
    let (group, mut signers, mut rng) = two_of_three();
    let (a, b) = signers.split_at_mut(1);
    let t = run_session(&group, &mut [&mut a[0], &mut b[0]], 1, b"m", &mut rng);
    let mut stranger = t.round1.clone();
    stranger[1].party = 2;
    assert!(matches!(
        combine(&group, &t.session, &stranger, &t.round2, &t.round3),
        Err(PulsarError::Misbehaved { party: 2, .. })
    ));
    let mut twice = t.round3.clone();
    twice.push(t.round3[0].clone());
    assert!(matches!(
        combine(&group, &t.session, &t.round1, &t.round2, &twice),
        Err(PulsarError::Misbehaved { party: 0, .. })
    ));
    let mut other = t.round2.clone();
    other[0].session = SessionId([7; 32]);
    assert!(matches!(
        combine(&group, &t.session, &t.round1, &other, &t.round3),
        Err(PulsarError::Misbehaved { party: 0, .. })
    ));
}

#[test]
fn a_session_id_is_never_used_twice_and_messages_carry_fresh_randomness() {
    let (group, mut signers, mut rng) = two_of_three();
    let session = Session::new(&group, SessionId([1; 32]), &[0, 1], b"m", CONTEXT).unwrap();
    let (first, _) = signers[0].round1(&group, &session, &mut rng).unwrap();
    assert!(matches!(
        signers[0].round1(&group, &session, &mut rng),
        Err(PulsarError::SessionReused)
    ));
    // Same share, same message, same signers, new session: nothing repeats, so no message is
    // a function of the share alone.
    let other = Session::new(&group, SessionId([2; 32]), &[0, 1], b"m", CONTEXT).unwrap();
    let (second, _) = signers[0].round1(&group, &other, &mut rng).unwrap();
    assert_ne!(first.commitment, second.commitment);
    let (a, b) = signers.split_at_mut(1);
    let t1 = run_session(&group, &mut [&mut a[0], &mut b[0]], 10, b"m", &mut rng);
    let t2 = run_session(&group, &mut [&mut a[0], &mut b[0]], 11, b"m", &mut rng);
    assert_ne!(t1.round2[0].w, t2.round2[0].w);
    assert_ne!(t1.round3[0].z, t2.round3[0].z);
    assert!(matches!(
        Session::new(&group, SessionId([3; 32]), &[0], b"m", CONTEXT),
        Err(PulsarError::InvalidSet(_))
    ));
    assert!(matches!(
        Session::new(&group, SessionId([3; 32]), &[0, 0], b"m", CONTEXT),
        Err(PulsarError::InvalidSet(_))
    ));
    assert!(matches!(
        Session::new(&group, SessionId([3; 32]), &[0, 3], b"m", CONTEXT),
        Err(PulsarError::InvalidSet(_))
    ));
}

#[test]
fn messages_round_trip_and_bad_encodings_are_refused() {
    let (group, mut signers, mut rng) = two_of_three();
    let params = *group.params();
    let (a, b) = signers.split_at_mut(1);
    let t = run_session(&group, &mut [&mut a[0], &mut b[0]], 1, b"m", &mut rng);
    for m in &t.round1 {
        assert_eq!(&Round1Message::from_bytes(&m.to_bytes()).unwrap(), m);
    }
    for m in &t.round2 {
        let bytes = m.to_bytes();
        assert_eq!(&Round2Message::from_bytes(&bytes, &params).unwrap(), m);
        assert!(Round2Message::from_bytes(&bytes[..bytes.len() - 1], &params).is_err());
        let mut high = bytes.clone();
        // The first coefficient becomes 2^23 − 1 ≥ q.
        high[34] = 0xff;
        high[35] = 0xff;
        high[36] |= 0x7f;
        assert!(Round2Message::from_bytes(&high, &params).is_err());
    }
    for m in &t.round3 {
        let bytes = m.to_bytes();
        assert_eq!(&Round3Message::from_bytes(&bytes, &params).unwrap(), m);
        assert!(Round3Message::from_bytes(&bytes[..bytes.len() - 1], &params).is_err());
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(Round3Message::from_bytes(&trailing, &params).is_err());
        let mut flag = bytes.clone();
        flag[34] = 2;
        assert!(Round3Message::from_bytes(&flag, &params).is_err());
    }
    assert!(Round1Message::from_bytes(&[0; 65]).is_err());
    assert!(trusted_dealer_keygen(1, 3, &mut rng).is_err());
    assert!(trusted_dealer_keygen(3, 7, &mut rng).is_err());
}

/// A share from another key fails the check a party runs on receipt.
#[test]
fn a_share_of_another_key_is_refused() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let (group, _) = trusted_dealer_keygen(2, 3, &mut rng).unwrap();
    let (_, other): (GroupKey, Vec<KeyShare>) = trusted_dealer_keygen(2, 3, &mut rng).unwrap();
    assert!(!group.check_share(&other[0]));
}
