//! The node side of the Groth16 rollup (issue 6; docs/architecture.md §3: the Groth16 proof is produced
//! asynchronously, once per window of blocks): collecting the validators' ML-DSA-65 signatures
//! on a window's digest, and proving off the consensus path.
//!
//! - [`WindowCollector`] is pure (no I/O, no clock): it takes signatures as they arrive from
//!   peers, checks each one at once against its signer's key exactly as the circuit will (so a
//!   bad signature is blamed on the peer that sent it, not discovered after minutes of
//!   proving), and says when the signatures it holds can prove a quorum. Then it yields the
//!   checked witness.
//! - [`AsyncProver`] runs proofs on one dedicated thread (a proof uses every core through rayon
//!   and gigabytes of memory, so two at once would only thrash), fed by a one-slot queue: a
//!   newer window replaces a window still waiting, because a node that cannot keep up must
//!   catch up with the chain rather than fall further behind, and a window without a proof
//!   keeps the finality tier it reached (docs/architecture.md §3). Results arrive on a tokio channel, so
//!   the consensus task never blocks on proving. The FFTs and MSMs go through the
//!   batched-arithmetic backend it is given (`quasar_crypto::accel`), so the GPU adapter can
//!   take them over.
//!
//! - [`WindowProver`] puts both together for a validator configured with a proving key: one
//!   collector per bundle waiting for its Groth16 leg (a window is a bundle; its digest is the
//!   bundle digest), the newest window that can prove a quorum sent to the prover, finished
//!   proofs encoded as Groth16 legs. The Quasar service (`crate::quasar_service`) drives it:
//!   every validator signs each closed bundle's digest and gossips the signature, and a
//!   validator that proves gossips the leg.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use ark_bls12_381::Fr;
use ark_relations::gr1cs::ConstraintSynthesizer;
use quasar_crypto::accel::BatchArithmetic;
use quasar_crypto::rollup::circuit::{
    check_signature, choose_signers, is_quorum, total_stake, RollupCircuit, RollupError,
    RollupWitness, Shape, Statement, Validator,
};
use quasar_crypto::rollup::native::{DecodedSignature, ML_DSA_65};
use quasar_crypto::rollup::prover::{
    create_random_proof, read_proving_key, read_proving_key_shape, Proof, ProveTimings,
    ProverError, ProvingKey,
};
use quasar_lanes::cert::{encode_groth16_leg, RollupKey};
use quasar_lanes::groth16::{Proof as LegProof, VerifyingKey};
use rand::rngs::OsRng;
use thiserror::Error;
use tokio::sync::mpsc;

/// Why a signature was not added to a window. Every variant is the sender's fault: drop the
/// signature (and count it against the peer that relayed it); the window is unchanged.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CollectError {
    /// The signer index is not a validator of the window's set.
    #[error("validator {0} is not in the window's validator set")]
    UnknownValidator(usize),
    /// The window already holds this validator's signature.
    #[error("validator {0} already signed this window")]
    Duplicate(usize),
    /// The bytes are not an ML-DSA signature of the set's parameter set.
    #[error("signature of validator {validator}: {reason}")]
    Malformed {
        /// The claimed signer.
        validator: usize,
        /// What is wrong with the encoding.
        reason: String,
    },
    /// The signature does not verify on the window's digest, or the circuit cannot take it.
    #[error(transparent)]
    Rejected(#[from] RollupError),
}

/// The signatures of one window's digest, as they arrive (module docs).
#[derive(Debug)]
pub struct WindowCollector {
    shape: Shape,
    validators: Arc<[Validator]>,
    window: u64,
    digest: [u8; 32],
    signatures: BTreeMap<usize, DecodedSignature>,
}

impl WindowCollector {
    /// An empty collector for window number `window` with digest μ = `digest`, for the
    /// validator set `validators` (in the order h_x commits to) and the proving key's `shape`.
    /// Errors: [`RollupError::ValidatorCount`] when the set does not have the shape's n.
    pub fn new(
        shape: Shape,
        validators: Arc<[Validator]>,
        window: u64,
        digest: [u8; 32],
    ) -> Result<WindowCollector, RollupError> {
        if validators.len() != shape.validators {
            return Err(RollupError::ValidatorCount {
                got: validators.len(),
                expected: shape.validators,
            });
        }
        Ok(WindowCollector {
            shape,
            validators,
            window,
            digest,
            signatures: BTreeMap::new(),
        })
    }

