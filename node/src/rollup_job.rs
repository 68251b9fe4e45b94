//! The node side of the Groth16 rollup (issue 6; DESIGN.md §3: "the Groth16 rollup is produced
//! asynchronously once per window of W blocks"): collecting the validators' ML-DSA-65 signatures
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
//!   keeps the finality tier it reached (DESIGN.md §3). Results arrive on a tokio channel, so
//!   the consensus task never blocks on proving. The FFTs and MSMs go through the
//!   batched-arithmetic backend it is given (`quasar_crypto::accel`), so the GPU adapter can
//!   take them over.
//!
//! Wiring both into consensus (who signs which window digest, gossip of the signatures,
//! attaching the proof to the block that closes the window) is the QuasarCert issue's work.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use ark_bls12_381::Fr;
use ark_relations::gr1cs::ConstraintSynthesizer;
use quasar_crypto::accel::BatchArithmetic;
use quasar_crypto::rollup::circuit::{
    check_signature, choose_signers, is_quorum, total_stake, RollupCircuit, RollupError,
    RollupWitness, Shape, Statement, Validator,
};
use quasar_crypto::rollup::native::DecodedSignature;
use quasar_crypto::rollup::prover::{
    create_random_proof, Proof, ProveTimings, ProverError, ProvingKey,
};
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
