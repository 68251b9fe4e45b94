//! Threshold signing ceremonies for the Corona and Pulsar legs (docs/architecture.md §3, issue 8: "Corona
//! runs in epoch mode … retries with a fresh session id if a ceremony fails").
//!
//! One [`Ceremony`] per scheme runs every bundle's signing rounds among the validators over
//! [`quasar_wire::LaneMessage`] gossip. It is pure (no I/O, no clock) except for a party whose
//! share lives in the validator's thresholdd ([`RemoteParty`], `signer = "remote"`), whose rounds
//! are blocking calls to the daemon. The Quasar service feeds
//! it closed bundles, peers' messages and the time, and carries out the [`Action`]s it returns
//! (broadcast a message, attach a finished leg, report a misbehaving party).
//!
//! # How a bundle is signed
//!
//! - Party p of the threshold key is validator p: a key of n parties serves a set of n
//!   validators; or, for a committee ([`Ceremony::with_members`]: a Pulsar key of at most 6
//!   parties serving a larger set), party p is the committee's p-th member.
//! - Attempt a of the bundle closing at height h uses the signing set of t consecutive parties
//!   starting at (h / k + a) mod n (k the bundle size), so consecutive bundles and consecutive
//!   attempts rotate the set, and a set with an offline member is left behind by the next
//!   attempt. Its session id is `tagged_hash("QUASAR-CEREMONY-SESSION-v1"; leg,
//!   chain, epoch, h, a)`: fresh for every (bundle, attempt), the same at every party.
//! - Each member sends its round-1 message, then each later round's message once it holds the
//!   previous round's message of every member. Every node collects every message, so every node
//!   combines the leg itself once the last round is complete; nothing waits for a coordinator.
//! - Corona's round 1 does not depend on the message: when bundle h closes, the members of the
//!   next bundle's first signing set already run and send round 1 for it ("round 1 precomputed
//!   ahead"), so a bundle's Corona signature costs one network round after it closes.
//! - An attempt that has not combined within [`ATTEMPT_TIMEOUT_US`] is followed by the next one
//!   (fresh session, next set); so is an attempt that combines to a restart (Pulsar's rejection
//!   sampling) or to an invalid signature. After [`MAX_ATTEMPTS`] the bundle is given up: it
//!   keeps the finality tier it reached, as for any missing leg.
//! - A party never answers two sessions with one id: before its round 1 it asks the caller to
//!   claim the id durably ([`Claim`]), and a refused claim (an id used before a restart) makes it
//!   sit the attempt out.
//!
//! Messages are bounded: one per (attempt, round, party), for attempts below [`MAX_ATTEMPTS`] of
//! bundles the caller keeps, each checked against the scheme's decoder and the signing set
//! before it is held.

use std::collections::BTreeMap;

use crate::remote_signer::{RemoteClient, RemoteSignError};
use quasar_crypto::hash::{tagged_hash, Hash};
use quasar_crypto::{corona, pulsar};
use quasar_lanes::CERT_CONTEXT;
use quasar_wire::{LaneKind, LegKind};
use rand::rngs::OsRng;
use thiserror::Error;

/// Attempts per bundle before it is given up.
pub const MAX_ATTEMPTS: u32 = 32;

/// How long an attempt may run before the next one starts, µs.
pub const ATTEMPT_TIMEOUT_US: u64 = 4_000_000;

/// Attempts beyond a bundle's current one whose messages are held (peers whose attempt timed
/// out a little earlier).
pub const AHEAD: u32 = 1;

/// Domain tag of ceremony session ids.
const SESSION_TAG: &str = "QUASAR-CEREMONY-SESSION-v1";

/// A 32-byte ceremony session id.
pub type SessionId = [u8; 32];

/// Durably records that this party uses session id `id` of the bundle closing at `height`
/// (arguments `(height, id)`); `false` when it was used before (then the party must not take
/// part in that session).
pub type Claim<'a> = &'a mut dyn FnMut(u64, &SessionId) -> bool;

/// Why a scheme step failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StepError {
    /// Pulsar's rejection sampling found no usable attempt: run a fresh session.
    #[error("no attempt of the session was accepted: restart")]
    Restart,
    /// A party's message is wrong (blame it).
    #[error("party {party}: {reason}")]
    Misbehaved {
        /// The party at fault.
        party: u16,
        /// What it did.
        reason: String,
    },
    /// The session failed without a culprit.
    #[error("{0}")]
    Failed(String),
}

/// One threshold scheme as the ceremony drives it: `ROUNDS` rounds of one broadcast message per
/// signer, then a public combination of all of them.
pub trait Scheme {
    /// The leg the scheme produces.
    const LEG: LegKind;
    /// The lane kinds of the rounds' messages, in round order.
    const KINDS: &'static [LaneKind];
    /// Whether round 1 may run before the bundle digest is known (Corona: yes).
    const ROUND1_WITHOUT_MESSAGE: bool;
    /// A signer's secret state between two of its rounds.
    type State;