    /// Adds validator `validator`'s signature (FIPS 204 encoding, context
    /// `quasar_crypto::rollup::circuit::ROLLUP_CONTEXT`) after checking it (module docs);
    /// returns [`WindowCollector::is_ready`]. Errors: [`CollectError`], nothing added.
    pub fn add(&mut self, validator: usize, signature: &[u8]) -> Result<bool, CollectError> {
        let key = self
            .validators
            .get(validator)
            .ok_or(CollectError::UnknownValidator(validator))?;
        if self.signatures.contains_key(&validator) {
            return Err(CollectError::Duplicate(validator));
        }
        let signature =
            DecodedSignature::from_bytes(&self.shape.params, signature).map_err(|e| {
                CollectError::Malformed {
                    validator,
                    reason: e.to_string(),
                }
            })?;
        check_signature(&self.shape.params, key, validator, &self.digest, &signature)?;
        self.signatures.insert(validator, signature);
        Ok(self.is_ready())
    }

    /// Whether the signatures held can prove a quorum: at least τ of them, and the τ that
    /// [`choose_signers`] picks hold more than 2/3 of the stake.
    pub fn is_ready(&self) -> bool {
        let held = self.signatures.keys().map(|&i| (i, ())).collect();
        let chosen = choose_signers(&self.shape, &self.validators, held);
        let signed = chosen
            .iter()
            .filter_map(|(i, ())| self.validators.get(*i))
            .map(|v| u128::from(v.stake))
            .sum();
        chosen.len() == self.shape.slots && is_quorum(signed, total_stake(&self.validators))
    }

    /// The window number.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// How many valid signatures the window holds.
    pub fn signatures(&self) -> usize {
        self.signatures.len()
    }

    /// The proof request for this window and the statement the proof will show. Errors: the
    /// [`RollupError`] of [`RollupWitness::new`] (e.g. [`RollupError::SignatureCount`] or
    /// [`RollupError::NoQuorum`] when the window is not ready).
    pub fn into_request(self) -> Result<(ProofRequest<RollupCircuit>, Statement), RollupError> {
        let held = self.signatures.into_iter().collect();
        let chosen = choose_signers(&self.shape, &self.validators, held);
        let witness =
            RollupWitness::new(self.shape, self.validators.to_vec(), chosen, self.digest)?;
        let statement = witness.statement();
        Ok((
            ProofRequest {
                window: self.window,
                circuit: RollupCircuit::for_proof(witness),
            },
            statement,
        ))
    }
}

/// One validator set as the rollup proves for it: its validators in the order h_x commits to,
/// and its rollup key.
#[derive(Clone, Debug)]
pub struct RollupSet {
    /// Expanded ML-DSA-65 keys and stakes, by index in the set.
    pub validators: Arc<[Validator]>,
    /// The set's verifying key and h_x.
    pub key: RollupKey,
}

/// A circuit to prove for window number `window`.
#[derive(Debug)]
pub struct ProofRequest<C> {
    /// The window the proof is for (windows only move forward).
    pub window: u64,
    /// The assigned circuit.
    pub circuit: C,
}

/// The result of one [`ProofRequest`].
#[derive(Debug)]
pub struct ProofOutcome {
    /// The request's window.
    pub window: u64,
    /// The proof and the time each phase took, or why proving failed.
    pub result: Result<(Proof, ProveTimings), ProverError>,
}

/// What [`AsyncProver::submit`] did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// Queued; nothing was waiting.
    Queued,
    /// Queued in place of the request for this (older) window, which is dropped unproved.
    Replaced(u64),
    /// Refused: a request for this window or a later one is already waiting or being proved.
    Stale,
}

/// Proofs on a dedicated thread with a one-slot queue (module docs).
pub struct AsyncProver<C> {
    shared: Arc<Shared<C>>,
    thread: Option<JoinHandle<()>>,
}

struct Shared<C> {
    state: Mutex<State<C>>,
    wake: Condvar,
}

struct State<C> {
    pending: Option<ProofRequest<C>>,
    proving: Option<u64>,
    closed: bool,
}

