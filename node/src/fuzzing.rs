//! Entry points for fuzzers and smoke tests.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `node/fuzz` are one-line
//! calls to these functions, and the workspace smoke test (`node/tests/fuzz_smoke.rs`) drives the
//! same functions with seeded pseudo-random and mutated inputs on the stable toolchain, so a crash
//! found by either reproduces under both.
//!
//! The consensus targets share one fixture: four validators of stake 1 whose keys are
//! `SecretKey::from_seed(&[i + 1; 32])`, chain [`CHAIN_ID`], epoch 0, genesis hash [`GENESIS`].
//!
//! - [`certificate`], [`sync_response`], [`sync_request`]: decoders and verifiers reached by
//!   network bytes never panic, and what verifies is well-formed.
//! - [`core_inputs`]: the consensus core's message handler under a fuzz-chosen sequence of
//!   validly signed (possibly equivocating) messages, timer expiries and clock steps; see its docs
//!   for the instruction format and the invariants it asserts.
//! - [`node_toml`]: `node.toml` never panics its parser (the genesis, key and guard-history
//!   files are `quasar_chainspec`'s fuzz targets, thresholdd's files `quasar_thresholdd`'s).
//! - [`rollup_signature`]: the rollup signature collector agrees with FIPS 204 on peer bytes.

use crate::config::NodeConfig;
use crate::relay::{RelayCache, MAX_RELAY_ITEMS, RELAY_VIEWS};
use crate::rollup_job::{CollectError, WindowCollector};
use crate::signer::{guard_kind, SignError, VoteSigner};
use crate::sync::{serve, SyncSource, MAX_SYNC_BLOCKS};
use quasar_consensus::{
    Action, BlockLimits, Core, CoreConfig, EpochSchedule, Input, ProposalSlot, Received, TimerKind,
    Tip, VerifiedProposal, VerifiedVote, Verifier,
};
use quasar_crypto::bls::{SecretKey, Signature};
use quasar_crypto::hash::Hash;
use quasar_crypto::mldsa::{
    MlDsa65, PublicKey as MlDsaPublicKey, SecretKey as MlDsaSecretKey, Signature as MlDsaSignature,
};
use quasar_crypto::rollup::circuit::{
    RollupError, Shape, Validator as RollupValidator, ROLLUP_CONTEXT,
};
use quasar_crypto::rollup::native::{ExpandedKey, ML_DSA_65};
use quasar_lanes::bls::bitmap_from_signers;
use quasar_lanes::{Validator, ValidatorSet};
use quasar_storage::{GuardError, SigningGuard, VoteIntent};
use quasar_wire::frame::MAX_FRAME_LEN;
use quasar_wire::{
    payload_root, vote_signing_message, BlockHeader, Certificate, CertificateKind, EpochDomain,
    LegKind, Message, MessageRef, Proposal, QuasarCert, SyncResponse, Vote, VoteKind,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

/// Validators in the fixture set (stake 1 each, so a quorum is 3).
pub const VALIDATORS: usize = 4;
/// Chain id of the fixture.
pub const CHAIN_ID: u64 = 7;
/// Genesis hash of the fixture (nonzero, as a real genesis hash is).
pub const GENESIS: Hash = [0x47; 32];

/// The fixture's epoch domain (finalize votes sign μ under it).
pub fn domain() -> EpochDomain {
    EpochDomain {
        validator_set_root: [0x56; 32],
        profile_id: quasar_lanes::cert::Profile::default().name(),
    }
}

/// Most instructions [`core_inputs`] runs from one input: each may sign up to four votes and
/// verify one message (about 1 ms of BLS each), so one input stays well under a second.
pub const MAX_CORE_STEPS: usize = 32;

/// Most sync response items [`sync_response`] verifies from one input (one pairing each).
pub const MAX_SYNC_ITEMS: usize = 16;

struct Fixture {
    keys: Vec<SecretKey>,
    validators: Arc<ValidatorSet>,
    verifier: Verifier,
}

fn seed_of(index: usize) -> [u8; 32] {
    [index as u8 + 1; 32]
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let keys: Vec<SecretKey> = (0..VALIDATORS)
            .map(|i| SecretKey::from_seed(&seed_of(i)))
            .collect();
        let members = keys
            .iter()
            .map(|k| Validator {
                public_key: k.public_key(),
                stake: 1,
            })
            .collect();
        let validators = Arc::new(ValidatorSet::new(members).expect("four distinct keys"));
        let limits = BlockLimits {
            max_txs: 16,
            max_bytes: 4096,
        };
        let verifier = Verifier::new(
            validators.clone(),
            GENESIS,
            CHAIN_ID,
            EpochSchedule::SINGLE,
            domain(),
            limits,
        );
        Fixture {
            keys,
            validators,
            verifier,
        }
    })
}

/// Entries one generation of a [`Memo`] holds; a memo holds at most two (bounded memory over a
/// long fuzzing run).
const MEMO_GENERATION: usize = 1 << 15;

/// A process-wide memo of a deterministic, expensive answer: a fixture key's signature or the
/// fixture verifier's verdict (one set, chain, epoch and domain, so the same bytes always get the
/// same answer). Mutated fuzz inputs ask the same questions again and again; with the memo each
/// question meets the real signer or verifier once, and the fuzzer's time goes to the code under
/// test instead of to pairings.
///
/// When the current generation is full it becomes the previous one and the one before it is
/// dropped; an answer found in the previous generation moves to the current one. So the answers
/// the fuzzer keeps asking for survive (starting over from empty, as this memo once did, cost a
/// burst of pairings each time it filled).
struct Memo<K, V>(OnceLock<Mutex<Generations<K, V>>>);

/// The two generations of a [`Memo`].
struct Generations<K, V> {
    current: HashMap<K, V>,
    previous: HashMap<K, V>,
}