    /// t: members of a signing set.
    fn threshold(&self) -> usize;
    /// n: parties of the key.
    fn parties(&self) -> usize;
    /// This node's party index, when it holds a share.
    fn party(&self) -> Option<u16>;
    /// Round 1 of this party in `session` with signing set `set` (increasing). `message` is the
    /// bundle digest, `None` before it is known (only if [`Scheme::ROUND1_WITHOUT_MESSAGE`]).
    fn round1(
        &mut self,
        session: &SessionId,
        set: &[u16],
        message: Option<&Hash>,
    ) -> Result<(Vec<u8>, Self::State), StepError>;
    /// The next round (`round` ≥ 2) from the state and every member's messages of the previous
    /// round (in set order): this party's message and, unless it was the last round, its state.
    fn next_round(
        &mut self,
        round: usize,
        state: Self::State,
        message: &Hash,
        previous: &[&[u8]],
    ) -> Result<(Vec<u8>, Option<Self::State>), StepError>;
    /// Checks that `bytes` decode as `party`'s message of `round` (1-based) in `session`.
    fn check(
        &self,
        round: usize,
        party: u16,
        session: &SessionId,
        bytes: &[u8],
    ) -> Result<(), String>;
    /// Combines every round's messages (`rounds[r][i]`: member i's message of round r + 1) into
    /// the leg body, verified.
    fn combine(
        &self,
        session: &SessionId,
        set: &[u16],
        message: &Hash,
        rounds: &[Vec<&[u8]>],
    ) -> Result<Vec<u8>, StepError>;
}

/// What the caller must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Broadcast this party's message.
    Send {
        /// The bundle's closing height.
        height: u64,
        /// The round's lane kind.
        kind: LaneKind,
        /// The session id.
        session: SessionId,
        /// The encoded round message.
        payload: Vec<u8>,
    },
    /// A finished leg for the bundle.
    Leg {
        /// The bundle's closing height.
        height: u64,
        /// The leg body.
        body: Vec<u8>,
        /// The attempt that produced it (0-based).
        attempt: u32,
        /// This party is the first member of the set that signed: it also gossips the leg, for
        /// nodes that missed some of the rounds' messages.
        gossip: bool,
    },
    /// A party misbehaved (a malformed or conflicting message, a bad contribution).
    Blame {
        /// The bundle's closing height.
        height: u64,
        /// The party's validator index.
        validator: u32,
        /// What it did.
        reason: String,
    },
    /// A session failed without a leg; the next attempt follows.
    Failed {
        /// The bundle's closing height.
        height: u64,
        /// The attempt that failed.
        attempt: u32,
        /// Why.
        reason: String,
    },
}

/// Why a peer's message was not taken (nothing is held; the caller may count it).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MessageRefused {
    /// No bundle closing at this height is being signed here.
    #[error("no ceremony for the bundle closing at {0}")]
    UnknownBundle(u64),
    /// The lane kind is not one of this scheme's rounds.
    #[error("not a round of this scheme")]
    WrongKind,
    /// The session id is none of the bundle's attempts.
    #[error("unknown session")]
    UnknownSession,
    /// The sender is not a member of the attempt's signing set.
    #[error("validator {0} is not in the signing set")]
    NotMember(u32),
    /// The sender already sent a different message for this round.
    #[error("validator {0} sent two different messages for one round")]
    Conflicting(u32),
    /// The bytes do not decode as the round's message.
    #[error("malformed round message: {0}")]
    Malformed(String),
}

struct Session<St> {
    id: SessionId,
    set: Vec<u16>,
    /// `messages[r]`: round r + 1's messages by party.
    messages: Vec<BTreeMap<u16, Vec<u8>>>,
    /// This party's state after the rounds it has sent (`None` when not a member or finished).
    state: Option<St>,
    /// Rounds this party has sent.
    sent: usize,
    /// Combined or failed.
    over: bool,
}

struct Bundle<St> {
    digest: Option<Hash>,
    attempt: u32,
    attempt_started_us: u64,
    sessions: BTreeMap<u32, Session<St>>,
    done: bool,
}

/// The ceremonies of one scheme for the bundles the caller keeps (module docs).
pub struct Ceremony<S: Scheme> {
    scheme: S,
    /// Party p's validator index (p itself unless a committee was given).
    members: Vec<u32>,
    chain_id: u64,
    epoch: u64,
    bundle_size: u64,
    /// The last height whose bundle these ceremonies sign (the key's validator set ends there).
    last_height: u64,
    bundles: BTreeMap<u64, Bundle<S::State>>,
    /// The latest time the caller gave, µs.
    now_us: u64,
}

impl<S: Scheme> Ceremony<S> {
    /// Ceremonies of `scheme` for chain `chain_id`, epoch `epoch`, bundles of `bundle_size`
    /// blocks (at least 1).
    pub fn new(scheme: S, chain_id: u64, epoch: u64, bundle_size: u64) -> Self {
        let members = (0..scheme.parties() as u32).collect();
        Ceremony {
            scheme,
            members,
            chain_id,
            epoch,
            bundle_size: bundle_size.max(1),
            last_height: u64::MAX,
            bundles: BTreeMap::new(),
            now_us: 0,
        }
    }

