//! The dispatcher: many callers' ring requests stacked into dense batches (docs/architecture.md §7).
//!
//! This is the rectangular scheduler of the Aegis study ("Architectural Limits of Cloud TPUs in
//! Finite-Field Cryptography"): an accelerator is fed best with one tall, homogeneous batch, while
//! a validator produces many short requests (one Corona verify needs a handful of NTTs, one
//! ML-DSA verify a few dozen) from many threads. Each caller's rows join the queue of its
//! workload, `(class, op)`: one queue per ring class and operation, so moduli are never mixed in
//! one dispatch. A queue goes out as one batch when it holds [`DispatchConfig::max_batch_rows`]
//! rows or when a request in it has waited [`DispatchConfig::deadline`], whichever comes first;
//! each caller then gets back its own rows.
//!
//! There is no dispatch thread: the caller whose request fills a queue, or whose deadline
//! passes, computes the batch on its own thread and replies to the others (flat combining).
//! Handing work to a sleeping thread and back costs two wake-ups, tens of microseconds on a
//! virtual machine, which is as much as 64 NTTs on the CPU reference.
//!
//! # Exactness and isolation
//!
//! A caller receives exactly what an isolated call on the backend would give it:
//! - rows are independent in every backend (the [`BatchArithmetic`] contract), so a row's result
//!   does not depend on its neighbours;
//! - a caller's malformed call (a buffer that is not whole rows, operands of different lengths)
//!   is refused before it is queued, so it never reaches a batch;
//! - a row with a value ≥ q fails inside the batch for its caller alone, with the row index
//!   counted within that caller's buffer, and is returned unchanged;
//! - if the backend fails a whole batch (no kernel, a device error, a panic, a reply of the wrong
//!   length), each of its callers computes its own request on the CPU
//!   ([`crate::SimdCpuBackend`], bit-identical to the reference [`CpuBackend`]) from its
//!   untouched buffer, with a log line and a count in [`QueueStats::fallbacks`]. A caller never
//!   sees a device failure; `fallbacks` also counts batches of a workload the backend has no
//!   kernel for.
//!
//! # What is not stacked
//!
//! F_r NTTs and MSMs ([`BatchArithmetic::scalar_ntt`], [`BatchArithmetic::msm_g1`],
//! [`BatchArithmetic::msm_g2`]) go straight to the backend on the caller's thread, falling back
//! to the CPU when the backend has no kernel: one Groth16 request is already 2^10..2^22 values
//! or points, enough to fill a device alone, and its bases are borrowed from the caller (stacking
//! would copy megabytes per request).

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ark_bls12_381::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use quasar_crypto::accel::{
    check_call, AccelError, BatchArithmetic, CpuBackend, MsmRequest, MsmResults, NttClass, RingOp,
    RowResults, ScalarTransform,
};

/// The largest [`BatchArithmetic::row_granularity`] the dispatcher honours (a larger one is
/// treated as this many rows), so a backend's odd answer cannot make every batch gigabytes of
/// padding.
pub const MAX_GRANULARITY: usize = 1024;

/// When a queue is sent out as a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchConfig {
    /// A queue holding at least this many rows goes out at once (the batch's capacity; a single
    /// request larger than it goes out alone). At least 1.
    pub max_batch_rows: usize,
    /// A queue goes out when its oldest request has waited this long, full or not.
    pub deadline: Duration,
}

impl Default for DispatchConfig {
    /// 1024 rows (2 MiB of Corona rows), 100 µs.
    fn default() -> DispatchConfig {
        DispatchConfig {
            max_batch_rows: 1024,
            deadline: Duration::from_micros(100),
        }
    }
}

/// A queue: one ring class and one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QueueKey {
    /// The ring.
    pub class: NttClass,
    /// The operation.
    pub op: RingOp,
}

/// What one queue has done since the dispatcher started (see [`Dispatcher::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Batches sent to the backend.
    pub batches: u64,
    /// Requests (calls) served.
    pub requests: u64,
    /// Rows of those requests.
    pub rows: u64,
    /// Zero rows added to reach the backend's [`BatchArithmetic::row_granularity`].
    pub padding_rows: u64,
    /// Sum over requests of the time from queueing to the start of their batch.
    pub queue_wait: Duration,
    /// The longest such wait.
    pub max_queue_wait: Duration,
    /// Time spent on batches by the callers that led them (stacking, the backend, replies).
    pub busy: Duration,
    /// Batches the backend failed whole (their callers computed them on the CPU).
    pub fallbacks: u64,
}