impl<K, V> Default for Generations<K, V> {
    fn default() -> Self {
        Generations {
            current: HashMap::new(),
            previous: HashMap::new(),
        }
    }
}

impl<K: std::hash::Hash + Eq, V: Clone> Generations<K, V> {
    fn insert(&mut self, key: K, value: V) {
        if self.current.len() >= MEMO_GENERATION {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, value);
    }
}

impl<K: std::hash::Hash + Eq, V: Clone> Memo<K, V> {
    const fn new() -> Self {
        Memo(OnceLock::new())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations<K, V>> {
        let memo = self.0.get_or_init(Mutex::default);
        memo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The memoized answer for `key`, if any.
    fn get(&self, key: &K) -> Option<V> {
        let mut memo = self.lock();
        if let Some(value) = memo.current.get(key) {
            return Some(value.clone());
        }
        let (key, value) = memo.previous.remove_entry(key)?;
        memo.insert(key, value.clone());
        Some(value)
    }

    /// Remembers `value` as the answer for `key`.
    fn insert(&self, key: K, value: V) {
        self.lock().insert(key, value);
    }

    /// The memoized answer for `key`, or `answer()` (remembered) when there is none.
    fn get_or(&self, key: K, answer: impl FnOnce() -> V) -> V {
        if let Some(value) = self.get(&key) {
            return value;
        }
        let value = answer();
        self.insert(key, value.clone());
        value
    }
}

/// Signs `message` with fixture validator `signer` (memoized: signing is deterministic).
fn sign(signer: usize, message: &[u8]) -> Signature {
    static SIGNATURES: Memo<(usize, Vec<u8>), Signature> = Memo::new();
    SIGNATURES.get_or((signer, message.to_vec()), || {
        fixture().keys[signer].sign(message)
    })
}

/// What a proposal instruction signs: proposer, view, height, parent hash and view, time and
/// transactions (the parent's timestamp is a function of its hash).
type ProposalKey = (u32, u64, u64, Hash, u64, u64, Vec<Vec<u8>>);

/// Proposals signed by a fresh [`VoteSigner`] of their proposer (memoized: a fresh signer's
/// in-memory guard allows any first block, and signing is deterministic); `None` when refused.
static PROPOSALS: Memo<ProposalKey, Option<Proposal>> = Memo::new();

/// What the harness's own signer (validator 0, a local key) signs a vote for: kind, view, height,
/// block.
type OwnVoteKey = (VoteKind, u64, u64, Hash);

/// The harness's own votes, signed once per process (module docs of [`core_inputs`]).
static OWN_VOTES: Memo<OwnVoteKey, VerifiedVote> = Memo::new();

/// What the harness's own signer builds a proposal from: the slot's view, height, parent hash,
/// parent view and parent timestamp, the time and the transactions.
type OwnProposalKey = (u64, u64, Hash, u64, u64, u64, Vec<Vec<u8>>);

/// The harness's own proposals, signed once per process.
static OWN_PROPOSALS: Memo<OwnProposalKey, VerifiedProposal> = Memo::new();

/// The fixture verifier's ingress ([`Verifier::ingress`], the path network bytes take) on the
/// one message `encoded` (memoized by the encoding): the verified input, or `None` when it is
/// refused or is not a consensus input.
fn ingress(encoded: &[u8]) -> Option<Input> {
    static VERDICTS: Memo<Vec<u8>, Option<Input>> = Memo::new();
    VERDICTS.get_or(encoded.to_vec(), || {
        match fixture().verifier.ingress(&[encoded]).pop() {
            Some(Received::Input(input)) => Some(input),
            _ => None,
        }
    })
}

/// Any bytes: when they decode as a Certificate, verifying it against the fixture set returns a
/// verified certificate or a typed error, never a panic; one that verifies names distinct signers
/// in ascending order that hold a quorum, and matches the certificate's bitmap.
///
/// Panics: when a verified certificate's signers are not a sorted, distinct quorum.
pub fn certificate(data: &[u8]) {
    let Ok(MessageRef::Certificate(decoded)) = quasar_wire::decode(data) else {
        return;
    };
    let f = fixture();
    let certificate = decoded.to_owned();
    let Ok(verified) = f.verifier.verify_certificate(certificate.clone()) else {
        return;
    };
    let signers = verified.signers();
    assert!(
        signers.windows(2).all(|w| w[0] < w[1]),
        "signers {signers:?}"
    );
    let stake = f.validators.stake_of(signers.iter().copied());
    assert!(
        stake.is_some_and(|s| f.validators.is_quorum(s)),
        "verified certificate without a quorum: {signers:?}"
    );
    assert_eq!(
        bitmap_from_signers(signers.iter().copied(), VALIDATORS),
        certificate.signers,
        "verified certificate whose bitmap is not canonical"
    );
}

/// Any bytes: when they decode as a SyncResponse, every item decodes as a Proposal, a Vote, a
/// Certificate or a QuasarCert (the decoder checked them) and verifying the first
/// [`MAX_SYNC_ITEMS`] blocks, votes and certificates against the fixture set never panics (verdicts are
/// memoized by the item's bytes: a mutated response mostly repeats the items of its parent).
///
/// Panics: when an item of a decoded response does not decode, or decodes as another type.
pub fn sync_response(data: &[u8]) {
    let Ok(MessageRef::SyncResponse(response)) = quasar_wire::decode(data) else {
        return;
    };
    for (index, item) in response.items().enumerate() {
        match quasar_wire::decode(item) {
            Ok(MessageRef::Proposal(_) | MessageRef::Vote(_) | MessageRef::Certificate(_)) => {}
            Ok(MessageRef::QuasarCert(_)) => continue,
            other => panic!("sync item {index} of a decoded response: {other:?}"),
        }
        if index < MAX_SYNC_ITEMS {
            ingress(item);
        }
    }
}

/// A finalized chain of heights 1..=300 of small blocks, each proposal paired with a certificate,
/// and a QuasarCert for every bundle of [`FIXTURE_BUNDLE`] blocks.
struct FixtureChain;

const FIXTURE_BUNDLE: u64 = 50;

const FIXTURE_CHAIN_LEN: u64 = 300;

fn chain_block(height: u64) -> Proposal {
    let txs = vec![height.to_le_bytes().to_vec()];
    Proposal {
        header: BlockHeader {
            chain_id: CHAIN_ID,
            epoch: 0,
            view: height,
            height,
            parent_view: height - 1,
            parent: [height as u8; 32],
            proposer: 0,
            timestamp_us: height,
            payload_root: payload_root(txs.iter().map(Vec::as_slice)),
            state_root: [0; 32],
        },
        txs,
        signature: [0; 96],
    }
}

impl SyncSource for FixtureChain {
    fn finalized_at(&self, height: u64) -> Option<(Vec<u8>, Vec<u8>)> {
        if !(1..=FIXTURE_CHAIN_LEN).contains(&height) {
            return None;
        }
        let block = chain_block(height);
        let certificate = Certificate {
            kind: CertificateKind::Finalization,
            chain_id: CHAIN_ID,
            epoch: 0,
            view: height,
            height,
            block: block.header.hash(),
            signers: vec![0b0111],
            signature: [0; 96],
        };
        Some((block.encode().ok()?, certificate.encode().ok()?))
    }

    fn history_floor(&self) -> u64 {
        1
    }

    fn tip_certificate(&self) -> Option<Vec<u8>> {
        self.finalized_at(FIXTURE_CHAIN_LEN).map(|(_, c)| c)
    }

    fn quasar_cert_from(&self, height: u64) -> Option<(u64, Vec<u8>)> {
        let closing = height.max(1).div_ceil(FIXTURE_BUNDLE) * FIXTURE_BUNDLE;
        if closing > FIXTURE_CHAIN_LEN {
            return None;
        }
        let cert = QuasarCert {
            chain_id: CHAIN_ID,
            epoch: 0,
            height: closing,
            view: closing,
            block: chain_block(closing).header.hash(),
            bundle: vec![[closing as u8; 32]; FIXTURE_BUNDLE as usize],
            legs: vec![(LegKind::Bls, vec![0xb5; 100])],
        };
        Some((closing, cert.encode().ok()?))
    }

    fn block_by_hash(&self, hash: &Hash) -> Option<Vec<u8>> {
        // Hashes whose first byte names a height are "known" (any other byte is arbitrary).
        let height = u64::from(hash[0]);
        (height >= 1 && hash[1..] == [0; 31])
            .then(|| chain_block(height).encode().ok())
            .flatten()
    }
}

/// Any bytes: when they decode as a SyncRequest, serving it from a 300-block chain returns at
/// most one block by hash, at most [`MAX_SYNC_BLOCKS`] consecutive blocks from
/// `max(from_height, 1)` and one certificate, then the QuasarCerts of bundles closing among
/// those blocks in increasing order, and the reply encodes within one frame.
///
/// Panics: when the reply breaks one of those bounds or fails to encode.
pub fn sync_request(data: &[u8]) {
    let Ok(MessageRef::SyncRequest(decoded)) = quasar_wire::decode(data) else {
        return;
    };
    let request = decoded.to_owned();
    let response = serve(&request, &FixtureChain, &EpochSchedule::SINGLE, &|_| None);
    let by_hash = request.block != [0; 32] && FixtureChain.block_by_hash(&request.block).is_some();
    let extra = usize::from(by_hash);
    let first = request.from_height.max(1);
    let quasar: Vec<u64> = response
        .items
        .iter()
        .filter_map(|item| match quasar_wire::decode(item) {
            Ok(MessageRef::QuasarCert(c)) => Some(c.height()),
            _ => None,
        })
        .collect();
    assert!(
        response.items.len() <= MAX_SYNC_BLOCKS as usize + 1 + extra + quasar.len(),
        "{} items for {request:?}",
        response.items.len()
    );
    let blocks: Vec<u64> = response
        .items
        .iter()
        .filter_map(|item| match quasar_wire::decode(item) {
            Ok(MessageRef::Proposal(p)) => Some(p.header().height),
            _ => None,
        })
        .collect();
    let by_height = blocks.get(extra.min(blocks.len())..).unwrap_or_default();
    for (i, height) in by_height.iter().enumerate() {
        assert_eq!(
            *height,
            first + i as u64,
            "blocks out of order for {request:?}"
        );
    }
    let expected: Vec<u64> = by_height
        .iter()
        .copied()
        .filter(|h| h % FIXTURE_BUNDLE == 0)
        .collect();
    assert_eq!(quasar, expected, "QuasarCerts for {request:?}");
    assert_fits_a_frame(response);
}

/// Panics unless `response` encodes within one frame (what a node serves must reach its peer).
fn assert_fits_a_frame(response: SyncResponse) {
    let bytes = Message::SyncResponse(response)
        .encode()
        .expect("a served reply encodes");
    assert!(
        bytes.len() <= MAX_FRAME_LEN,
        "reply of {} bytes",
        bytes.len()
    );
}

/// Views the relay fixture signs votes in: more than [`RELAY_VIEWS`], so the cache's window
/// drops the oldest.
const RELAY_FIXTURE_VIEWS: u64 = 12;

/// A relay cache that recorded a notarize and a finalize vote of every fixture validator in each
/// of views `1..=RELAY_FIXTURE_VIEWS`.
fn relay_fixture() -> &'static RelayCache {
    static CACHE: OnceLock<RelayCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        let mut cache = RelayCache::new();
        for index in 0..VALIDATORS {
            let key = SecretKey::from_seed(&seed_of(index));
            let guard = SigningGuard::in_memory();
            let mut signer = VoteSigner::new(key, index as u32, CHAIN_ID, 0, domain(), guard);
            for view in 1..=RELAY_FIXTURE_VIEWS {
                for kind in [VoteKind::Notarize, VoteKind::Finalize] {
                    let (vote, _) = signer
                        .sign_vote(kind, view, view, [view as u8; 32])
                        .expect("a fresh guard signs one block per view");
                    cache.record(&Input::Vote(vote), view);
                }
            }
        }
        cache
    })
}

