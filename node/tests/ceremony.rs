//! Threshold ceremonies among in-process parties: messages are passed by hand, as the Quasar
//! service would gossip them, so every path (completion, a silent member, a refused claim,
//! hostile messages) is driven deterministically.

use std::collections::{HashSet, VecDeque};

use quasar_crypto::hash::Hash;
use quasar_crypto::{corona, pulsar};
use quasar_node::ceremony::{
    Action, Ceremony, CoronaParty, MessageRefused, PulsarParty, Scheme, SessionId,
    ATTEMPT_TIMEOUT_US,
};
use quasar_wire::LaneKind;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CHAIN: u64 = 7;
const EPOCH: u64 = 0;
const BUNDLE: u64 = 4;

/// A message in flight: (from, height, kind, session, payload).
type Wire = (u32, u64, LaneKind, SessionId, Vec<u8>);

struct Net<S: Scheme> {
    nodes: Vec<Ceremony<S>>,
    /// Node i's validator index (i itself unless the key is a committee's).
    ids: Vec<u32>,
    used: Vec<HashSet<SessionId>>,
    /// Parties whose messages are dropped (offline).
    silent: HashSet<u32>,
    queue: VecDeque<Wire>,
    legs: Vec<(usize, u64, Vec<u8>, u32)>,
    other: Vec<Action>,
}

impl<S: Scheme> Net<S> {
    fn new(nodes: Vec<Ceremony<S>>) -> Self {
        let n = nodes.len();
        Net {
            ids: (0..n as u32).collect(),
            nodes,
            used: vec![HashSet::new(); n],
            silent: HashSet::new(),
            queue: VecDeque::new(),
            legs: Vec::new(),
            other: Vec::new(),
        }
    }

    fn absorb(&mut self, from: usize, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Send {
                    height,
                    kind,
                    session,
                    payload,
                } => {
                    let id = self.ids[from];
                    if !self.silent.contains(&id) {
                        self.queue.push_back((id, height, kind, session, payload));
                    }
                }
                Action::Leg {
                    height,
                    body,
                    attempt,
                    ..
                } => self.legs.push((from, height, body, attempt)),
                other => self.other.push(other),
            }
        }
    }

    fn close(&mut self, height: u64, digest: Hash, now: u64) {
        for i in 0..self.nodes.len() {
            let used = &mut self.used[i];
            let mut claim = |_: u64, id: &SessionId| used.insert(*id);
            let actions = self.nodes[i].on_closed(height, digest, now, &mut claim);
            self.absorb(i, actions);
        }
    }

    fn tick(&mut self, now: u64) {
        for i in 0..self.nodes.len() {
            let used = &mut self.used[i];
            let mut claim = |_: u64, id: &SessionId| used.insert(*id);
            let actions = self.nodes[i].on_tick(now, &mut claim);
            self.absorb(i, actions);
        }
    }

    /// Delivers every queued message to every other node until the queue is empty.
    fn deliver(&mut self, now: u64) {
        while let Some((from, height, kind, session, payload)) = self.queue.pop_front() {
            for i in 0..self.nodes.len() {
                if self.ids[i] == from {
                    continue;
                }
                let used = &mut self.used[i];
                let mut claim = |_: u64, id: &SessionId| used.insert(*id);
                let result = self.nodes[i].on_message(
                    now,
                    height,
                    from,
                    kind,
                    &session,
                    payload.clone(),
                    &mut claim,
                );
                match result {
                    Ok(actions) => self.absorb(i, actions),
                    // The precomputed next bundle is not kept by a node that has not closed
                    // the current one; the service holds such messages until it does.
                    Err(MessageRefused::UnknownBundle(_)) => {}
                    Err(e) => panic!("honest message refused by {i}: {e}"),
                }
            }
        }
    }
}

fn digest(byte: u8) -> Hash {
    [byte; 32]
}

fn corona_net(n: usize, t: usize, seed: u64) -> (corona::scheme::GroupKey, Net<CoronaParty>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (group, shares) = corona::scheme::trusted_dealer_keygen(t, n, &mut rng).unwrap();
    let nodes = shares
        .into_iter()
        .map(|s| {
            Ceremony::new(
                CoronaParty::new(group.clone(), t, n, Some(s)),
                CHAIN,
                EPOCH,
                BUNDLE,
            )
        })
        .collect();
    (group, Net::new(nodes))
}

fn pulsar_net(n: usize, t: usize, seed: u64) -> (pulsar::GroupKey, Net<PulsarParty>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (group, shares) = pulsar::trusted_dealer_keygen(t, n, &mut rng).unwrap();
    let nodes = shares
        .into_iter()
        .map(|s| {
            Ceremony::new(
                PulsarParty::new(group.clone(), Some(s)),
                CHAIN,
                EPOCH,
                BUNDLE,
            )
        })
        .collect();
    (group, Net::new(nodes))
}