    /// The same ceremonies with party p played by validator `members[p]` (a committee, in
    /// increasing validator order, with one member per party of the key). Errors: a member
    /// count that is not the key's party count.
    pub fn with_members(mut self, members: Vec<u32>) -> Result<Self, String> {
        if members.len() != self.scheme.parties() {
            return Err(format!(
                "{} committee members for a key of {} parties",
                members.len(),
                self.scheme.parties()
            ));
        }
        self.members = members;
        Ok(self)
    }

    /// The same ceremonies for the bundles closing up to `last_height` only (where the key's
    /// validator set hands over to the next): round 1 is not run ahead past it.
    pub fn until(mut self, last_height: u64) -> Self {
        self.last_height = last_height;
        self
    }

    /// The session id of `attempt` for the bundle closing at `height`.
    pub fn session_id(&self, height: u64, attempt: u32) -> SessionId {
        tagged_hash(
            SESSION_TAG,
            &[
                &[S::LEG as u8],
                &self.chain_id.to_le_bytes(),
                &self.epoch.to_le_bytes(),
                &height.to_le_bytes(),
                &attempt.to_le_bytes(),
            ],
        )
    }

    /// The signing set of `attempt` for the bundle closing at `height`: t consecutive parties
    /// from (height / k + attempt) mod n, increasing.
    pub fn signing_set(&self, height: u64, attempt: u32) -> Vec<u16> {
        let n = self.scheme.parties().max(1) as u64;
        let t = self.scheme.threshold() as u64;
        let start = (height / self.bundle_size + u64::from(attempt)) % n;
        let mut set: Vec<u16> = (0..t).map(|i| ((start + i) % n) as u16).collect();
        set.sort_unstable();
        set
    }

    /// Whether `session` is the id of one of the first [`AHEAD`] + 1 attempts of the bundle
    /// closing at `height`: the sessions worth holding for a bundle not closed here yet.
    pub fn is_early_session(&self, height: u64, session: &SessionId) -> bool {
        (0..=AHEAD).any(|a| self.session_id(height, a) == *session)
    }

    /// The bundles with a ceremony in progress or finished and not yet forgotten.
    pub fn heights(&self) -> Vec<u64> {
        self.bundles.keys().copied().collect()
    }

    /// The bundle closing at `height` closed with `digest`: starts (or continues) its attempt 0,
    /// and for a scheme whose round 1 does not need the digest, runs round 1 ahead for the next
    /// bundle (closing at `height` + k) unless that is past [`Ceremony::until`].
    pub fn on_closed(
        &mut self,
        height: u64,
        digest: Hash,
        now_us: u64,
        claim: Claim<'_>,
    ) -> Vec<Action> {
        let mut actions = Vec::new();
        self.now_us = self.now_us.max(now_us);
        self.bundle(height, now_us).digest = Some(digest);
        self.ensure_session(height, 0, claim, &mut actions);
        let next = height.saturating_add(self.bundle_size);
        if S::ROUND1_WITHOUT_MESSAGE && next <= self.last_height {
            self.bundle(next, now_us);
            self.ensure_session(next, 0, claim, &mut actions);
        }
        self.progress(height, claim, &mut actions);
        actions
    }