/// Any bytes: when they decode as a RelayRequest, serving it from the relay fixture returns at
/// most [`MAX_RELAY_ITEMS`] votes, each of the asked signer and epoch, from the asked view on
/// and within the cache's window of [`RELAY_VIEWS`] views, and the reply encodes within one
/// frame.
///
/// Panics: when the reply breaks one of those bounds or fails to encode.
pub fn relay_request(data: &[u8]) {
    let Ok(MessageRef::RelayRequest(decoded)) = quasar_wire::decode(data) else {
        return;
    };
    let request = decoded.to_owned();
    let response = relay_fixture().serve(&request, &FixtureChain);
    assert!(
        response.items.len() <= MAX_RELAY_ITEMS,
        "{} items for {request:?}",
        response.items.len()
    );
    for item in &response.items {
        let Ok(MessageRef::Vote(vote)) = quasar_wire::decode(item) else {
            panic!("a relayed item that is not a vote, for {request:?}");
        };
        assert!(
            vote.signer() == request.signer
                && vote.epoch() == request.epoch
                && vote.view() >= request.from_view
                && vote.view() + RELAY_VIEWS >= RELAY_FIXTURE_VIEWS,
            "vote of signer {} in view {} relayed for {request:?}",
            vote.signer(),
            vote.view()
        );
    }
    assert_fits_a_frame(response);
}