fn corona_verifies(group: &corona::scheme::GroupKey, message: &Hash, body: &[u8]) -> bool {
    let signature = corona::scheme::Signature::from_bytes(body).unwrap();
    group.verify(message, &signature).is_ok()
}

fn pulsar_verifies(group: &pulsar::GroupKey, message: &Hash, body: &[u8]) -> bool {
    quasar_lanes::pulsar::verify_leg(group.public_key(), message, body).is_ok()
}

#[test]
fn corona_bundle_signed_by_every_node_and_round1_runs_ahead() {
    let (group, mut net) = corona_net(4, 3, 1);
    net.close(BUNDLE, digest(1), 0);
    // Round 1 went out for this bundle and, ahead, for the next one.
    let heights: HashSet<u64> = net.queue.iter().map(|m| m.1).collect();
    assert_eq!(heights, HashSet::from([BUNDLE, 2 * BUNDLE]));
    net.deliver(1);
    // Every node combined the same-message leg itself, from attempt 0.
    let mine: Vec<_> = net.legs.iter().filter(|l| l.1 == BUNDLE).collect();
    assert_eq!(mine.len(), 4, "{:?}", net.other);
    for (_, _, body, attempt) in &mine {
        assert_eq!(*attempt, 0);
        assert!(corona_verifies(&group, &digest(1), body));
    }
    // The next bundle only needs round 2 once it closes: its round-1 messages are held.
    net.legs.clear();
    net.close(2 * BUNDLE, digest(2), 2);
    let kinds: HashSet<LaneKind> = net
        .queue
        .iter()
        .filter(|m| m.1 == 2 * BUNDLE)
        .map(|m| m.2)
        .collect();
    assert_eq!(kinds, HashSet::from([LaneKind::CoronaRound2]));
    net.deliver(3);
    let next: Vec<_> = net.legs.iter().filter(|l| l.1 == 2 * BUNDLE).collect();
    assert_eq!(next.len(), 4);
    assert!(next
        .iter()
        .all(|l| corona_verifies(&group, &digest(2), &l.2)));
}

#[test]
fn corona_silent_member_is_left_behind_by_the_next_attempt() {
    let (group, mut net) = corona_net(4, 3, 2);
    // Attempt 0 of bundle 4 uses parties from (4/4 + 0) mod 4 = 1: {1, 2, 3}.
    assert_eq!(net.nodes[0].signing_set(BUNDLE, 0), vec![1, 2, 3]);
    net.silent.insert(3);
    net.close(BUNDLE, digest(3), 0);
    net.deliver(1);
    assert!(net.legs.iter().all(|l| l.1 != BUNDLE));
    // Attempts rotate until a set without party 3 ({0, 1, 2}, attempt 3) signs.
    let mut now = 1;
    for _ in 0..4 {
        now += ATTEMPT_TIMEOUT_US;
        net.tick(now);
        net.deliver(now);
    }
    let legs: Vec<_> = net.legs.iter().filter(|l| l.1 == BUNDLE).collect();
    assert!(!legs.is_empty());
    for (_, _, body, attempt) in legs {
        assert_eq!(*attempt, 3);
        assert!(corona_verifies(&group, &digest(3), body));
    }
}

#[test]
fn a_refused_claim_sits_the_attempt_out() {
    let (_, mut net) = corona_net(4, 3, 3);
    // Party 1 restarted after using attempt 0's session: it must not answer it again.
    let id = net.nodes[1].session_id(BUNDLE, 0);
    net.used[1].insert(id);
    net.close(BUNDLE, digest(4), 0);
    let senders: HashSet<u32> = net
        .queue
        .iter()
        .filter(|m| m.1 == BUNDLE)
        .map(|m| m.0)
        .collect();
    assert_eq!(senders, HashSet::from([2, 3]));
    net.deliver(1);
    assert!(net.legs.iter().all(|l| l.1 != BUNDLE));
}

#[test]
fn hostile_messages_are_refused() {
    let (_, mut net) = corona_net(4, 3, 4);
    net.close(BUNDLE, digest(5), 0);
    let (from, height, kind, session, payload) =
        net.queue.iter().find(|m| m.1 == BUNDLE).cloned().unwrap();
    let mut claim = |_: u64, _: &SessionId| true;
    let node = &mut net.nodes[0];
    // Wrong kind for the scheme.
    let refused = node.on_message(
        1,
        height,
        from,
        LaneKind::PulsarRound1,
        &session,
        payload.clone(),
        &mut claim,
    );
    assert_eq!(refused, Err(MessageRefused::WrongKind));
    // A session id of no attempt.
    let refused = node.on_message(1, height, from, kind, &[9; 32], payload.clone(), &mut claim);
    assert_eq!(refused, Err(MessageRefused::UnknownSession));
    // Party 0 is not in attempt 0's set {1, 2, 3}.
    let refused = node.on_message(1, height, 0, kind, &session, payload.clone(), &mut claim);
    assert_eq!(refused, Err(MessageRefused::NotMember(0)));
    // Another member relaying this party's message as its own.
    let other = if from == 1 { 2 } else { 1 };
    let refused = node.on_message(
        1,
        height,
        other,
        kind,
        &session,
        payload.clone(),
        &mut claim,
    );
    assert!(
        matches!(refused, Err(MessageRefused::Malformed(_))),
        "{refused:?}"
    );
    // Garbage.
    let refused = node.on_message(1, height, from, kind, &session, vec![1, 2, 3], &mut claim);
    assert!(matches!(refused, Err(MessageRefused::Malformed(_))));
    // A bundle this node does not sign.
    let refused = node.on_message(
        1,
        1000 * BUNDLE,
        from,
        kind,
        &session,
        payload.clone(),
        &mut claim,
    );
    assert_eq!(refused, Err(MessageRefused::UnknownBundle(1000 * BUNDLE)));
    // The genuine message, twice: the copy is ignored.
    assert!(node
        .on_message(1, height, from, kind, &session, payload.clone(), &mut claim)
        .is_ok());
    assert_eq!(
        node.on_message(1, height, from, kind, &session, payload, &mut claim),
        Ok(Vec::new())
    );
}