    /// A peer's round message (`from` is the sending validator, authenticated by the transport)
    /// at time `now_us`. Messages are held for the bundle's current attempt and the next
    /// [`AHEAD`] ones. Errors: [`MessageRefused`] (the message is dropped).
    #[allow(clippy::too_many_arguments)]
    pub fn on_message(
        &mut self,
        now_us: u64,
        height: u64,
        from: u32,
        kind: LaneKind,
        session: &SessionId,
        payload: Vec<u8>,
        claim: Claim<'_>,
    ) -> Result<Vec<Action>, MessageRefused> {
        let round = S::KINDS
            .iter()
            .position(|k| *k == kind)
            .ok_or(MessageRefused::WrongKind)?
            + 1;
        self.now_us = self.now_us.max(now_us);
        let current = self
            .bundles
            .get(&height)
            .ok_or(MessageRefused::UnknownBundle(height))?
            .attempt;
        let attempt = (current..MAX_ATTEMPTS.min(current.saturating_add(AHEAD + 1)))
            .find(|&a| self.session_id(height, a) == *session)
            .ok_or(MessageRefused::UnknownSession)?;
        let set = self.signing_set(height, attempt);
        let party = self
            .members
            .iter()
            .position(|&v| v == from)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| set.contains(p))
            .ok_or(MessageRefused::NotMember(from))?;
        self.scheme
            .check(round, party, session, &payload)
            .map_err(MessageRefused::Malformed)?;
        let id = *session;
        let bundle = self
            .bundles
            .get_mut(&height)
            .ok_or(MessageRefused::UnknownBundle(height))?;
        let entry = bundle.sessions.entry(attempt).or_insert_with(|| Session {
            id,
            set,
            messages: vec![BTreeMap::new(); S::KINDS.len()],
            state: None,
            sent: 0,
            over: false,
        });
        let slot = entry
            .messages
            .get_mut(round - 1)
            .ok_or(MessageRefused::WrongKind)?;
        match slot.get(&party) {
            Some(held) if *held == payload => return Ok(Vec::new()),
            Some(_) => return Err(MessageRefused::Conflicting(from)),
            None => {
                slot.insert(party, payload);
            }
        }
        let mut actions = Vec::new();
        self.progress(height, claim, &mut actions);
        Ok(actions)
    }

    /// Moves every unfinished bundle whose attempt timed out to its next attempt.
    pub fn on_tick(&mut self, now_us: u64, claim: Claim<'_>) -> Vec<Action> {
        let mut actions = Vec::new();
        self.now_us = self.now_us.max(now_us);
        let due: Vec<u64> = self
            .bundles
            .iter()
            .filter(|(_, b)| {
                !b.done
                    && b.digest.is_some()
                    && now_us.saturating_sub(b.attempt_started_us) >= ATTEMPT_TIMEOUT_US
            })
            .map(|(&h, _)| h)
            .collect();
        for height in due {
            self.next_attempt(height, now_us, claim, &mut actions);
        }
        actions
    }

    /// Forgets every bundle for which `keep` is false.
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        self.bundles.retain(|&h, _| keep(h));
    }

    fn bundle(&mut self, height: u64, now_us: u64) -> &mut Bundle<S::State> {
        self.bundles.entry(height).or_insert_with(|| Bundle {
            digest: None,
            attempt: 0,
            attempt_started_us: now_us,
            sessions: BTreeMap::new(),
            done: false,
        })
    }

    fn next_attempt(
        &mut self,
        height: u64,
        now_us: u64,
        claim: Claim<'_>,
        actions: &mut Vec<Action>,
    ) {
        let Some(bundle) = self.bundles.get_mut(&height) else {
            return;
        };
        if bundle.done {
            return;
        }
        if bundle.attempt + 1 >= MAX_ATTEMPTS {
            bundle.done = true;
            actions.push(Action::Failed {
                height,
                attempt: bundle.attempt,
                reason: format!("gave up after {MAX_ATTEMPTS} attempts"),
            });
            return;
        }
        bundle.attempt += 1;
        bundle.attempt_started_us = now_us;
        let attempt = bundle.attempt;
        self.ensure_session(height, attempt, claim, actions);
        self.progress(height, claim, actions);
    }

    /// Creates attempt `attempt`'s session of a kept bundle and, if this party is a member and
    /// round 1 can run, runs and sends it.
    fn ensure_session(
        &mut self,
        height: u64,
        attempt: u32,
        claim: Claim<'_>,
        actions: &mut Vec<Action>,
    ) {
        let id = self.session_id(height, attempt);
        let set = self.signing_set(height, attempt);
        let me = self.scheme.party().filter(|p| set.contains(p));
        let Some(bundle) = self.bundles.get_mut(&height) else {
            return;
        };
        let digest = bundle.digest;
        let session = bundle.sessions.entry(attempt).or_insert_with(|| Session {
            id,
            set: set.clone(),
            messages: vec![BTreeMap::new(); S::KINDS.len()],
            state: None,
            sent: 0,
            over: false,
        });
        let Some(me) = me else {
            return;
        };
        if session.sent > 0 || (digest.is_none() && !S::ROUND1_WITHOUT_MESSAGE) {
            return;
        }
        // Marked as sent before claiming, so a refused claim sits the attempt out for good.
        session.sent = 1;
        if !claim(height, &id) {
            return;
        }
        match self.scheme.round1(&id, &set, digest.as_ref()) {
            Ok((payload, state)) => {
                session.state = Some(state);
                if let (Some(kind), Some(slot)) = (S::KINDS.first(), session.messages.first_mut()) {
                    slot.insert(me, payload.clone());
                    actions.push(Action::Send {
                        height,
                        kind: *kind,
                        session: id,
                        payload,
                    });
                }
            }
            Err(error) => actions.push(Action::Failed {
                height,
                attempt,
                reason: format!("round 1: {error}"),
            }),
        }
    }

    /// Runs whatever the held messages allow for the bundle closing at `height`: this party's
    /// next rounds, and the combination of complete sessions.
    fn progress(&mut self, height: u64, claim: Claim<'_>, actions: &mut Vec<Action>) {
        let Some(bundle) = self.bundles.get(&height) else {
            return;
        };
        let Some(digest) = bundle.digest else {
            return;
        };
        if bundle.done {
            return;
        }
        // A session whose round 1 waited for the digest (Pulsar) starts now.
        let current = bundle.attempt;
        self.ensure_session(height, current, claim, actions);
        let me = self.scheme.party();
        let attempts: Vec<u32> = self
            .bundles
            .get(&height)
            .map(|b| b.sessions.keys().copied().collect())
            .unwrap_or_default();
        let mut restart = false;
        for attempt in attempts {
            let Some(session) = self
                .bundles
                .get_mut(&height)
                .and_then(|b| b.sessions.get_mut(&attempt))
            else {
                continue;
            };
            // This party's later rounds.
            while let (Some(me), Some(state)) = (me, session.state.take()) {
                let round = session.sent + 1;
                let held = session
                    .sent
                    .checked_sub(1)
                    .and_then(|r| session.messages.get(r));
                let previous = match held {
                    Some(held) if held.len() == session.set.len() => held,
                    _ => {
                        session.state = Some(state);
                        break;
                    }
                };
                let previous: Vec<&[u8]> = previous.values().map(Vec::as_slice).collect();
                match self.scheme.next_round(round, state, &digest, &previous) {
                    Ok((payload, state)) => {
                        session.state = state;
                        session.sent = round;
                        if let (Some(kind), Some(slot)) =
                            (S::KINDS.get(round - 1), session.messages.get_mut(round - 1))
                        {
                            slot.insert(me, payload.clone());
                            actions.push(Action::Send {
                                height,
                                kind: *kind,
                                session: session.id,
                                payload,
                            });
                        }
                    }
                    Err(error) => {
                        session.over = true;
                        report(&self.members, height, attempt, error, actions);
                        restart |= attempt == current;
                        break;
                    }
                }
            }
            // Combination once every round is complete.
            let complete = session
                .messages
                .iter()
                .all(|round| round.len() == session.set.len());
            if session.over || !complete {
                continue;
            }
            session.over = true;
            let rounds: Vec<Vec<&[u8]>> = session
                .messages
                .iter()
                .map(|round| round.values().map(Vec::as_slice).collect())
                .collect();
            match self
                .scheme
                .combine(&session.id, &session.set, &digest, &rounds)
            {
                Ok(body) => {
                    actions.push(Action::Leg {
                        height,
                        body,
                        attempt,
                        gossip: session.set.first().copied() == me,
                    });
                    if let Some(bundle) = self.bundles.get_mut(&height) {
                        bundle.done = true;
                        bundle.sessions.clear();
                    }
                    return;
                }
                Err(error) => {
                    report(&self.members, height, attempt, error, actions);
                    restart |= attempt == current;
                }
            }
        }
        if restart {
            self.next_attempt(height, self.now_us, claim, actions);
        }
    }
}