impl QueueStats {
    /// Mean rows per batch over `capacity` ([`DispatchConfig::max_batch_rows`]), in [0, 1]
    /// (above 1 only when single requests exceeded the capacity); 0 before any batch.
    pub fn fill(&self, capacity: usize) -> f64 {
        if self.batches == 0 || capacity == 0 {
            return 0.0;
        }
        self.rows as f64 / (self.batches as f64 * capacity as f64)
    }

    /// Padding rows over all rows computed, in [0, 1); 0 before any batch.
    pub fn padding_waste(&self) -> f64 {
        let computed = self.rows + self.padding_rows;
        if computed == 0 {
            return 0.0;
        }
        self.padding_rows as f64 / computed as f64
    }

    /// Mean queue wait per request; zero before any request.
    pub fn mean_queue_wait(&self) -> Duration {
        match u32::try_from(self.requests) {
            Ok(n) if n > 0 => self.queue_wait / n,
            _ => Duration::ZERO,
        }
    }

    /// Rows computed per second of busy time; 0 before any batch.
    pub fn rows_per_second(&self) -> f64 {
        let busy = self.busy.as_secs_f64();
        if busy == 0.0 {
            return 0.0;
        }
        self.rows as f64 / busy
    }
}

/// A [`BatchArithmetic`] that stacks concurrent callers' ring requests into batches for a
/// backend (see the module docs). Share it by reference or `Arc` between the calling threads.
pub struct Dispatcher {
    backend: Arc<dyn BatchArithmetic>,
    config: DispatchConfig,
    queues: Mutex<Queues>,
    stats: Mutex<HashMap<QueueKey, QueueStats>>,
    buffers: BufferPool,
}

/// Stacking buffers kept for reuse. A batch buffer is easily 128 KiB or more, the size from
/// which the allocator maps fresh pages for each allocation and unmaps them on free; the page
/// faults and the unmapping's TLB shootdown cost more than the NTTs of a small batch.
#[derive(Default)]
struct BufferPool(Mutex<Vec<Vec<u64>>>);

impl BufferPool {
    /// Buffers kept at most (a few batches in flight at once).
    const KEEP: usize = 8;

    /// A buffer holding `parts` one after another, then zeros up to `len` values.
    fn filled<'a>(&self, parts: impl IntoIterator<Item = &'a [u64]>, len: usize) -> Vec<u64> {
        let mut buffer = lock(&self.0).pop().unwrap_or_default();
        buffer.clear();
        for part in parts {
            buffer.extend_from_slice(part);
        }
        buffer.resize(len, 0);
        buffer
    }

    /// Returns a buffer for reuse.
    fn recycle(&self, buffer: Vec<u64>) {
        let mut pool = lock(&self.0);
        if pool.len() < Self::KEEP && buffer.capacity() > 0 {
            pool.push(buffer);
        }
    }
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("backend", &self.backend.name())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A request waiting in a queue.
struct Pending {
    /// Tells the caller's request apart from the others in its queue.
    id: u64,
    /// The caller's rows (a copy; the caller's own buffer keeps the inputs).
    rows: Vec<u64>,
    /// The second operand of a pointwise product (empty otherwise).
    rhs: Vec<u64>,
    queued: Instant,
    reply: SyncSender<Completed>,
}

/// A request's outcome, sent back to its caller.
enum Completed {
    /// The request's rows as computed, and its per-row results.
    Done { rows: Vec<u64>, results: RowResults },
    /// The backend failed the batch: the caller computes its request on the CPU reference.
    OnCpu,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Pending>,
    rows: usize,
}

#[derive(Default)]
struct Queues {
    by_key: HashMap<QueueKey, Queue>,
    next_id: u64,
}

/// Locks a mutex, taking the data of a poisoned one (every critical section here leaves its
/// data consistent before anything that could panic).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Queue {
    /// Requests from the front, up to `max_rows` rows (at least one request).
    fn take_batch(&mut self, degree: usize, max_rows: usize) -> Vec<Pending> {
        let mut batch = Vec::new();
        let mut rows = 0;
        while let Some(next) = self.pending.front() {
            let n = next.rows.len() / degree;
            if !batch.is_empty() && rows + n > max_rows {
                break;
            }
            rows += n;
            if let Some(next) = self.pending.pop_front() {
                batch.push(next);
            }
        }
        self.rows -= rows;
        batch
    }
}

