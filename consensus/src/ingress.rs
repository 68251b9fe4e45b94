//! Ingress: the one path from received bytes to core inputs (docs/architecture.md §1, "One
//! block's path", steps 2 and 3). The runtime (gossip, sync and relay replies), the simulator and
//! the fuzz harness all call [`Verifier::ingress`], so the simulator exercises the code a
//! validator runs on network bytes.
//!
//! Each message is decoded once (`quasar_wire::decode`, bounded readers that borrow the
//! buffer). Proposals, votes and certificates are verified into [`Input`]s: the votes of one call
//! together, in one randomized batch check ([`Verifier::verify_votes`]), the rest one by one.
//! Every other message comes back decoded for the part of the node that consumes it
//! (transactions for the mempool, lane messages and QuasarCerts for the Quasar leg service, sync
//! and relay traffic for their servers), which checks it itself.

use crate::core::Input;
use crate::verify::{Verifier, VerifyError};
use quasar_wire::{decode, MessageRef, WireError};

/// One received message after [`Verifier::ingress`]. A value lives for one dispatch and is never
/// stored in bulk, so the large [`Input`] is not boxed (as in [`Input`] itself).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Received<'a> {
    /// A proposal, vote or certificate that verified: a core input.
    Input(Input),
    /// A message that is not a consensus input (transactions, a lane message, a QuasarCert, a
    /// sync or relay request, a sync reply), decoded but not verified here.
    Other(MessageRef<'a>),
    /// The bytes are not a ZAP message.
    Malformed(WireError),
    /// A proposal, vote or certificate that does not verify.
    Invalid(VerifyError),
}

impl Verifier {
    /// Decodes each of `messages` once and verifies the consensus messages among them (module
    /// docs). Returns one [`Received`] per message, in the order given; borrowed parts of the
    /// answer point into `messages`.
    pub fn ingress<'a, B: AsRef<[u8]>>(&self, messages: &'a [B]) -> Vec<Received<'a>> {
        let mut received: Vec<Option<Received<'a>>> = Vec::with_capacity(messages.len());
        let mut votes = Vec::new();
        let mut vote_slots = Vec::new();
        for bytes in messages {
            let outcome = match decode(bytes.as_ref()) {
                Err(e) => Received::Malformed(e),
                Ok(MessageRef::Vote(vote)) => {
                    vote_slots.push(received.len());
                    votes.push(vote.to_owned());
                    received.push(None);
                    continue;
                }
                Ok(MessageRef::Proposal(proposal)) => verdict(
                    self.verify_proposal(proposal.to_owned())
                        .map(|p| Input::Proposal(Box::new(p))),
                ),
                Ok(MessageRef::Certificate(certificate)) => verdict(
                    self.verify_certificate(certificate.to_owned())
                        .map(Input::Certificate),
                ),
                Ok(other) => Received::Other(other),
            };
            received.push(Some(outcome));
        }
        for (slot, result) in vote_slots.into_iter().zip(self.verify_votes(votes)) {
            if let Some(entry) = received.get_mut(slot) {
                *entry = Some(verdict(result.map(Input::Vote)));
            }
        }
        received.into_iter().flatten().collect()
    }
}

fn verdict<'a>(result: Result<Input, VerifyError>) -> Received<'a> {
    match result {
        Ok(input) => Received::Input(input),
        Err(e) => Received::Invalid(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::BlockLimits;
    use crate::EpochSchedule;
    use quasar_crypto::bls::SecretKey;
    use quasar_lanes::{Validator, ValidatorSet};
    use quasar_wire::{EpochDomain, Message, TxBatch, Vote, VoteKind};
    use std::sync::Arc;

    const CHAIN: u64 = 7;

    fn key(i: u8) -> SecretKey {
        SecretKey::from_seed(&[i + 1; 32])
    }

    fn verifier() -> Verifier {
        let members = (0..4)
            .map(|i| Validator {
                public_key: key(i).public_key(),
                stake: 1,
            })
            .collect();
        Verifier::new(
            Arc::new(ValidatorSet::new(members).unwrap()),
            [0; 32],
            CHAIN,
            EpochSchedule::SINGLE,
            EpochDomain::default(),
            BlockLimits {
                max_txs: 4,
                max_bytes: 1024,
            },
        )
    }

    /// A notarize vote of `signer` for view 1, signed by `key(signed_by)`, encoded.
    fn vote(signer: u8, signed_by: u8) -> Vec<u8> {
        let mut vote = Vote {
            kind: VoteKind::Notarize,
            chain_id: CHAIN,
            epoch: 0,
            view: 1,
            height: 1,
            block: [9; 32],
            signer: u32::from(signer),
            signature: [0; 96],
        };
        let message = vote.signing_message(&EpochDomain::default());
        vote.signature = key(signed_by).sign(&message).to_bytes();
        Message::Vote(vote).encode().unwrap()
    }

    /// One call sorts a burst into verified inputs, refusals and the rest, in the order given:
    /// a vote signed by another key is refused among good ones (the batch check names it),
    /// garbage is malformed, and a transaction batch passes through decoded.
    #[test]
    fn a_burst_comes_back_in_order_each_message_judged() {
        let txs = Message::TxBatch(TxBatch {
            txs: vec![b"tx".to_vec()],
        })
        .encode()
        .unwrap();
        let burst = vec![vote(0, 0), b"not zap".to_vec(), vote(1, 2), txs, vote(3, 3)];
        let received = verifier().ingress(&burst);
        assert_eq!(received.len(), 5);
        assert!(matches!(&received[0], Received::Input(Input::Vote(v)) if v.vote().signer == 0));
        assert!(matches!(received[1], Received::Malformed(_)));
        assert!(
            matches!(received[2], Received::Invalid(_)),
            "{:?}",
            received[2]
        );
        assert!(
            matches!(&received[3], Received::Other(MessageRef::TxBatch(b)) if b.txs().count() == 1)
        );
        assert!(matches!(&received[4], Received::Input(Input::Vote(v)) if v.vote().signer == 3));
    }

    /// A lone vote takes the plain signature check instead of the batch: a forged one is refused
    /// with the same error, a good one accepted.
    #[test]
    fn a_lone_vote_is_judged_as_in_a_batch() {
        let forged = [vote(1, 2)];
        assert!(matches!(
            verifier().ingress(&forged)[..],
            [Received::Invalid(VerifyError::Signature(
                quasar_crypto::bls::BlsError::InvalidSignature
            ))]
        ));
        let good = [vote(1, 1)];
        assert!(matches!(
            verifier().ingress(&good)[..],
            [Received::Input(Input::Vote(_))]
        ));
    }

    /// A vote of a signer outside the set is refused before any signature check.
    #[test]
    fn a_vote_of_an_unknown_signer_is_invalid() {
        let burst = [vote(9, 0)];
        let received = verifier().ingress(&burst);
        assert!(matches!(
            received[..],
            [Received::Invalid(VerifyError::UnknownValidator(9))]
        ));
    }
}