/// Any text as node.toml: parsing returns a config or an error, never panics.
pub fn node_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = NodeConfig::from_toml(text, std::path::Path::new("."));
    }
}

/// Any bytes as a node's JSON answer to `GET /account/{address}` ([`quasar_client::AccountInfo`]):
/// checking it against the fixture's validator set ([`crate::light::verify_account`]) never
/// panics, and an answer it accepts names the address asked for, and a block whose certificate
/// verifies on its own.
///
/// Panics: when an accepted answer breaks either.
pub fn account_answer(data: &[u8]) {
    let Ok(info) = serde_json::from_slice::<quasar_client::AccountInfo>(data) else {
        return;
    };
    let address = [0x42; 32];
    let f = fixture();
    let Ok(checked) = crate::light::verify_account(&f.verifier, &address, &info) else {
        return;
    };
    assert_eq!(info.address, hex::encode(address));
    let bytes = hex::decode(&info.certificate_hex).expect("an accepted certificate is hex");
    let Ok(MessageRef::Certificate(c)) = quasar_wire::decode(&bytes) else {
        panic!("an accepted answer's certificate decodes");
    };
    assert_eq!(c.epoch(), checked.epoch);
    assert!(f.verifier.verify_certificate(c.to_owned()).is_ok());
}

/// A seed for [`account_answer`]: the answer for block 1 of the fixture chain (its certificate's
/// signature is not real, so it is refused at the certificate step).
pub fn account_answer_seed() -> Vec<u8> {
    let (block, certificate) = FixtureChain
        .finalized_at(1)
        .expect("the fixture chain has block 1");
    let Ok(MessageRef::Proposal(block)) = quasar_wire::decode(&block) else {
        return Vec::new();
    };
    let info = quasar_client::AccountInfo {
        address: hex::encode([0x42; 32]),
        account: Some(quasar_client::AccountState {
            balance: 5,
            stake: 0,
            nonce: 1,
            has_key: true,
        }),
        header: crate::light::header_info(&block.header()),
        links: Vec::new(),
        certificate_hex: hex::encode(certificate),
        proof_hex: String::new(),
    };
    serde_json::to_vec(&info).unwrap_or_default()
}

/// A genesis of [`VALIDATORS`] fresh validators whose sets come from the registry (profile
/// `fast`, epochs of 10 blocks), made once per process in a directory of the system's
/// temporary folder. Panics: the keys cannot be written (the harness cannot run).
fn registry_genesis() -> &'static quasar_chainspec::Genesis {
    static GENESIS_FILE: OnceLock<quasar_chainspec::Genesis> = OnceLock::new();
    GENESIS_FILE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("quasar-fuzz-genesis-{}", std::process::id()));
        let access = quasar_chainspec::key_file::KeyAccess::plaintext();
        let keys: Vec<_> = (0..VALIDATORS)
            .map(|i| {
                quasar_chainspec::keygen_with_set(
                    &dir.join(format!("v{i}")),
                    &format!("v{i}"),
                    quasar_crypto::magnetar::ParameterSet::default(),
                    &access,
                )
                .expect("fuzz fixture keys")
            })
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        let file = quasar_chainspec::GenesisFile {
            profile: "fast".into(),
            bundle_size: 1,
            epoch_length: 10,
            validator_set_source: quasar_chainspec::SetSource::Registry,
            ..quasar_chainspec::GenesisFile::from_public_keys(CHAIN_ID, 1_000, &keys, 100)
        };
        file.check().expect("fuzz fixture genesis")
    })
}

/// Any bytes as a node's JSON answer to `GET /epochs/{epoch}/set`
/// ([`quasar_client::EpochSetInfo`]): checking it as the first epoch-change step of a chain
/// whose sets come from its registry ([`crate::light::verify_epoch_set`]) never panics, and a
/// step it accepts is epoch 2's and leaves that set decided.
///
/// Panics: when an accepted step breaks either.
pub fn epoch_set_answer(data: &[u8]) {
    let Ok(info) = serde_json::from_slice::<quasar_client::EpochSetInfo>(data) else {
        return;
    };
    let genesis = registry_genesis();
    let verifier = crate::light::genesis_verifier(genesis);
    if crate::light::verify_epoch_set(&verifier, genesis, &info).is_ok() {
        assert_eq!(
            info.epoch, 2,
            "only epoch 2's step follows the genesis sets"
        );
        assert!(verifier.sets().known(2));
    }
}

