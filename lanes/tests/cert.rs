//! QuasarCert verification (issue 8): one valid certificate per profile; each single-leg
//! corruption rejected naming that leg; legs from another epoch, height or chain rejected; a
//! certificate cannot override the epoch's policy; missing, extra and duplicated legs, bad
//! bundles and undecodable bytes are malformed.

use quasar_crypto::hash::Hash;
use quasar_lanes::cert::{CertError, CertVerifier, Profile};
use quasar_lanes::cert_fixture::{Fixture, FixtureConfig};
use quasar_lanes::LaneError;
use quasar_wire::{LegKind, QuasarCert};

const BLOCK: Hash = [0xb1; 32];
const HEIGHT: u64 = 10;
const VIEW: u64 = 12;

fn fixture(profile: Profile) -> Fixture {
    Fixture::new(FixtureConfig::new(4, profile)).unwrap()
}

fn verifier() -> CertVerifier {
    CertVerifier::new(2).unwrap()
}

/// Two earlier round digests, so every certificate covers a bundle of three blocks.
fn earlier(f: &Fixture) -> Vec<Hash> {
    vec![
        f.policy().round_digest(HEIGHT - 2, VIEW - 2, &[0xa8; 32]),
        f.policy().round_digest(HEIGHT - 1, VIEW - 1, &[0xa9; 32]),
    ]
}

fn certificate(f: &mut Fixture) -> QuasarCert {
    let earlier = earlier(f);
    f.certificate(HEIGHT, VIEW, BLOCK, &earlier).unwrap()
}

fn encode(cert: &QuasarCert) -> Vec<u8> {
    cert.encode().unwrap()
}

fn leg_body(cert: &QuasarCert, kind: LegKind) -> Vec<u8> {
    cert.legs
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, b)| b.clone())
        .unwrap()
}

fn with_leg(cert: &QuasarCert, kind: LegKind, body: Vec<u8>) -> QuasarCert {
    let mut c = cert.clone();
    for (k, b) in c.legs.iter_mut() {
        if *k == kind {
            *b = body.clone();
        }
    }
    c
}

fn assert_leg_rejected(result: Result<impl std::fmt::Debug, CertError>, kind: LegKind) {
    match result {
        Err(CertError::Leg { leg, .. }) => assert_eq!(leg, kind),
        other => panic!("{kind} corruption gave {other:?}"),
    }
}

#[test]
fn one_valid_certificate_per_profile() {
    let v = verifier();
    for profile in [
        Profile::Quasar,
        Profile::Aurora,
        Profile::Polaris,
        Profile::Fast,
        Profile::Hybrid { deadline_ms: 1000 },
    ] {
        let mut f = fixture(profile);
        let cert = if profile == Profile::Fast {
            f.certificate(HEIGHT, VIEW, BLOCK, &[]).unwrap()
        } else {
            certificate(&mut f)
        };
        let report = v.verify(f.policy(), &encode(&cert)).unwrap();
        let legs: Vec<LegKind> = report.legs.iter().map(|t| t.leg).collect();
        assert_eq!(legs, profile.legs(), "{profile}");
        assert_eq!(report.height, HEIGHT);
        assert_eq!(report.block, BLOCK);
        assert_eq!(
            report.round_digest,
            f.policy().round_digest(HEIGHT, VIEW, &BLOCK)
        );
        assert_eq!(report.bundle.last(), Some(&report.round_digest));
        assert_eq!(report.bundle.len(), cert.bundle.len());
    }
}

#[test]
fn each_single_leg_corruption_is_rejected_naming_that_leg() {
    let v = verifier();
    // polaris has BLS, Pulsar, Corona and Magnetar; quasar adds Groth16.
    for profile in [Profile::Polaris, Profile::Quasar] {
        let mut f = fixture(profile);
        let cert = certificate(&mut f);
        for &kind in profile.legs() {
            let body = leg_body(&cert, kind);
            // A flipped byte at the start, in the middle and at the end of the body.
            for at in [0, body.len() / 2, body.len() - 1] {
                let mut bad = body.clone();
                bad[at] ^= 0x01;
                let result = v.verify(f.policy(), &encode(&with_leg(&cert, kind, bad)));
                assert_leg_rejected(result, kind);
            }
            // Truncated and extended bodies.
            let short = body[..body.len() - 1].to_vec();
            assert_leg_rejected(
                v.verify(f.policy(), &encode(&with_leg(&cert, kind, short))),
                kind,
            );
            let mut long = body.clone();
            long.push(0);
            assert_leg_rejected(
                v.verify(f.policy(), &encode(&with_leg(&cert, kind, long))),
                kind,
            );
        }
    }
}