impl<C> Shared<C> {
    fn lock(&self) -> MutexGuard<'_, State<C>> {
        // The state is three plain fields, valid after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C: ConstraintSynthesizer<Fr> + Send + 'static> AsyncProver<C> {
    /// Starts the proving thread for `pk`, running FFTs and MSMs on `backend` and sending each
    /// [`ProofOutcome`] to `results`. The thread stops when the prover is dropped (after the
    /// proof in progress, whose outcome is then discarded) or when `results` is closed.
    /// Errors: the OS cannot start a thread.
    pub fn start(
        pk: Arc<ProvingKey>,
        backend: Arc<dyn BatchArithmetic>,
        results: mpsc::Sender<ProofOutcome>,
    ) -> std::io::Result<AsyncProver<C>> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: None,
                proving: None,
                closed: false,
            }),
            wake: Condvar::new(),
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rollup-prover".into())
            .spawn(move || run(&worker, &pk, backend.as_ref(), &results))?;
        Ok(AsyncProver {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `request` (see [`Submitted`] for what happens to an older waiting request).
    pub fn submit(&self, request: ProofRequest<C>) -> Submitted {
        let mut state = self.shared.lock();
        let newest = state.pending.as_ref().map(|p| p.window).max(state.proving);
        if newest.is_some_and(|w| w >= request.window) {
            return Submitted::Stale;
        }
        let outcome = match state.pending.replace(request) {
            Some(old) => Submitted::Replaced(old.window),
            None => Submitted::Queued,
        };
        drop(state);
        self.shared.wake.notify_one();
        outcome
    }

    /// The window being proved now, if any.
    pub fn proving(&self) -> Option<u64> {
        self.shared.lock().proving
    }
}

impl<C> Drop for AsyncProver<C> {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_all();
        // Not joined: a proof in progress may take minutes, and dropping must not block the
        // caller (often an async task). The thread exits when that proof is done.
        drop(self.thread.take());
    }
}