/// A seed for [`epoch_set_answer`]: a step of the right shape for epoch 2 (block 10 of the
/// fixture chain's header, an empty set entry and proof), refused at the certificate step.
pub fn epoch_set_answer_seed() -> Vec<u8> {
    let (block, certificate) = FixtureChain
        .finalized_at(1)
        .expect("the fixture chain has block 1");
    let Ok(MessageRef::Proposal(block)) = quasar_wire::decode(&block) else {
        return Vec::new();
    };
    let mut header = crate::light::header_info(&block.header());
    header.height = 10;
    let info = quasar_client::EpochSetInfo {
        epoch: 2,
        header,
        links: Vec::new(),
        certificate_hex: hex::encode(certificate),
        set_hex: hex::encode([1u8; 33]),
        proof_hex: String::new(),
    };
    serde_json::to_vec(&info).unwrap_or_default()
}

/// What one [`core_inputs`] run reached (for smoke tests that check the harness gets somewhere).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreRun {
    /// Instructions run.
    pub steps: usize,
    /// Messages that passed verification and reached the core.
    pub accepted: usize,
    /// The core's final view.
    pub view: u64,
    /// The core's finalized height at the end.
    pub finalized_height: u64,
}

/// The consensus core's message handler under any sequence of inputs.
///
/// Builds a [`Core`] for validator 0 of the fixture set (block time 1 ms, view timeout 1 s, retry
/// 100 ms, 16 future views) with an honest signer behind an in-memory signing guard, and starts
/// it at time 0. The runtime's duties are played faithfully: the core's `Vote` and `Propose`
/// actions are signed through the guard and fed back, `SetTimer`s are remembered. Then the input
/// is read as up to [`MAX_CORE_STEPS`] instructions; the first byte of each picks the kind (byte
/// mod 8), the following bytes its fields (missing bytes read as 0):
///
/// | op   | fields                              | effect                                             |
/// |------|-------------------------------------|----------------------------------------------------|
/// | 0, 1 | signer, kind, view, block, flags    | a vote by any validator (equivocation allowed)     |
/// | 2    | view, parent, flags, txs, time      | a proposal signed with `VoteSigner::sign_block`    |
/// | 3    | kind, view, block, signers, flags   | a certificate aggregated from the signers' votes   |
/// | 4, 5 | which, view                         | a pending timer, or any timer, fires               |
/// | 6, 7 | step                                | time advances `step × 20 ms`; due timers fire      |
///
/// Views are chosen near the core's current view (−4..+3, or far ahead); blocks from those
/// proposed so far plus one unknown hash. Every message is encoded, decoded and passed through
/// [`Verifier::ingress`] as network bytes are; what verifies goes to [`Core::handle`].
/// Signatures, proposals and verdicts on the fixture's keys are memoized: each distinct
/// message meets the real signer and verifier once per process, so the fuzzer's time goes to the
/// core instead of to BLS. That includes the core's own votes and proposals: its signing guard
/// decides each one every time, and only the BLS signature of one signed before is reused.
///
/// Panics (each a broken invariant, for any input): the view decreases; the finalized height
/// decreases; an `Action::Finalized` is not at the previous tip's height + 1, does not extend the
/// previous tip's hash, or carries a hash that is not its header's; the core's tip differs from the
/// last block it reported final; `EnteredView` does not increase; a certificate the core sends or
/// reports does not verify; the core asks its own signing guard for a conflicting vote.
pub fn core_inputs(data: &[u8]) -> CoreRun {
    let mut run = CoreHarness::new();
    let mut bytes = Bytes(data);
    let mut steps = 0;
    while steps < MAX_CORE_STEPS {
        let Some(op) = bytes.read() else {
            break;
        };
        steps += 1;
        match op % 8 {
            0 | 1 => run.vote(&mut bytes),
            2 => run.proposal(&mut bytes),
            3 => run.certificate(&mut bytes),
            4 | 5 => run.timer(&mut bytes),
            _ => run.advance(&mut bytes),
        }
    }
    CoreRun {
        steps,
        accepted: run.accepted,
        view: run.core.view(),
        finalized_height: run.core.tip().height,
    }
}

/// Reads fuzz bytes one at a time.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn read(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    /// The next byte, or 0 once the input is exhausted.
    fn byte(&mut self) -> u8 {
        self.read().unwrap_or(0)
    }
}

/// A block some proposal instruction built (or genesis).
#[derive(Debug, Clone, Copy)]
struct KnownBlock {
    hash: Hash,
    view: u64,
    height: u64,
    timestamp_us: u64,
}

const MAX_KNOWN_BLOCKS: usize = 12;
/// Inputs the core handles for one instruction (its own votes and proposals fed back included).
const MAX_INPUTS_PER_STEP: usize = 256;
const TIME_STEP_US: u64 = 20_000;

struct CoreHarness {
    core: Core,
    me: VoteSigner,
    now: u64,
    /// Genesis, then proposals built so far.
    blocks: Vec<KnownBlock>,
    timers: Vec<(u64, TimerKind, u64)>,
    view: u64,
    entered: u64,
    tip: Tip,
    accepted: usize,
}