/// A set's Corona ceremonies end where the set does: the last bundle before the next set's
/// epochs is signed, but round 1 is not run ahead for a bundle the next set signs. Parties are
/// played by roster positions that are not in increasing order (a changed set).
#[test]
fn corona_does_not_run_ahead_past_the_sets_last_height() {
    let (group, mut net) = corona_net(3, 2, 9);
    let members = vec![4, 1, 2];
    net.nodes = std::mem::take(&mut net.nodes)
        .into_iter()
        .map(|c| c.with_members(members.clone()).unwrap().until(2 * BUNDLE))
        .collect();
    net.ids = members;
    net.close(BUNDLE, digest(1), 0);
    let heights: HashSet<u64> = net.queue.iter().map(|m| m.1).collect();
    assert_eq!(heights, HashSet::from([BUNDLE, 2 * BUNDLE]));
    net.deliver(1);
    net.close(2 * BUNDLE, digest(2), 2);
    let heights: HashSet<u64> = net.queue.iter().map(|m| m.1).collect();
    assert_eq!(heights, HashSet::from([2 * BUNDLE]), "nothing for 3k");
    net.deliver(3);
    let last: Vec<_> = net.legs.iter().filter(|l| l.1 == 2 * BUNDLE).collect();
    assert_eq!(last.len(), 3, "{:?}", net.other);
    assert!(last
        .iter()
        .all(|l| corona_verifies(&group, &digest(2), &l.2)));
}

#[test]
fn a_committee_key_is_signed_by_its_members_under_their_validator_indices() {
    let (group, mut net) = pulsar_net(3, 2, 6);
    let members = vec![2, 5, 9];
    net.nodes = std::mem::take(&mut net.nodes)
        .into_iter()
        .map(|c| c.with_members(members.clone()).unwrap())
        .collect();
    net.ids = members;
    net.close(BUNDLE, digest(7), BUNDLE);
    // Messages travel as the members' validators; a validator outside the committee is no
    // party, and neither is the index a member has as a party.
    let (from, height, kind, session, payload) = net.queue.front().cloned().unwrap();
    assert!([2, 5, 9].contains(&from));
    let mut claim = |_: u64, _: &SessionId| true;
    for outsider in [0, 1] {
        let refused = net.nodes[0].on_message(
            1,
            height,
            outsider,
            kind,
            &session,
            payload.clone(),
            &mut claim,
        );
        assert_eq!(refused, Err(MessageRefused::NotMember(outsider)));
    }
    net.deliver(BUNDLE);
    let legs: Vec<_> = net.legs.iter().filter(|l| l.1 == BUNDLE).collect();
    assert_eq!(legs.len(), 3, "{:?}", net.other);
    assert!(legs
        .iter()
        .all(|(_, _, body, _)| pulsar_verifies(&group, &digest(7), body)));
    // A committee must match the key's parties.
    let (_, net) = pulsar_net(3, 2, 6);
    let ceremony = net.nodes.into_iter().next().unwrap();
    assert!(ceremony.with_members(vec![1, 2]).is_err());
}

#[test]
fn pulsar_bundle_signed_with_restarts_as_standard_ml_dsa() {
    let (group, mut net) = pulsar_net(3, 2, 5);
    for (i, height) in [BUNDLE, 2 * BUNDLE, 3 * BUNDLE].into_iter().enumerate() {
        let d = digest(10 + i as u8);
        net.close(height, d, height);
        net.deliver(height);
        let legs: Vec<_> = net.legs.iter().filter(|l| l.1 == height).collect();
        assert_eq!(legs.len(), 3, "bundle {height}: {:?}", net.other);
        for (_, _, body, _) in &legs {
            assert!(pulsar_verifies(&group, &d, body));
        }
    }
    // Only restarts and no blame along the way.
    assert!(net
        .other
        .iter()
        .all(|a| matches!(a, Action::Failed { reason, .. } if reason.contains("restart"))));
}