impl Dispatcher {
    /// A dispatcher in front of `backend` (`max_batch_rows` raised to at least 1).
    pub fn new(backend: Arc<dyn BatchArithmetic>, config: DispatchConfig) -> Dispatcher {
        Dispatcher {
            backend,
            config: DispatchConfig {
                max_batch_rows: config.max_batch_rows.max(1),
                ..config
            },
            queues: Mutex::new(Queues::default()),
            stats: Mutex::new(HashMap::new()),
            buffers: BufferPool::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> DispatchConfig {
        self.config
    }

    /// Every queue that has served a request, with its counters, in a stable order.
    pub fn stats(&self) -> Vec<(QueueKey, QueueStats)> {
        let mut stats: Vec<_> = lock(&self.stats).iter().map(|(k, s)| (*k, *s)).collect();
        stats.sort_by_key(|(k, _)| (k.class.name(), k.op.name()));
        stats
    }

    /// Queues `rows` (and `rhs`) for `key` and returns once a batch has computed them.
    ///
    /// The batch runs on a caller's thread, there is no worker to wake: the caller whose
    /// request fills its queue takes a batch from the front and computes it; a caller whose
    /// deadline passes with its request still queued does the same. Everyone else sleeps until
    /// the batch holding their request replies.
    fn submit(
        &self,
        key: QueueKey,
        rows: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        let pointwise = key.op == RingOp::Pointwise;
        check_call(key.class, key.op, rows, rhs)?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let degree = key.class.degree();
        let count = rows.len() / degree;
        let (max_rows, deadline) = (self.config.max_batch_rows, self.config.deadline);
        let (reply, answer) = sync_channel(1);
        let queued = Instant::now();
        let (id, mut lead) = {
            let mut queues = lock(&self.queues);
            let id = queues.next_id;
            queues.next_id += 1;
            let queue = queues.by_key.entry(key).or_default();
            if queue.pending.is_empty()
                && count >= max_rows
                && count.is_multiple_of(self.granularity(key.class))
            {
                // A full batch by itself, needing no padding: nothing to stack.
                drop(queues);
                return self.execute_in_place(key, rows, rhs, queued);
            }
            queue.rows += rows.len() / degree;
            queue.pending.push_back(Pending {
                id,
                rows: rows.to_vec(),
                rhs: if pointwise { rhs.to_vec() } else { Vec::new() },
                queued,
                reply,
            });
            let full = queue.rows >= max_rows;
            (id, full.then(|| queue.take_batch(degree, max_rows)))
        };
        // No deadline (`Duration::MAX`, or past the clock's range): only a full queue sends it.
        let due = queued.checked_add(deadline);
        let outcome = loop {
            if let Some(batch) = lead.take() {
                self.execute(key, batch);
                // What is left may still fill a batch (a request that did not fit in this one).
                let mut queues = lock(&self.queues);
                let queue = queues.by_key.entry(key).or_default();
                if queue.rows >= max_rows {
                    lead = Some(queue.take_batch(degree, max_rows));
                    continue;
                }
            }
            match wait(&answer, due) {
                Ok(done) => break Some(done),
                Err(RecvTimeoutError::Disconnected) => break None,
                Err(RecvTimeoutError::Timeout) => {
                    let mut queues = lock(&self.queues);
                    let queue = queues.by_key.entry(key).or_default();
                    if queue.pending.iter().any(|p| p.id == id) {
                        lead = Some(queue.take_batch(degree, max_rows));
                    } else {
                        // Another caller's batch holds it: wait for that batch.
                        drop(queues);
                        break wait(&answer, None).ok();
                    }
                }
            }
        };
        match outcome {
            Some(Completed::Done {
                rows: computed,
                results,
            }) if computed.len() == rows.len() => {
                rows.copy_from_slice(&computed);
                Ok(results)
            }
            // The backend failed the batch, or the caller computing it stopped before replying
            // (its thread panicked): compute here, from the untouched inputs.
            _ => reference(key, rows, rhs),
        }
    }

    /// The backend's [`BatchArithmetic::row_granularity`] for `class`, clamped to
    /// [1, [`MAX_GRANULARITY`]].
    fn granularity(&self, class: NttClass) -> usize {
        self.backend
            .row_granularity(class)
            .clamp(1, MAX_GRANULARITY)
    }

    /// Computes one request that fills a batch alone in the caller's buffer: the backend sees
    /// the caller's rows, and a copy of them is kept for the CPU fallback (a backend that panics
    /// may have changed the buffer).
    fn execute_in_place(
        &self,
        key: QueueKey,
        rows: &mut [u64],
        rhs: &[u64],
        queued: Instant,
    ) -> Result<RowResults, AccelError> {
        let started = Instant::now();
        let inputs = self.buffers.filled([&*rows], rows.len());
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.backend.ring(key.class, key.op, rows, rhs)
        }));
        let count = rows.len() / key.class.degree();
        let checked = self.checked(key, outcome, count);
        let failed = checked.is_none();
        let wait = [started.saturating_duration_since(queued)];
        self.record(key, started, &wait, count, 0, failed);
        let answer = match checked {
            Some(results) => Ok(results),
            None => {
                rows.copy_from_slice(&inputs);
                reference(key, rows, rhs)
            }
        };
        self.buffers.recycle(inputs);
        answer
    }

    /// The backend's per-row results for a batch of `padded` rows, or `None` (logged) when it
    /// failed the batch: no kernel, an error, a panic, or a reply of the wrong length.
    fn checked(
        &self,
        key: QueueKey,
        outcome: std::thread::Result<Result<RowResults, AccelError>>,
        padded: usize,
    ) -> Option<RowResults> {
        let why = match outcome {
            Ok(Ok(results)) if results.len() == padded => return Some(results),
            Ok(Ok(results)) => format!("{} results for {padded} rows", results.len()),
            Ok(Err(error)) => error.to_string(),
            Err(_) => "the backend panicked".to_string(),
        };
        tracing::warn!(
            backend = self.backend.name(),
            class = key.class.name(),
            op = key.op.name(),
            rows = padded,
            %why,
            "batch failed on the backend; computing it on the CPU"
        );
        None
    }

    /// Adds one batch to `key`'s counters: started at `started`, its requests' queue `waits`,
    /// `rows` rows plus `padding` zero rows, `failed` on the backend.
    fn record(
        &self,
        key: QueueKey,
        started: Instant,
        waits: &[Duration],
        rows: usize,
        padding: usize,
        failed: bool,
    ) {
        let busy = started.elapsed();
        let mut stats = lock(&self.stats);
        let s = stats.entry(key).or_default();
        s.batches += 1;
        s.requests += waits.len() as u64;
        s.rows += rows as u64;
        s.padding_rows += padding as u64;
        s.queue_wait += waits.iter().sum::<Duration>();
        s.max_queue_wait = waits.iter().copied().fold(s.max_queue_wait, Duration::max);
        s.busy += busy;
        s.fallbacks += u64::from(failed);
    }

    /// Computes `batch` on the backend and replies to each caller with its own rows: a single
    /// request that needs no padding in its own buffer, otherwise every request stacked into one
    /// buffer and padded to the backend's granularity. If the backend fails the batch, every
    /// caller is told to compute its request on the CPU reference (its own buffer still holds
    /// the inputs), which spreads the fallback over the callers' threads.
    fn execute(&self, key: QueueKey, mut batch: Vec<Pending>) {
        let started = Instant::now();
        let degree = key.class.degree();
        let counts: Vec<usize> = batch.iter().map(|p| p.rows.len() / degree).collect();
        let rows: usize = counts.iter().sum();
        let granularity = self.granularity(key.class);
        let padded = rows.div_ceil(granularity) * granularity;
        let single = batch.len() == 1 && padded == rows;
        let (mut values, rhs) = match batch.as_mut_slice() {
            [only] if single => (
                std::mem::take(&mut only.rows),
                std::mem::take(&mut only.rhs),
            ),
            _ => {
                let len = padded * degree;
                let rhs = if key.op == RingOp::Pointwise {
                    self.buffers.filled(batch.iter().map(|p| &p.rhs[..]), len)
                } else {
                    Vec::new()
                };
                (
                    self.buffers.filled(batch.iter().map(|p| &p.rows[..]), len),
                    rhs,
                )
            }
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.backend.ring(key.class, key.op, &mut values, &rhs)
        }));
        let results = self.checked(key, outcome, padded);
        let mut waits = Vec::with_capacity(batch.len());
        let mut offset = 0;
        for (pending, n) in batch.into_iter().zip(counts) {
            waits.push(started.saturating_duration_since(pending.queued));
            let reply = if let Some(results) = &results {
                let rows = if single {
                    std::mem::take(&mut values)
                } else {
                    values
                        .get(offset * degree..(offset + n) * degree)
                        .unwrap_or_default()
                        .to_vec()
                };
                let results = results
                    .get(offset..offset + n)
                    .unwrap_or_default()
                    .iter()
                    .map(|r| r.map_err(|e| shift_row(e, offset)))
                    .collect();
                Completed::Done { rows, results }
            } else {
                Completed::OnCpu
            };
            // A caller that stopped waiting has nothing to lose.
            let _ = pending.reply.send(reply);
            offset += n;
        }
        self.record(key, started, &waits, rows, padded - rows, results.is_none());
        self.buffers.recycle(values);
        self.buffers.recycle(rhs);
    }
}