/// The proving thread: waits for a request, proves it, sends the outcome; until closed.
fn run<C: ConstraintSynthesizer<Fr>>(
    shared: &Shared<C>,
    pk: &ProvingKey,
    backend: &dyn BatchArithmetic,
    results: &mpsc::Sender<ProofOutcome>,
) {
    loop {
        let request = {
            let mut state = shared.lock();
            loop {
                if state.closed {
                    return;
                }
                if let Some(request) = state.pending.take() {
                    state.proving = Some(request.window);
                    break request;
                }
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        let result = create_random_proof(pk, request.circuit, backend, &mut OsRng);
        let closed = {
            let mut state = shared.lock();
            state.proving = None;
            state.closed
        };
        let outcome = ProofOutcome {
            window: request.window,
            result,
        };
        if closed || results.blocking_send(outcome).is_err() {
            return;
        }
    }
}

/// Why a validator's proving key cannot serve the genesis it runs under.
#[derive(Debug, Error)]
pub enum ProverSetupError {
    /// The file cannot be read, or its header is not a rollup proving key.
    #[error("rollup proving key {path}: {source}")]
    Key {
        /// The configured path.
        path: PathBuf,
        /// What went wrong.
        source: ProverError,
    },
    /// The key is for another validator set shape or parameter set than the genesis's.
    #[error("rollup proving key {path} is for {got}, the genesis has {expected}")]
    Shape {
        /// The configured path.
        path: PathBuf,
        /// The key's shape, in words.
        got: String,
        /// The genesis's, in words.
        expected: String,
    },
}

/// A Groth16 leg this validator proved: the bundle closing at `window` and the leg body
/// (`quasar_lanes::cert::encode_groth16_leg`).
#[derive(Debug)]
pub struct ProvedLeg {
    /// The window (closing height of the bundle).
    pub window: u64,
    /// The leg body.
    pub body: Vec<u8>,
    /// The phase times of the proof.
    pub timings: ProveTimings,
}

/// What [`WindowProver::poll`] reports.
#[derive(Debug)]
pub enum ProverEvent {
    /// The proving key finished loading and matches the genesis: proving starts.
    Ready,
    /// The proving key cannot be used (wrong file, or a key for another setup); this validator
    /// does not prove.
    KeyRefused(String),
    /// A leg was proved.
    Proved(ProvedLeg),
    /// Proving window `window` failed.
    Failed {
        /// The window.
        window: u64,
        /// Why.
        reason: String,
    },
}

/// A loaded proving key's prover, or why the key was refused.
type Loaded = Result<AsyncProver<RollupCircuit>, String>;

/// The proving side of the Groth16 leg for a validator configured with a proving key: one
/// [`WindowCollector`] per bundle waiting for the leg, and the [`AsyncProver`] that proves the
/// newest bundle whose signatures hold a quorum (module docs). Windows are identified by their
/// bundle's closing height.
///
/// The key (gigabytes) loads on its own thread, so the node starts at once; signatures are
/// collected meanwhile, and the newest ready window is proved when the key is ready. A key
/// whose verifying key is not the genesis's is refused then ([`ProverEvent::KeyRefused`]).
///
/// Each window is proved for its own validator set ([`RollupSet`], given when it opens): one
/// proving key serves every set of its shape (validator count and signature slots) whose
/// verifying key is the key's.
pub struct WindowProver {
    shape: Shape,
    /// The verifying key of the proving key.
    verifying_key: VerifyingKey,
    collectors: BTreeMap<u64, WindowCollector>,
    /// Windows handed to the prover, with their digests and their sets' h_x.
    submitted: BTreeMap<u64, ([u8; 32], Fr)>,
    /// The h_x of each open window's set.
    commitments: BTreeMap<u64, Fr>,
    prover: Option<AsyncProver<RollupCircuit>>,
    loading: Option<std::sync::mpsc::Receiver<Loaded>>,
    results: mpsc::Receiver<ProofOutcome>,
}

impl WindowProver {
    /// Checks the header of the proving key at `path` against `set` (a validator set this
    /// validator proves for) and ML-DSA-65, then starts loading the key on its own thread; the
    /// loaded key must have `set`'s verifying key. Proofs run on `backend`.
    /// Errors: [`ProverSetupError`]; a thread the OS refuses is reported as a key error.
    pub fn start(
        path: &Path,
        set: &RollupSet,
        backend: Arc<dyn BatchArithmetic>,
    ) -> Result<WindowProver, ProverSetupError> {
        let validators = &set.validators;
        let key_error = |source| ProverSetupError::Key {
            path: path.to_path_buf(),
            source,
        };
        let open = || File::open(path).map_err(|e| key_error(ProverError::Io(e)));
        let shape = read_proving_key_shape(BufReader::new(open()?)).map_err(key_error)?;
        if shape.params != ML_DSA_65
            || shape.validators != validators.len()
            || !(1..=shape.validators).contains(&shape.slots)
        {
            return Err(ProverSetupError::Shape {
                path: path.to_path_buf(),
                got: format!(
                    "{} validators of {} with {} signature slots",
                    shape.validators, shape.params.name, shape.slots
                ),
                expected: format!(
                    "{} validators of {} (1 to {0} slots)",
                    validators.len(),
                    ML_DSA_65.name
                ),
            });
        }
        let (results_tx, results) = mpsc::channel(4);
        let (loaded_tx, loading) = std::sync::mpsc::sync_channel(1);
        let file = open()?;
        let expected = set.key.verifying_key.as_ark().clone();
        let shown = path.display().to_string();
        std::thread::Builder::new()
            .name("rollup-key-loader".into())
            .spawn(move || {
                let loaded = read_proving_key(BufReader::new(file))
                    .map_err(|e| format!("{shown}: {e}"))
                    .and_then(|(_, pk)| {
                        if pk.vk != expected {
                            return Err(format!(
                                "{shown} is not the proving key of the genesis's \
                                 rollup_verifying_key (another setup)"
                            ));
                        }
                        AsyncProver::start(Arc::new(pk), backend, results_tx)
                            .map_err(|e| format!("prover thread: {e}"))
                    });
                // The receiver is gone only when the node is stopping.
                let _ = loaded_tx.send(loaded);
            })
            .map_err(|e| key_error(ProverError::Io(e)))?;
        Ok(WindowProver {
            shape,
            verifying_key: set.key.verifying_key.clone(),
            collectors: BTreeMap::new(),
            submitted: BTreeMap::new(),
            commitments: BTreeMap::new(),
            prover: None,
            loading: Some(loading),
            results,
        })
    }

    /// Whether this prover's key can prove windows of `set`: the set has the key's shape and
    /// verifying key (the one [`WindowProver::start`] was given).
    pub fn serves(&self, set: &RollupSet) -> bool {
        set.validators.len() == self.shape.validators
            && set.key.verifying_key.as_ark() == self.verifying_key.as_ark()
    }

    /// Opens window `window` (a bundle waiting for its Groth16 leg) with round digest `digest`,
    /// signed by the validators of `set` (see [`WindowProver::serves`]). Opening an open,
    /// submitted or older-than-proving window does nothing; a set of another size is not
    /// opened (logged).
    pub fn open(&mut self, window: u64, digest: [u8; 32], set: &RollupSet) {
        if !self.is_active()
            || self.collectors.contains_key(&window)
            || self.submitted.contains_key(&window)
        {
            return;
        }
        match WindowCollector::new(self.shape, Arc::clone(&set.validators), window, digest) {
            Ok(collector) => {
                self.collectors.insert(window, collector);
                self.commitments.insert(window, set.key.h_x);
            }
            Err(error) => tracing::error!(window, %error, "rollup window not opened"),
        }
    }

    /// Whether `window` is open (collecting signatures).
    pub fn is_open(&self, window: u64) -> bool {
        self.collectors.contains_key(&window)
    }

    /// Adds validator `validator`'s signature on window `window`'s digest; a window whose
    /// signatures now hold a quorum goes to the prover (once the key is loaded). A signature
    /// for a window that is not open (already submitted, never opened) is ignored: `Ok(())`.
    /// Errors: [`CollectError`] (the sender's fault; nothing changed).
    pub fn add(
        &mut self,
        window: u64,
        validator: usize,
        signature: &[u8],
    ) -> Result<(), CollectError> {
        let Some(collector) = self.collectors.get_mut(&window) else {
            return Ok(());
        };
        if collector.add(validator, signature)? {
            self.submit_ready();
        }
        Ok(())
    }

    /// Hands the newest window that can prove a quorum to the prover, if the key is loaded;
    /// older ready windows are given up (the prover could not catch up with them).
    fn submit_ready(&mut self) {
        let Some(prover) = &self.prover else {
            return;
        };
        let Some(&window) = self
            .collectors
            .iter()
            .rev()
            .find(|(_, c)| c.is_ready())
            .map(|(w, _)| w)
        else {
            return;
        };
        let Some(collector) = self.collectors.remove(&window) else {
            return;
        };
        let digest = collector.digest;
        let Some(h_x) = self.commitments.remove(&window) else {
            return;
        };
        match collector.into_request() {
            Ok((request, _)) => match prover.submit(request) {
                Submitted::Stale => {
                    tracing::debug!(window, "rollup window older than the one being proved");
                }
                Submitted::Queued => {
                    self.submitted.insert(window, (digest, h_x));
                }
                Submitted::Replaced(older) => {
                    tracing::debug!(
                        window,
                        older,
                        "rollup window replaces one still waiting to be proved"
                    );
                    self.submitted.remove(&older);
                    self.submitted.insert(window, (digest, h_x));
                }
            },
            Err(error) => tracing::error!(window, %error, "rollup witness refused"),
        }
    }

    /// Collects what happened since the last call: the key loading, finished proofs.
    pub fn poll(&mut self) -> Vec<ProverEvent> {
        let mut events = Vec::new();
        if let Some(loading) = &self.loading {
            match loading.try_recv() {
                Ok(Ok(prover)) => {
                    self.prover = Some(prover);
                    self.loading = None;
                    events.push(ProverEvent::Ready);
                    self.submit_ready();
                }
                Ok(Err(reason)) => {
                    self.loading = None;
                    self.collectors.clear();
                    self.commitments.clear();
                    events.push(ProverEvent::KeyRefused(reason));
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.loading = None;
                    events.push(ProverEvent::KeyRefused("the key loader stopped".into()));
                }
            }
        }
        while let Ok(outcome) = self.results.try_recv() {
            let Some((digest, h_x)) = self.submitted.remove(&outcome.window) else {
                continue;
            };
            events.push(
                match outcome
                    .result
                    .map_err(|e| e.to_string())
                    .and_then(|(proof, timings)| {
                        let proof = LegProof::from_ark(&proof).map_err(|e| e.to_string())?;
                        Ok(ProvedLeg {
                            window: outcome.window,
                            body: encode_groth16_leg(&proof, &digest, &h_x),
                            timings,
                        })
                    }) {
                    Ok(leg) => ProverEvent::Proved(leg),
                    Err(reason) => ProverEvent::Failed {
                        window: outcome.window,
                        reason,
                    },
                },
            );
        }
        events
    }

    /// Whether this validator can still prove (its key is loading or loaded).
    pub fn is_active(&self) -> bool {
        self.loading.is_some() || self.prover.is_some()
    }

    /// Keeps the open windows for which `keep` holds (those still waiting for the leg).
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        self.collectors.retain(|&w, _| keep(w));
        let collectors = &self.collectors;
        self.commitments.retain(|w, _| collectors.contains_key(w));
    }
}