/// Reports a failed step: a misbehaving party (as its validator, through `members`) or a
/// failed attempt.
fn report(members: &[u32], height: u64, attempt: u32, error: StepError, actions: &mut Vec<Action>) {
    match error {
        StepError::Misbehaved { party, reason } => actions.push(Action::Blame {
            height,
            validator: members
                .get(usize::from(party))
                .copied()
                .unwrap_or(u32::from(party)),
            reason,
        }),
        other => actions.push(Action::Failed {
            height,
            attempt,
            reason: other.to_string(),
        }),
    }
}

/// Checks a decoded round message's claimed sender against the validator that sent it and its
/// session (when the message carries one) against the expected one.
fn check_origin(
    sender: u16,
    party: u16,
    session: Option<SessionId>,
    expected: &SessionId,
) -> Result<(), String> {
    if sender != party {
        return Err(format!("sent as party {sender}"));
    }
    if session.is_some_and(|id| id != *expected) {
        return Err("another session".into());
    }
    Ok(())
}

/// A party whose share lives in the validator's thresholdd (`signer = "remote"`; imported with
/// `thresholdd keys import-validator`): its rounds are the daemon's `<scheme>.round…` methods,
/// which keep the secret state between rounds and refuse a session id used before.
pub struct RemoteParty {
    client: RemoteClient,
    party: u16,
    /// The key as the daemon names it (`pubKeyHex`).
    key_hex: String,
}

impl RemoteParty {
    /// Party `party` of the key the daemon names `public_key` (Corona: the group key's bytes;
    /// Pulsar: the FIPS 204 public key), through `client`.
    pub fn new(client: RemoteClient, party: u16, public_key: &[u8]) -> Self {
        RemoteParty {
            client,
            party,
            key_hex: hex::encode(public_key),
        }
    }

    /// Round method `method` of this party in `session` with `fields` added to the key, party
    /// and session; the bytes of hex field `reply` of its result. Errors: [`StepError::Failed`]
    /// naming the daemon's error.
    fn round(
        &self,
        method: &'static str,
        session: &SessionId,
        fields: serde_json::Value,
        reply: &str,
    ) -> Result<Vec<u8>, StepError> {
        let mut params = serde_json::json!({
            "pubKeyHex": self.key_hex,
            "party": self.party,
            "sessionHex": hex::encode(session),
        });
        if let (Some(params), serde_json::Value::Object(fields)) = (params.as_object_mut(), fields)
        {
            params.extend(fields);
        }
        let started = std::time::Instant::now();
        let answer = self.client.round(method, params, reply);
        tracing::debug!(
            method,
            party = self.party,
            ms = started.elapsed().as_secs_f64() * 1e3,
            ok = answer.is_ok(),
            "thresholdd round"
        );
        answer.map_err(|e: RemoteSignError| StepError::Failed(format!("thresholdd {method}: {e}")))
    }
}

/// The hex of each message, for a round method's list parameter.
fn hex_list(messages: &[&[u8]]) -> Vec<String> {
    messages.iter().map(hex::encode).collect()
}

/// Where a Corona party's share signs.
enum CoronaSigner {
    Local(Box<corona::scheme::Signer>),
    Remote(RemoteParty),
}

/// A Corona party's state between its rounds: the local signer's, or the session whose state
/// the daemon holds.
pub enum CoronaState {
    /// After a local round 1.
    Local(corona::scheme::Round1State),
    /// After a remote round 1 in this session.
    Remote(SessionId),
}