/// How long a waiting worker of a rayon pool sleeps between looks for its pool's work.
const POOL_POLL: Duration = Duration::from_micros(50);

/// Waits for a request's reply until `until` (`None`: for as long as it takes).
///
/// A caller that is a worker of a rayon pool keeps running its pool's pending jobs while it
/// waits ([`rayon::yield_now`]): the batch it waits for may be led by a thread outside the pool
/// and computed by a backend that spreads rows over this very pool, and blocked workers would
/// leave that backend waiting for ever. Any other caller just sleeps.
fn wait(
    answer: &Receiver<Completed>,
    until: Option<Instant>,
) -> Result<Completed, RecvTimeoutError> {
    if rayon::current_thread_index().is_none() {
        return match until {
            None => answer.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(t) => answer.recv_timeout(t.saturating_duration_since(Instant::now())),
        };
    }
    loop {
        let slice = match until {
            None => POOL_POLL,
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return answer.try_recv().map_err(|e| match e {
                        TryRecvError::Empty => RecvTimeoutError::Timeout,
                        TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                    });
                }
                left.min(POOL_POLL)
            }
        };
        match answer.recv_timeout(slice) {
            Err(RecvTimeoutError::Timeout) => {
                rayon::yield_now();
            }
            other => return other,
        }
    }
}

