//! `GET /account/{address}` answers and their client-side check (`quasar_node::light`), on the
//! chain of a seeded simulation: real signed transfers executed by every node, real state
//! roots in the headers, real finalization certificates. Each way of lying about an account
//! (its numbers, the root, the block, the certificate, the proof, the address) is refused.

use quasar_client::AccountInfo;
use quasar_node::light::{account_info, verify_account, LightError, MAX_LINKS};
use quasar_node::sim::{SimConfig, Simulation};
use quasar_wire::{decode, MessageRef};

const SECOND: u64 = 1_000_000;

/// 4 validators, every slot's client sending transfers, epochs of 5 blocks (so boundary blocks
/// are finalized through seals), `loss` of the messages lost.
fn config(loss: f64) -> SimConfig {
    SimConfig {
        epoch_length: 5,
        txs_per_block: 3,
        loss,
        ..SimConfig::default()
    }
}

/// A simulation of [`config`] without loss that finalized past height 8.
fn chain() -> Simulation {
    let mut sim = Simulation::new(config(0.0));
    assert!(sim.run_until_height(8, 60 * SECOND), "{}", sim.describe());
    sim
}

fn answer(sim: &Simulation, node: usize, address: &[u8; 32]) -> AccountInfo {
    let state = sim.state_db(node).state().expect("state store");
    account_info(sim.store(node), &state, address).expect("an answer")
}

#[test]
fn every_node_answers_with_an_account_the_client_accepts() {
    let sim = chain();
    let sender = sim.account(0);
    for node in 0..4 {
        let info = answer(&sim, node, &sender);
        let checked = verify_account(sim.verifier(), &sender, &info).expect("verifies");
        let account = checked.account.expect("the sender exists");
        assert!(account.nonce > 0, "the sender's transfers executed");
        assert!(account.has_key, "its first transfer put its key in state");
        assert!(checked.height >= 1);
        // Through JSON, as the API sends it.
        let json = serde_json::to_string(&info).unwrap();
        let read: AccountInfo = serde_json::from_str(&json).unwrap();
        assert_eq!(verify_account(sim.verifier(), &sender, &read), Ok(checked));
    }
    // An address nobody uses: absence, proven.
    let nobody = [0x5a; 32];
    let info = answer(&sim, 1, &nobody);
    assert_eq!(info.account, None);
    let checked = verify_account(sim.verifier(), &nobody, &info).expect("absence verifies");
    assert_eq!(checked.account, None);
}

#[test]
fn an_answer_that_lies_is_refused() {
    let sim = chain();
    let sender = sim.account(1);
    let honest = answer(&sim, 2, &sender);
    let verifier = sim.verifier();
    verify_account(verifier, &sender, &honest).expect("the honest answer verifies");
    let refused = |info: &AccountInfo| verify_account(verifier, &sender, info).unwrap_err();

    // A richer account: the proof does not lead to the root.
    let mut richer = honest.clone();
    richer.account.as_mut().unwrap().balance += 1;
    assert!(matches!(refused(&richer), LightError::Proof(_)));
    // Claiming the account does not exist.
    let mut absent = honest.clone();
    absent.account = None;
    assert!(matches!(refused(&absent), LightError::Proof(_)));
    // Another state root (with a proof built for it, the header no longer hashes to the
    // certified block).
    let mut other_root = honest.clone();
    other_root.header.state_root = "11".repeat(32);
    assert!(matches!(refused(&other_root), LightError::NotFinalized(_)));
    // Another account's proof.
    let mut other_proof = honest.clone();
    other_proof.proof_hex = answer(&sim, 2, &sim.account(3)).proof_hex;
    assert!(matches!(refused(&other_proof), LightError::Proof(_)));
    // The answer for another address.
    let other = answer(&sim, 2, &sim.account(3));
    assert!(matches!(refused(&other), LightError::OtherAddress { .. }));
    // A certificate whose aggregate signature is not the signers'.
    let mut forged = honest.clone();
    let mut bytes = hex::decode(&forged.certificate_hex).unwrap();
    let Ok(MessageRef::Certificate(c)) = decode(&bytes) else {
        panic!("the answer's certificate decodes")
    };
    let mut certificate = c.to_owned();
    certificate.signature = other_signature(&sim, &certificate);
    bytes = certificate.encode().unwrap();
    forged.certificate_hex = hex::encode(&bytes);
    assert!(matches!(refused(&forged), LightError::Certificate(_)));
    // Malformed fields get a clear error, not a panic or an allocation of what they claim.
    let mut huge = honest.clone();
    huge.certificate_hex = "00".repeat(1 << 20);
    assert!(matches!(
        refused(&huge),
        LightError::Malformed {
            field: "certificate_hex",
            ..
        }
    ));
    let mut odd = honest.clone();
    odd.proof_hex.push('0');
    assert!(matches!(
        refused(&odd),
        LightError::Malformed {
            field: "proof_hex",
            ..
        }
    ));
    let mut short = honest.clone();
    short.header.parent = "ab".into();
    assert!(matches!(
        refused(&short),
        LightError::Malformed {
            field: "header",
            ..
        }
    ));
    let mut long_chain = honest.clone();
    long_chain.links = vec![honest.header.clone(); MAX_LINKS + 1];
    assert!(matches!(
        refused(&long_chain),
        LightError::Malformed { field: "links", .. }
    ));
}

/// A valid-looking aggregate signature that is not the certificate's: the signature of
/// another stored certificate of the same node.
fn other_signature(sim: &Simulation, certificate: &quasar_wire::Certificate) -> [u8; 96] {
    sim.committed(2)
        .into_iter()
        .map(|block| block.certificate.signature)
        .find(|signature| *signature != certificate.signature)
        .expect("another certificate")
}

#[test]
fn a_block_finalized_through_its_descendants_carries_the_links_to_its_certificate() {
    // With 30% of messages lost, finalize quorums are missed and a block is often finalized by
    // a descendant's certificate (and boundary blocks, every 5, through seals): a node whose
    // latest executed block is one of those answers with the links up to the certificate.
    let mut sim = Simulation::new(config(0.3));
    let sender = sim.account(0);
    let mut seen_links = false;
    while !seen_links {
        assert!(
            sim.now() < 300 * SECOND,
            "no answer came from a block certified by a descendant: {}",
            sim.describe()
        );
        sim.run_until(sim.now() + 5_000);
        if sim.finalized_height(0) == 0 {
            continue;
        }
        let info = answer(&sim, 0, &sender);
        verify_account(sim.verifier(), &sender, &info).expect("verifies");
        if !info.links.is_empty() {
            seen_links = true;
            // Cutting the links loses the way to the certificate.
            let mut cut = info.clone();
            cut.links.clear();
            assert!(matches!(
                verify_account(sim.verifier(), &sender, &cut),
                Err(LightError::NotFinalized(_))
            ));
            // A link that is not the one certified.
            let mut bent = info.clone();
            bent.links[0].timestamp_us += 1;
            assert!(matches!(
                verify_account(sim.verifier(), &sender, &bent),
                Err(LightError::NotFinalized(_))
            ));
        }
    }
}