impl CoreHarness {
    fn new() -> CoreHarness {
        let f = fixture();
        let cfg = CoreConfig {
            chain_id: CHAIN_ID,
            epoch: 0,
            schedule: EpochSchedule::SINGLE,
            genesis: GENESIS,
            me: Some(0),
            block_time_us: 1_000,
            view_timeout_us: 1_000_000,
            retry_us: 100_000,
            max_future_views: 16,
            max_clock_drift_us: 1_000_000,
        };
        let tip = Tip {
            height: 0,
            hash: GENESIS,
            view: 0,
            timestamp_us: 0,
        };
        let me = VoteSigner::new(
            SecretKey::from_seed(&seed_of(0)),
            0,
            CHAIN_ID,
            0,
            domain(),
            SigningGuard::in_memory(),
        );
        let mut run = CoreHarness {
            core: Core::new(cfg, f.validators.clone(), tip),
            me,
            now: 0,
            blocks: vec![KnownBlock {
                hash: GENESIS,
                view: 0,
                height: 0,
                timestamp_us: 0,
            }],
            timers: Vec::new(),
            view: 0,
            entered: 0,
            tip,
            accepted: 0,
        };
        let actions = run.core.start(0, 0);
        let mut queue = VecDeque::new();
        run.after(actions, &mut queue);
        run.drain(queue);
        run
    }

    /// A view near the current one: −4..+3 of it (at least 1), or far ahead for the top bytes.
    fn pick_view(&self, b: u8) -> u64 {
        let near = self
            .core
            .view()
            .saturating_add(u64::from(b % 8))
            .saturating_sub(4)
            .max(1);
        if b >= 0xF8 {
            near.saturating_add(u64::from(b))
        } else {
            near
        }
    }

    /// A proposed block (not genesis) or, for one value, a hash nobody proposed.
    fn pick_block(&self, b: u8) -> (Hash, u64) {
        let proposed = self.blocks.get(1..).unwrap_or_default();
        match proposed.get(usize::from(b) % (proposed.len() + 1)) {
            Some(k) => (k.hash, k.height),
            None => ([0xEE; 32], u64::from(b % 4) + 1),
        }
    }

    fn vote(&mut self, bytes: &mut Bytes<'_>) {
        let signer = usize::from(bytes.byte()) % VALIDATORS;
        let kind = [VoteKind::Notarize, VoteKind::Finalize, VoteKind::Nullify]
            [usize::from(bytes.byte() % 3)];
        let view = self.pick_view(bytes.byte());
        let (block, mut height) = self.pick_block(bytes.byte());
        if bytes.byte() & 1 == 1 {
            height += 1;
        }
        let (block, height) = match kind {
            VoteKind::Nullify => ([0; 32], 0),
            _ => (block, height),
        };
        let message = vote_signing_message(kind, CHAIN_ID, 0, view, height, &block, &domain());
        let vote = Vote {
            kind,
            chain_id: CHAIN_ID,
            epoch: 0,
            view,
            height,
            block,
            signer: signer as u32,
            signature: sign(signer, &message).to_bytes(),
        };
        self.deliver(Message::Vote(vote));
    }

    fn proposal(&mut self, bytes: &mut Bytes<'_>) {
        let view = self.pick_view(bytes.byte());
        let parent = self.blocks[usize::from(bytes.byte()) % self.blocks.len()];
        let flags = bytes.byte();
        let txs: Vec<Vec<u8>> = {
            let b = bytes.byte();
            (0..b % 3).map(|i| vec![b, i, view as u8]).collect()
        };
        let late_us = u64::from(bytes.byte()) * 1_000;
        let proposer = if flags & 1 == 1 {
            u32::from(flags >> 1) % VALIDATORS as u32
        } else {
            self.core.leader_of(view)
        };
        let slot = ProposalSlot {
            view,
            height: parent.height + 1 + u64::from((flags >> 3) & 1),
            parent: parent.hash,
            parent_view: if flags & 0x20 == 0 {
                parent.view
            } else {
                view.saturating_sub(1)
            },
            parent_timestamp_us: parent.timestamp_us,
            exclude: Vec::new(),
            seal: false,
        };
        let now = self.now.saturating_add(late_us);
        let key = (
            proposer,
            slot.view,
            slot.height,
            slot.parent,
            slot.parent_view,
            now,
            txs,
        );
        let signed = PROPOSALS.get_or(key.clone(), || {
            // A fresh signer may sign anything, as a Byzantine leader would.
            let mut signer = VoteSigner::new(
                SecretKey::from_seed(&seed_of(proposer as usize)),
                proposer,
                CHAIN_ID,
                0,
                domain(),
                SigningGuard::in_memory(),
            );
            let (.., txs) = key;
            let signed = signer.sign_block(&slot, txs, [0; 32], now);
            signed.ok().map(|p| p.proposal().clone())
        });
        if let Some(proposal) = signed {
            self.remember(&proposal);
            self.deliver(Message::Proposal(proposal));
        }
    }

    fn remember(&mut self, proposal: &Proposal) {
        let h = &proposal.header;
        let hash = h.hash();
        if self.blocks.len() < MAX_KNOWN_BLOCKS && !self.blocks.iter().any(|b| b.hash == hash) {
            self.blocks.push(KnownBlock {
                hash,
                view: h.view,
                height: h.height,
                timestamp_us: h.timestamp_us,
            });
        }
    }