/// Corona (module docs of `quasar_crypto::corona`) as a [`Scheme`]: two rounds, round 1
/// independent of the message; the leg is the compact signature on the bundle digest.
pub struct CoronaParty {
    group: corona::scheme::GroupKey,
    threshold: usize,
    parties: usize,
    signer: Option<CoronaSigner>,
}

impl CoronaParty {
    /// A party of `group`'s key holding `share` (`None`: this node only collects and combines).
    /// `threshold` and `parties` are the key's shape (a share carries them too).
    pub fn new(
        group: corona::scheme::GroupKey,
        threshold: usize,
        parties: usize,
        share: Option<corona::scheme::KeyShare>,
    ) -> Self {
        CoronaParty {
            group,
            threshold,
            parties,
            signer: share
                .map(|share| CoronaSigner::Local(Box::new(corona::scheme::Signer::new(share)))),
        }
    }

    /// A party of `group`'s t-of-n key whose share is in the validator's thresholdd.
    pub fn remote(
        group: corona::scheme::GroupKey,
        threshold: usize,
        parties: usize,
        remote: RemoteParty,
    ) -> Self {
        CoronaParty {
            group,
            threshold,
            parties,
            signer: Some(CoronaSigner::Remote(remote)),
        }
    }

    fn set(&self, set: &[u16]) -> Result<corona::scheme::SigningSet, StepError> {
        corona::scheme::SigningSet::new(set, self.threshold, self.parties)
            .map_err(|e| StepError::Failed(e.to_string()))
    }
}

/// Blames the party a Corona error names, if any.
fn corona_step(error: corona::scheme::CoronaError) -> StepError {
    use corona::scheme::CoronaError as E;
    match error {
        E::MacMismatch(party)
        | E::MessageMismatch(party)
        | E::UnexpectedMessage(party)
        | E::DuplicateParty(party)
        | E::MissingMessage(party) => StepError::Misbehaved {
            party,
            reason: error.to_string(),
        },
        other => StepError::Failed(other.to_string()),
    }
}

fn corona_round1(bytes: &[u8]) -> Result<corona::scheme::Round1Message, StepError> {
    corona::scheme::Round1Message::from_bytes(bytes)
        .map_err(|e| StepError::Failed(format!("round 1 message: {e}")))
}

impl Scheme for CoronaParty {
    const LEG: LegKind = LegKind::Corona;
    const KINDS: &'static [LaneKind] = &[LaneKind::CoronaRound1, LaneKind::CoronaRound2];
    const ROUND1_WITHOUT_MESSAGE: bool = true;
    type State = CoronaState;

    fn threshold(&self) -> usize {
        self.threshold
    }

    fn parties(&self) -> usize {
        self.parties
    }

    fn party(&self) -> Option<u16> {
        self.signer.as_ref().map(|signer| match signer {
            CoronaSigner::Local(s) => s.share().index(),
            CoronaSigner::Remote(remote) => remote.party,
        })
    }

    fn round1(
        &mut self,
        session: &SessionId,
        set: &[u16],
        _message: Option<&Hash>,
    ) -> Result<(Vec<u8>, Self::State), StepError> {
        let signing_set = self.set(set)?;
        if let Some(CoronaSigner::Remote(remote)) = &self.signer {
            let fields = serde_json::json!({ "parties": set });
            let bytes = remote.round("corona.round1", session, fields, "round1Hex")?;
            self.check(1, remote.party, session, &bytes)
                .map_err(|e| StepError::Failed(format!("thresholdd corona.round1: {e}")))?;
            return Ok((bytes, CoronaState::Remote(*session)));
        }
        let Some(CoronaSigner::Local(signer)) = self.signer.as_mut() else {
            return Err(StepError::Failed("no Corona key share".into()));
        };
        let (state, message) = signer
            .round1(
                corona::scheme::SessionId(*session),
                &signing_set,
                &mut OsRng,
            )
            .map_err(corona_step)?;
        Ok((message.to_bytes(), CoronaState::Local(state)))
    }

    fn next_round(
        &mut self,
        _round: usize,
        state: Self::State,
        message: &Hash,
        previous: &[&[u8]],
    ) -> Result<(Vec<u8>, Option<Self::State>), StepError> {
        match (self.signer.as_ref(), state) {
            (Some(CoronaSigner::Local(signer)), CoronaState::Local(state)) => {
                let round1 = previous
                    .iter()
                    .map(|b| corona_round1(b))
                    .collect::<Result<Vec<_>, _>>()?;
                let (reply, _) = signer
                    .round2(state, message, &round1)
                    .map_err(corona_step)?;
                Ok((reply.to_bytes(), None))
            }
            (Some(CoronaSigner::Remote(remote)), CoronaState::Remote(session)) => {
                let fields = serde_json::json!({
                    "messageHex": hex::encode(message),
                    "round1Hex": hex_list(previous),
                });
                let bytes = remote.round("corona.round2", &session, fields, "round2Hex")?;
                self.check(2, remote.party, &session, &bytes)
                    .map_err(|e| StepError::Failed(format!("thresholdd corona.round2: {e}")))?;
                Ok((bytes, None))
            }
            _ => Err(StepError::Failed(
                "no Corona key share for this state".into(),
            )),
        }
    }