#[test]
fn legs_from_another_height_epoch_or_chain_are_rejected() {
    let v = verifier();
    let mut f = fixture(Profile::Polaris);
    let cert = certificate(&mut f);
    // Another height (and block) of the same epoch: every leg signed another digest.
    let other = f
        .certificate(HEIGHT + 1, VIEW + 1, [0xb2; 32], &[])
        .unwrap();
    for &kind in Profile::Polaris.legs() {
        let moved = with_leg(&cert, kind, leg_body(&other, kind));
        assert_leg_rejected(v.verify(f.policy(), &encode(&moved)), kind);
    }
    // The same keys in another epoch: the same height's legs do not carry over.
    let mut next_epoch = Fixture::new(FixtureConfig {
        epoch: 4,
        ..FixtureConfig::new(4, Profile::Polaris)
    })
    .unwrap();
    let foreign = certificate(&mut next_epoch);
    for &kind in Profile::Polaris.legs() {
        let moved = with_leg(&cert, kind, leg_body(&foreign, kind));
        assert_leg_rejected(v.verify(f.policy(), &encode(&moved)), kind);
    }
    assert_eq!(
        v.verify(f.policy(), &encode(&foreign)).unwrap_err(),
        CertError::WrongEpoch {
            expected: 3,
            got: 4
        }
    );
    // Another chain, same keys.
    let mut other_chain = Fixture::new(FixtureConfig {
        chain_id: 8,
        ..FixtureConfig::new(4, Profile::Polaris)
    })
    .unwrap();
    let foreign = certificate(&mut other_chain);
    assert_eq!(
        v.verify(f.policy(), &encode(&foreign)).unwrap_err(),
        CertError::WrongChain {
            expected: 7,
            got: 8
        }
    );
    for &kind in Profile::Polaris.legs() {
        let moved = with_leg(&cert, kind, leg_body(&foreign, kind));
        assert_leg_rejected(v.verify(f.policy(), &encode(&moved)), kind);
    }
}

#[test]
fn a_certificate_cannot_override_the_epoch_policy() {
    let v = verifier();
    let mut quasar = fixture(Profile::Quasar);
    // The same keys under profile `fast`: a BLS-only certificate.
    let mut fast = fixture(Profile::Fast);
    let fast_cert = fast.certificate(HEIGHT, VIEW, BLOCK, &[]).unwrap();
    assert!(v.verify(fast.policy(), &encode(&fast_cert)).is_ok());
    // Its μ names profile `fast`, not the epoch's `quasar`.
    assert_eq!(
        v.verify(quasar.policy(), &encode(&fast_cert)).unwrap_err(),
        CertError::BundleMismatch
    );
    // A quasar certificate stripped to its BLS leg lacks the policy's legs.
    let quasar_cert = quasar.certificate(HEIGHT, VIEW, BLOCK, &[]).unwrap();
    let mut bls_only = quasar_cert.clone();
    bls_only.legs.truncate(1);
    assert_eq!(
        v.verify(quasar.policy(), &encode(&bls_only)).unwrap_err(),
        CertError::MissingLeg {
            leg: LegKind::Corona
        }
    );
    // Fill in valid quasar legs: the BLS leg still signed the `fast` μ, which names its
    // profile, so it fails under the quasar policy.
    let mut mixed = quasar_cert.clone();
    mixed.legs[0] = fast_cert.legs[0].clone();
    mixed.bundle = fast_cert.bundle.clone();
    assert_eq!(
        v.verify(quasar.policy(), &encode(&mixed)).unwrap_err(),
        CertError::BundleMismatch
    );
    let mut mixed = quasar_cert.clone();
    mixed.legs[0] = fast_cert.legs[0].clone();
    assert_leg_rejected(v.verify(quasar.policy(), &encode(&mixed)), LegKind::Bls);
    // A valid quasar certificate is not valid under the `fast` policy of the same keys (its μ
    // names `quasar`), and a `fast` certificate cannot carry more legs than `fast` has.
    assert_eq!(
        v.verify(fast.policy(), &encode(&quasar_cert)).unwrap_err(),
        CertError::BundleMismatch
    );
    let mut extra = fast_cert.clone();
    extra.legs.push(quasar_cert.legs[1].clone());
    assert_eq!(
        v.verify(fast.policy(), &encode(&extra)).unwrap_err(),
        CertError::ExtraLeg {
            leg: LegKind::Corona
        }
    );
}