    fn certificate(&mut self, bytes: &mut Bytes<'_>) {
        let kind = [
            CertificateKind::Notarization,
            CertificateKind::Finalization,
            CertificateKind::Nullification,
        ][usize::from(bytes.byte() % 3)];
        let view = self.pick_view(bytes.byte());
        let (block, height) = match kind {
            CertificateKind::Nullification => {
                let _ = bytes.byte();
                ([0; 32], 0)
            }
            _ => self.pick_block(bytes.byte()),
        };
        let set = bytes.byte();
        let flags = bytes.byte();
        let signers: Vec<usize> = (0..VALIDATORS).filter(|i| (set >> i) & 1 == 1).collect();
        let message = vote_signing_message(
            kind.vote_kind(),
            CHAIN_ID,
            0,
            view,
            height,
            &block,
            &domain(),
        );
        let signatures: Vec<Signature> = signers.iter().map(|&i| sign(i, &message)).collect();
        let Ok(aggregate) = Signature::aggregate(&signatures) else {
            return; // No signers.
        };
        // With the flag, the bitmap claims a different set than the one that signed.
        let claimed: Vec<usize> = if flags & 1 == 1 {
            (0..VALIDATORS)
                .filter(|i| (set >> (i + 4)) & 1 == 1)
                .collect()
        } else {
            signers
        };
        self.deliver(Message::Certificate(Certificate {
            kind,
            chain_id: CHAIN_ID,
            epoch: 0,
            view,
            height,
            block,
            signers: bitmap_from_signers(claimed, VALIDATORS),
            signature: aggregate.to_bytes(),
        }));
    }

    fn timer(&mut self, bytes: &mut Bytes<'_>) {
        let which = bytes.byte();
        let b = bytes.byte();
        if which & 1 == 0 && !self.timers.is_empty() {
            let (view, kind, at_us) = self.timers.remove(usize::from(b) % self.timers.len());
            self.now = self.now.max(at_us);
            self.handle(Input::Timer { view, kind });
        } else {
            let kind = [TimerKind::Propose, TimerKind::Timeout, TimerKind::Retry]
                [usize::from(which >> 1) % 3];
            let view = self.pick_view(b);
            self.handle(Input::Timer { view, kind });
        }
    }

    fn advance(&mut self, bytes: &mut Bytes<'_>) {
        self.now = self
            .now
            .saturating_add(u64::from(bytes.byte()) * TIME_STEP_US);
        for _ in 0..16 {
            let due = self
                .timers
                .iter()
                .enumerate()
                .filter(|(_, t)| t.2 <= self.now)
                .min_by_key(|(_, t)| t.2)
                .map(|(i, _)| i);
            let Some(i) = due else {
                break;
            };
            let (view, kind, _) = self.timers.remove(i);
            self.handle(Input::Timer { view, kind });
        }
    }

    /// Sends `message` the way the network would: encoded, decoded, verified.
    fn deliver(&mut self, message: Message) {
        let encoded = message.encode().expect("a well-formed message encodes");
        let decoded = quasar_wire::decode(&encoded)
            .expect("an encoded message decodes")
            .to_owned();
        assert_eq!(decoded, message, "encoding changed the message");
        if let Some(input) = ingress(&encoded) {
            self.accepted += 1;
            self.handle(input);
        }
    }

    fn handle(&mut self, input: Input) {
        let mut queue = VecDeque::from([input]);
        self.drain_from(&mut queue);
    }

    fn drain(&mut self, mut queue: VecDeque<Input>) {
        self.drain_from(&mut queue);
    }

    fn drain_from(&mut self, queue: &mut VecDeque<Input>) {
        for _ in 0..MAX_INPUTS_PER_STEP {
            let Some(input) = queue.pop_front() else {
                return;
            };
            let actions = self.core.handle(self.now, input);
            self.after(actions, queue);
        }
    }

    /// `self.me.sign_vote(kind, view, height, block)`, with the signature memoized: the guard
    /// decides every time (the `check_and_record` the signer runs before it signs, on the same
    /// guard), and only a vote this process has not signed before meets the signer and BLS.
    fn own_vote(
        &mut self,
        kind: VoteKind,
        view: u64,
        height: u64,
        block: Hash,
    ) -> Result<VerifiedVote, SignError> {
        let key = (kind, view, height, block);
        if let Some(vote) = OWN_VOTES.get(&key) {
            let intent = VoteIntent {
                view,
                kind: guard_kind(kind),
                block,
            };
            self.me.guard_mut().check_and_record(&intent)?;
            return Ok(vote);
        }
        let (vote, _) = self.me.sign_vote(kind, view, height, block)?;
        OWN_VOTES.insert(key, vote.clone());
        Ok(vote)
    }

    /// `self.me.sign_block(slot, txs, now)`, memoized as [`CoreHarness::own_vote`] is: the guard
    /// records the leader's notarize intent for the block every time (as `sign_block` does), and
    /// a block this process has not built before meets the real signer.
    fn own_proposal(
        &mut self,
        slot: &ProposalSlot,
        txs: Vec<Vec<u8>>,
    ) -> Result<VerifiedProposal, SignError> {
        let key = (
            slot.view,
            slot.height,
            slot.parent,
            slot.parent_view,
            slot.parent_timestamp_us,
            self.now,
            txs,
        );
        if let Some(proposal) = OWN_PROPOSALS.get(&key) {
            let intent = VoteIntent {
                view: proposal.proposal().header.view,
                kind: guard_kind(VoteKind::Notarize),
                block: *proposal.hash(),
            };
            self.me.guard_mut().check_and_record(&intent)?;
            return Ok(proposal);
        }
        let proposal = self.me.sign_block(slot, key.6.clone(), [0; 32], self.now)?;
        OWN_PROPOSALS.insert(key, proposal.clone());
        Ok(proposal)
    }