    fn check(
        &self,
        round: usize,
        party: u16,
        session: &SessionId,
        bytes: &[u8],
    ) -> Result<(), String> {
        let (sender, id) = if round == 1 {
            let m = corona::scheme::Round1Message::from_bytes(bytes).map_err(|e| e.to_string())?;
            (m.sender(), Some(m.session()))
        } else {
            let m = corona::scheme::Round2Message::from_bytes(bytes).map_err(|e| e.to_string())?;
            (m.sender(), None)
        };
        check_origin(sender, party, id.map(|id| id.0), session)
    }

    fn combine(
        &self,
        session: &SessionId,
        set: &[u16],
        message: &Hash,
        rounds: &[Vec<&[u8]>],
    ) -> Result<Vec<u8>, StepError> {
        let (Some(first), Some(second)) = (rounds.first(), rounds.get(1)) else {
            return Err(StepError::Failed("a round is missing".into()));
        };
        let round1 = first
            .iter()
            .map(|b| corona_round1(b))
            .collect::<Result<Vec<_>, _>>()?;
        let round2 = second
            .iter()
            .map(|b| {
                corona::scheme::Round2Message::from_bytes(b)
                    .map_err(|e| StepError::Failed(format!("round 2 message: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let context = corona::scheme::SignContext::new(
            &self.group,
            corona::scheme::SessionId(*session),
            self.set(set)?,
            message,
            &round1,
        )
        .map_err(corona_step)?;
        corona::scheme::combine(&self.group, &context, &round2)
            .map(|signature| signature.to_bytes())
            .map_err(corona_step)
    }
}

/// Pulsar (module docs of `quasar_crypto::pulsar`) as a [`Scheme`]: three rounds on the bundle
/// digest with context [`CERT_CONTEXT`]; the leg is the 3309-byte FIPS 204 signature.
pub struct PulsarParty {
    group: pulsar::GroupKey,
    signer: Option<PulsarSigner>,
}

/// Where a Pulsar party's share signs.
enum PulsarSigner {
    Local(pulsar::Signer),
    Remote(RemoteParty),
}

/// A Pulsar signer's state between its rounds.
pub enum PulsarState {
    /// After round 1.
    Committed(pulsar::Round1State),
    /// After round 2.
    Revealed(pulsar::Round2State),
    /// After a remote round 1 or 2 in this session (the daemon holds the state).
    Remote(SessionId),
}

impl PulsarParty {
    /// A party of `group`'s key holding `share` (`None`: this node only collects and
    /// combines). The caller checks the share first (`GroupKey::check_share`).
    pub fn new(group: pulsar::GroupKey, share: Option<pulsar::KeyShare>) -> Self {
        PulsarParty {
            group,
            signer: share.map(|share| PulsarSigner::Local(pulsar::Signer::new(share))),
        }
    }

    /// A party of `group`'s key whose share is in the validator's thresholdd.
    pub fn remote(group: pulsar::GroupKey, remote: RemoteParty) -> Self {
        PulsarParty {
            group,
            signer: Some(PulsarSigner::Remote(remote)),
        }
    }

    fn session(
        &self,
        session: &SessionId,
        set: &[u16],
        message: &Hash,
    ) -> Result<pulsar::Session, StepError> {
        pulsar::Session::new(
            &self.group,
            pulsar::SessionId(*session),
            set,
            message,
            CERT_CONTEXT,
        )
        .map_err(pulsar_step)
    }

    /// Remote round `round` (2 or 3) of this party in `session` from the previous round's
    /// messages: its message, checked, and the state for the next round (none after round 3).
    fn remote_round(
        &self,
        remote: &RemoteParty,
        round: usize,
        session: SessionId,
        previous: &[&[u8]],
    ) -> Result<(Vec<u8>, Option<PulsarState>), StepError> {
        let (method, list, reply) = if round == 2 {
            ("pulsar.round2", "round1Hex", "round2Hex")
        } else {
            ("pulsar.round3", "round2Hex", "round3Hex")
        };
        let fields = serde_json::json!({ list: hex_list(previous) });
        let bytes = remote.round(method, &session, fields, reply)?;
        self.check(round, remote.party, &session, &bytes)
            .map_err(|e| StepError::Failed(format!("thresholdd {method}: {e}")))?;
        Ok((bytes, (round == 2).then_some(PulsarState::Remote(session))))
    }
}

/// Blames the party a Pulsar error names, if any.
fn pulsar_step(error: pulsar::PulsarError) -> StepError {
    use pulsar::PulsarError as E;
    match error {
        E::Restart => StepError::Restart,
        E::Misbehaved { party, reason } => StepError::Misbehaved {
            party,
            reason: reason.into(),
        },
        E::Missing(party) => StepError::Misbehaved {
            party,
            reason: "sent no message".into(),
        },
        other => StepError::Failed(other.to_string()),
    }
}

/// Decodes every message of a Pulsar round.
fn pulsar_messages<T>(
    messages: &[&[u8]],
    decode: impl Fn(&[u8]) -> Result<T, pulsar::PulsarError>,
) -> Result<Vec<T>, StepError> {
    messages
        .iter()
        .map(|b| decode(b).map_err(|e| StepError::Failed(e.to_string())))
        .collect()
}

impl Scheme for PulsarParty {
    const LEG: LegKind = LegKind::Pulsar;
    const KINDS: &'static [LaneKind] = &[
        LaneKind::PulsarRound1,
        LaneKind::PulsarRound2,
        LaneKind::PulsarRound3,
    ];
    const ROUND1_WITHOUT_MESSAGE: bool = false;
    type State = PulsarState;

    fn threshold(&self) -> usize {
        self.group.params().threshold
    }

    fn parties(&self) -> usize {
        self.group.params().parties
    }

    fn party(&self) -> Option<u16> {
        self.signer.as_ref().map(|signer| match signer {
            PulsarSigner::Local(s) => s.party(),
            PulsarSigner::Remote(remote) => remote.party,
        })
    }

    fn round1(
        &mut self,
        session: &SessionId,
        set: &[u16],
        message: Option<&Hash>,
    ) -> Result<(Vec<u8>, Self::State), StepError> {
        let message =
            message.ok_or_else(|| StepError::Failed("Pulsar signs a known digest".into()))?;
        if let Some(PulsarSigner::Remote(remote)) = &self.signer {
            let fields = serde_json::json!({
                "parties": set,
                "messageHex": hex::encode(message),
                "ctxHex": hex::encode(CERT_CONTEXT),
            });
            let bytes = remote.round("pulsar.round1", session, fields, "round1Hex")?;
            self.check(1, remote.party, session, &bytes)
                .map_err(|e| StepError::Failed(format!("thresholdd pulsar.round1: {e}")))?;
            return Ok((bytes, PulsarState::Remote(*session)));
        }
        let session = self.session(session, set, message)?;
        let Some(PulsarSigner::Local(signer)) = self.signer.as_mut() else {
            return Err(StepError::Failed("no Pulsar key share".into()));
        };
        let (reply, state) = signer
            .round1(&self.group, &session, &mut OsRng)
            .map_err(pulsar_step)?;
        Ok((reply.to_bytes(), PulsarState::Committed(state)))
    }

    fn next_round(
        &mut self,
        round: usize,
        state: Self::State,
        _message: &Hash,
        previous: &[&[u8]],
    ) -> Result<(Vec<u8>, Option<Self::State>), StepError> {
        let params = *self.group.params();
        let (signer, state) = match (&self.signer, state) {
            (Some(PulsarSigner::Remote(remote)), PulsarState::Remote(session)) => {
                return self.remote_round(remote, round, session, previous);
            }
            (Some(PulsarSigner::Local(signer)), state) => (signer, state),
            _ => {
                return Err(StepError::Failed(
                    "no Pulsar key share for this state".into(),
                ))
            }
        };
        match state {
            PulsarState::Remote(_) => {
                Err(StepError::Failed("a remote state for a local share".into()))
            }
            PulsarState::Committed(state) => {
                let round1 = pulsar_messages(previous, pulsar::Round1Message::from_bytes)?;
                let (reply, state) = signer.round2(state, &round1).map_err(pulsar_step)?;
                Ok((reply.to_bytes(), Some(PulsarState::Revealed(state))))
            }
            PulsarState::Revealed(state) => {
                let round2 =
                    pulsar_messages(previous, |b| pulsar::Round2Message::from_bytes(b, &params))?;
                let reply = signer
                    .round3(&self.group, state, &round2)
                    .map_err(pulsar_step)?;
                Ok((reply.to_bytes(), None))
            }
        }
    }

    fn check(
        &self,
        round: usize,
        party: u16,
        session: &SessionId,
        bytes: &[u8],
    ) -> Result<(), String> {
        let params = self.group.params();
        let (sender, id) = match round {
            1 => pulsar::Round1Message::from_bytes(bytes).map(|m| (m.party, m.session)),
            2 => pulsar::Round2Message::from_bytes(bytes, params).map(|m| (m.party, m.session)),
            _ => pulsar::Round3Message::from_bytes(bytes, params).map(|m| (m.party, m.session)),
        }
        .map_err(|e| e.to_string())?;
        check_origin(sender, party, Some(id.0), session)
    }

    fn combine(
        &self,
        session: &SessionId,
        set: &[u16],
        message: &Hash,
        rounds: &[Vec<&[u8]>],
    ) -> Result<Vec<u8>, StepError> {
        let (Some(first), Some(second), Some(third)) =
            (rounds.first(), rounds.get(1), rounds.get(2))
        else {
            return Err(StepError::Failed("a round is missing".into()));
        };
        let params = *self.group.params();
        let round1 = pulsar_messages(first, pulsar::Round1Message::from_bytes)?;
        let round2 = pulsar_messages(second, |b| pulsar::Round2Message::from_bytes(b, &params))?;
        let round3 = pulsar_messages(third, |b| pulsar::Round3Message::from_bytes(b, &params))?;
        let session = self.session(session, set, message)?;
        pulsar::combine(&self.group, &session, &round1, &round2, &round3).map_err(pulsar_step)
    }
}