/// `key`'s operation on the CPU (the production CPU backend, bit-identical to the reference).
fn reference(key: QueueKey, rows: &mut [u64], rhs: &[u64]) -> Result<RowResults, AccelError> {
    crate::SimdCpuBackend::new().ring(key.class, key.op, rows, rhs)
}

/// A row error re-indexed from the batch to its caller's buffer (`offset` rows before it).
fn shift_row(error: AccelError, offset: usize) -> AccelError {
    match error {
        AccelError::CoefficientOutOfRange {
            row,
            index,
            value,
            modulus,
        } => AccelError::CoefficientOutOfRange {
            row: row.saturating_sub(offset),
            index,
            value,
            modulus,
        },
        other => other,
    }
}

/// `result` unless the backend had no kernel, in which case `cpu()`.
fn or_cpu<T>(
    result: Result<T, AccelError>,
    cpu: impl FnOnce() -> Result<T, AccelError>,
) -> Result<T, AccelError> {
    match result {
        Err(AccelError::Unsupported { .. }) => cpu(),
        other => other,
    }
}

impl BatchArithmetic for Dispatcher {
    fn name(&self) -> &'static str {
        self.backend.name()
    }

    fn forward_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        let key = QueueKey {
            class,
            op: RingOp::Forward,
        };
        self.submit(key, rows, &[])
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        let key = QueueKey {
            class,
            op: RingOp::Inverse,
        };
        self.submit(key, rows, &[])
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        rhs: &[u64],
    ) -> Result<RowResults, AccelError> {
        let key = QueueKey {
            class,
            op: RingOp::Pointwise,
        };
        self.submit(key, lhs, rhs)
    }

    fn scalar_ntt(
        &self,
        transform: ScalarTransform,
        rows: &mut [Vec<Fr>],
    ) -> Result<(), AccelError> {
        or_cpu(self.backend.scalar_ntt(transform, rows), || {
            CpuBackend.scalar_ntt(transform, rows)
        })
    }

    fn msm_g1(
        &self,
        requests: &[MsmRequest<'_, G1Affine>],
    ) -> Result<MsmResults<G1Projective>, AccelError> {
        or_cpu(self.backend.msm_g1(requests), || {
            CpuBackend.msm_g1(requests)
        })
    }

    fn msm_g2(
        &self,
        requests: &[MsmRequest<'_, G2Affine>],
    ) -> Result<MsmResults<G2Projective>, AccelError> {
        or_cpu(self.backend.msm_g2(requests), || {
            CpuBackend.msm_g2(requests)
        })
    }
}