#[test]
fn missing_extra_and_duplicated_legs_are_malformed() {
    let v = verifier();
    let mut f = fixture(Profile::Aurora);
    let cert = certificate(&mut f);
    let mut missing = cert.clone();
    missing.legs.retain(|(k, _)| *k != LegKind::Pulsar);
    assert_eq!(
        v.verify(f.policy(), &encode(&missing)).unwrap_err(),
        CertError::MissingLeg {
            leg: LegKind::Pulsar
        }
    );
    let mut extra = cert.clone();
    extra.legs.push((LegKind::Groth16, vec![0; 256]));
    assert_eq!(
        v.verify(f.policy(), &encode(&extra)).unwrap_err(),
        CertError::ExtraLeg {
            leg: LegKind::Groth16
        }
    );
    let mut duplicated = cert.clone();
    duplicated.legs.push(duplicated.legs[1].clone());
    assert_eq!(
        v.verify(f.policy(), &encode(&duplicated)).unwrap_err(),
        CertError::DuplicateLeg {
            leg: LegKind::Pulsar
        }
    );
    // Order does not matter; the set does.
    let mut reordered = cert.clone();
    reordered.legs.reverse();
    assert!(v.verify(f.policy(), &encode(&reordered)).is_ok());
}

#[test]
fn bundles_must_end_with_the_block_and_fit_the_policy() {
    let v = verifier();
    let mut f = fixture(Profile::Aurora);
    let cert = certificate(&mut f);
    let mut wrong_last = cert.clone();
    wrong_last.bundle.swap(1, 2);
    assert_eq!(
        v.verify(f.policy(), &encode(&wrong_last)).unwrap_err(),
        CertError::BundleMismatch
    );
    // Another view or block changes μ.
    let mut other_view = cert.clone();
    other_view.view += 1;
    assert_eq!(
        v.verify(f.policy(), &encode(&other_view)).unwrap_err(),
        CertError::BundleMismatch
    );
    // A bundle changed in an earlier digest changes the bundle digest: the PQ legs fail.
    let mut other_bundle = cert.clone();
    other_bundle.bundle[0] = [0; 32];
    assert!(matches!(
        v.verify(f.policy(), &encode(&other_bundle)).unwrap_err(),
        CertError::Leg { leg, .. } if leg != LegKind::Bls
    ));
    let mut too_long = cert.clone();
    too_long.bundle = vec![[5; 32]; 8];
    too_long.bundle.push(cert.bundle[2]);
    assert_eq!(
        v.verify(f.policy(), &encode(&too_long)).unwrap_err(),
        CertError::BundleTooLong { got: 9, max: 8 }
    );
    let mut fast = fixture(Profile::Fast);
    let two = fast.certificate(HEIGHT, VIEW, BLOCK, &[[1; 32]]).unwrap();
    assert_eq!(
        v.verify(fast.policy(), &encode(&two)).unwrap_err(),
        CertError::BundleTooLong { got: 2, max: 1 }
    );
}

#[test]
fn undecodable_bytes_and_cross_lane_errors_are_reported() {
    let v = verifier();
    let mut f = fixture(Profile::Aurora);
    assert!(matches!(
        v.verify(f.policy(), b"not a certificate"),
        Err(CertError::Decode(_))
    ));
    let cert = certificate(&mut f);
    // A Pulsar body that is not 3309 bytes.
    let bad = with_leg(&cert, LegKind::Pulsar, vec![0; 10]);
    assert!(matches!(
        v.verify(f.policy(), &encode(&bad)).unwrap_err(),
        CertError::Leg {
            leg: LegKind::Pulsar,
            error: LaneError::PulsarSignature(_)
        }
    ));
    // A BLS body shorter than the aggregate.
    let bad = with_leg(&cert, LegKind::Bls, vec![0; 95]);
    assert_eq!(
        v.verify(f.policy(), &encode(&bad)).unwrap_err(),
        CertError::Leg {
            leg: LegKind::Bls,
            error: LaneError::LegLength {
                expected: 96,
                got: 95
            }
        }
    );
}

#[test]
fn a_groth16_leg_must_prove_this_bundle_for_this_epoch() {
    let v = verifier();
    let mut f = fixture(Profile::Quasar);
    let cert = certificate(&mut f);
    let body = leg_body(&cert, LegKind::Groth16);
    // The proven digest (bytes 192..224) and h_x (224..256) are checked before the pairing.
    for at in [200, 230] {
        let mut bad = body.clone();
        bad[at] ^= 0x10;
        assert_eq!(
            v.verify(f.policy(), &encode(&with_leg(&cert, LegKind::Groth16, bad)))
                .unwrap_err(),
            CertError::Leg {
                leg: LegKind::Groth16,
                error: LaneError::Groth16Statement
            }
        );
    }
}

/// The `quasar_cert` and `quasar_cert_verify` fuzz entry points on stable: the empty input (the
/// valid certificate), random bytes, and seeded edits of the valid certificate.
#[test]
fn fuzz_entry_point_smoke() {
    use quasar_lanes::fuzzing::{quasar_cert, quasar_cert_verify};
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
    quasar_cert(&[]);
    quasar_cert_verify(&[]);
    for round in 0..48 {
        let len = if round % 2 == 0 {
            4 * rng.gen_range(1..4)
        } else {
            rng.gen_range(0..300)
        };
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        quasar_cert(&data);
        quasar_cert_verify(&data);
    }
}