    /// Checks the invariants over one batch of actions and plays the runtime's part.
    fn after(&mut self, actions: Vec<Action>, queue: &mut VecDeque<Input>) {
        let view = self.core.view();
        assert!(
            view >= self.view,
            "view went back from {} to {view}",
            self.view
        );
        self.view = view;
        for action in actions {
            match action {
                Action::Finalized(f) => {
                    let h = &f.proposal.header;
                    assert_eq!(
                        h.height,
                        self.tip.height + 1,
                        "finalized height {} after tip {}",
                        h.height,
                        self.tip.height
                    );
                    assert_eq!(
                        h.parent, self.tip.hash,
                        "finalized block does not extend tip"
                    );
                    assert_eq!(f.hash, h.hash(), "finalized hash is not the header's");
                    self.tip = Tip {
                        height: h.height,
                        hash: f.hash,
                        view: h.view,
                        timestamp_us: h.timestamp_us,
                    };
                }
                Action::EnteredView { view, .. } => {
                    assert!(view > self.entered, "entered {view} after {}", self.entered);
                    self.entered = view;
                }
                Action::Broadcast(Message::Certificate(c)) | Action::Certified(c) => {
                    check_certificate(c);
                }
                Action::Broadcast(_) | Action::Fetch { .. } | Action::Evidence(_) => {}
                // The application's verdict: one block in eight does not execute.
                Action::Verify { view, block } => queue.push_back(Input::Verified {
                    view,
                    block,
                    valid: block[0] % 8 != 0,
                }),
                Action::EpochEnded { .. } => panic!("an epoch ended on a chain with one epoch"),
                Action::SetTimer { view, kind, at_us } => {
                    self.timers.retain(|t| (t.0, t.1) != (view, kind));
                    if self.timers.len() < 64 {
                        self.timers.push((view, kind, at_us));
                    }
                }
                Action::Vote {
                    kind,
                    view,
                    height,
                    block,
                } => match self.own_vote(kind, view, height, block) {
                    Ok(vote) => queue.push_back(Input::Vote(vote)),
                    Err(e) => refused(e),
                },
                Action::Propose(slot) => {
                    let txs = vec![slot.view.to_le_bytes().to_vec()];
                    match self.own_proposal(&slot, txs) {
                        Ok(proposal) => {
                            self.remember(proposal.proposal());
                            queue.push_back(Input::Proposal(Box::new(proposal)));
                        }
                        Err(e) => refused(e),
                    }
                }
            }
        }
        let tip = self.core.tip();
        assert!(
            tip.height == self.tip.height && tip.hash == self.tip.hash,
            "core tip {tip:?} is not the last finalized block {:?}",
            self.tip
        );
    }
}

/// Panics unless `c`, a certificate the core sent or reported, verifies under the fixture set
/// (memoized by its encoding).
fn check_certificate(c: Certificate) {
    static VERDICTS: Memo<Vec<u8>, Result<(), String>> = Memo::new();
    let Ok(encoded) = Message::Certificate(c.clone()).encode() else {
        panic!("the core sent a certificate that does not encode: {c:?}");
    };
    let verdict = VERDICTS.get_or(encoded, || {
        fixture()
            .verifier
            .verify_certificate(c.clone())
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    if let Err(e) = verdict {
        panic!("the core sent a certificate that does not verify ({e}): {c:?}");
    }
}

/// The core never asks for a vote that conflicts with one it signed; the guard's window may
/// refuse a vote for a view long past, which the runtime drops the same way.
fn refused(error: SignError) {
    match error {
        SignError::Guard(GuardError::TooOld { .. }) => {}
        other => panic!("the core asked its signing guard for a refused vote: {other}"),
    }
}

/// Digest signed in the [`rollup_signature`] fixture.
pub const ROLLUP_DIGEST: [u8; 32] = [0x52; 32];

/// The rollup shape, validator set and public keys.
type RollupFixture = (Shape, Arc<[RollupValidator]>, Vec<MlDsaPublicKey<MlDsa65>>);

/// The rollup fixture: ML-DSA-65 validators `0..VALIDATORS` with stake 1 and keys
/// `mldsa::SecretKey::from_seed(&[i + 1; 32])`, τ = 3.
fn rollup_fixture() -> &'static RollupFixture {
    static FIXTURE: OnceLock<RollupFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let keys: Vec<MlDsaPublicKey<MlDsa65>> = (0..VALIDATORS)
            .map(|i| {
                MlDsaSecretKey::<MlDsa65>::from_seed(&seed_of(i))
                    .public_key()
                    .clone()
            })
            .collect();
        let validators = keys
            .iter()
            .map(|pk| RollupValidator {
                key: ExpandedKey::from_public_key(&ML_DSA_65, pk.as_bytes())
                    .expect("a generated key expands"),
                stake: 1,
            })
            .collect();
        let shape = Shape {
            params: ML_DSA_65,
            validators: VALIDATORS,
            slots: 3,
        };
        (shape, validators, keys)
    })
}

/// The rollup signature collector on peer bytes: `data[0]` is the claimed signer (any byte,
/// so unknown validators too), the rest the signature on [`ROLLUP_DIGEST`]. Never panics; a
/// signature the collector accepts verifies under libcrux's ML-DSA-65 (so the circuit's
/// decomposed verification accepts nothing FIPS 204 rejects), and one libcrux accepts is
/// accepted unless its challenge exceeds the circuit's SampleInBall bound.
pub fn rollup_signature(data: &[u8]) {
    let Some((&signer, signature)) = data.split_first() else {
        return;
    };
    let (shape, validators, keys) = rollup_fixture();
    let Ok(mut window) = WindowCollector::new(*shape, validators.clone(), 0, ROLLUP_DIGEST) else {
        panic!("the fixture's set fits its shape");
    };
    let result = window.add(usize::from(signer), signature);
    let reference = keys.get(usize::from(signer)).map(|pk| {
        MlDsaSignature::<MlDsa65>::from_bytes(signature)
            .and_then(|sig| pk.verify(&ROLLUP_DIGEST, ROLLUP_CONTEXT, &sig))
            .is_ok()
    });
    match (result, reference) {
        (Ok(_), Some(true)) => {}
        (Ok(_), _) => panic!("the collector accepted a signature FIPS 204 rejects"),
        (Err(CollectError::Rejected(RollupError::ChallengeTooLong(_))), Some(true)) => {}
        (Err(e), Some(true)) => panic!("the collector refused a valid signature: {e}"),
        (Err(_), _) => {}
    }
}
