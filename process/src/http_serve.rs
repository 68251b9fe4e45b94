//! The HTTP/1.1 transport of the node's admin API (`quasar_node::api`) and of thresholdd: the
//! accept loop, the connection budgets and the bounds on slow clients, around the tower
//! service of either (axum's router, jsonrpsee's service).
//!
//! Neither axum's nor jsonrpsee's own accept loop bounds the time a client may take to send a
//! request head or its body: an attacker trial held all 100 of thresholdd's slots for over
//! 100 s with 110 connections that sent headers (or part of them, or headers and part of a
//! body) and then stalled, and every other caller got HTTP 429. This loop serves each
//! connection with hyper's HTTP/1.1 server directly, so that every way of holding a
//! connection without finishing a request has a deadline.
//!
//! # Admission: authenticated connections never wait behind unauthenticated ones
//!
//! A second trial opened 200 connections that sent part of a request head and stalled. With
//! one pool of 100 slots, taken at accept and freed only at the 10 s head deadline, the accept
//! loop stopped accepting: 100 stalled connections were served, the other 100 and every honest
//! caller behind them waited in the kernel's listen backlog (first come, first served) for
//! two to three rounds of that deadline, and a `health` call was answered after 29 s. The node's
//! remote signer gives up after 2 s, so the validator missed its votes. A request head cannot
//! be told apart from an attacker's until it has arrived, so the loop now admits connections
//! in two classes:
//!
//! - **Unauthenticated** (every connection when accepted): it must send a request head that
//!   authenticates it (the caller's `authenticates` predicate on the head's headers:
//!   thresholdd's bearer token; any head for the unauthenticated node API) within
//!   [`TransportLimits::header_read_timeout`] of being accepted, or it is closed; requests
//!   that do not authenticate (HTTP 401) do not extend that. At most
//!   [`TransportLimits::max_unauthenticated`] are open at once. The accept loop never waits
//!   for one of them to finish: when the budget is full, the oldest unauthenticated connection
//!   is closed to make room for the new one (the one closest to its deadline anyway), once it
//!   has been open for [`EVICTION_GRACE`]. A client that sends its head as soon as it
//!   connects, as every client of these servers does, is authenticated within a round trip,
//!   well inside that grace, so stalled connections only push out each other. The grace also
//!   bounds the churn of an attacker that reconnects at once: at most `max_unauthenticated`
//!   connections are closed per grace period, and a new connection waits in the backlog for
//!   at most about one grace period per `max_unauthenticated` connections queued before it.
//! - **Authenticated**: up to [`TransportLimits::max_authenticated`] connections move, on
//!   their first authenticating head, to a budget of their own that unauthenticated
//!   connections cannot take, and freeing their unauthenticated slot. From then on each request
//!   head, and so each idle keep-alive wait, may take [`TransportLimits::idle_timeout`]
//!   (hyper's `header_read_timeout`): the node's remote signer keeps one such connection open
//!   between votes (`quasar_node::remote_signer` pools it), so its votes go to a connection that no
//!   number of unauthenticated ones delays. An authenticated connection beyond that budget is
//!   served on its unauthenticated slot, with the idle limit, and is no longer closed to make
//!   room (only when every unauthenticated slot is held by such does the accept loop wait).
//!
//! Per-source-address limits were not chosen: thresholdd listens on loopback by default, where
//! the node and any local attacker share one address.
//!
//! # Deadlines within a request
//!
//! - **Request body:** the whole body must arrive within
//!   [`TransportLimits::body_read_timeout`] of the end of the head ([`DeadlineBody`]); after
//!   that the request is answered HTTP 408 and the connection closed.
//! - **Response:** a write that makes no progress for [`TransportLimits::write_stall_timeout`]
//!   (a client that does not read what it asked for) closes the connection
//!   ([`WriteStallGuard`]).
//!
//! Each request carries its peer's address as the `axum::extract::ConnectInfo<SocketAddr>`
//! extension (per-client rate limits key on it).
//!
//! Only HTTP/1.1 (and 1.0) is served: no client of either server uses HTTP/2, which would need
//! a second set of bounds.
//!
//! Shutdown: [`ServerHandle::stop`] stops the accept loop and asks every connection to close
//! once its current request is answered (hyper's graceful shutdown): an idle keep-alive
//! connection closes at once, a request in progress when it is answered (each part of it
//! bounded as above). [`ServerHandle::stopped`] resolves when the loop and every connection
//! task have ended.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use jsonrpsee::core::BoxError;
use jsonrpsee::server::{stop_channel, ServerHandle, StopHandle};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tower::Service;

/// The transport's bounds: how many connections of each class (module docs, "Admission") are
/// served at once and how long a client may take over each part of a request. [`Default`] is
/// thresholdd's production setting (the constants in the module docs of `thresholdd`),
/// `api::transport_limits` sets the node API's; tests use shorter timeouts. A zero count is
/// served as 1 and a zero duration as 1 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportLimits {
    /// The most unauthenticated connections open at once; a further one closes the oldest.
    pub max_unauthenticated: usize,
    /// The most authenticated connections on their own budget.
    pub max_authenticated: usize,
    /// How long a connection may take, from being accepted, to send a request head that
    /// authenticates it; then it is closed.
    pub header_read_timeout: Duration,
    /// How long an authenticated connection may take to send each later request head,
    /// counted from when it starts waiting for one (so also the longest it may sit idle).
    pub idle_timeout: Duration,
    /// How long a request may take to send its whole body, counted from the end of its head.
    pub body_read_timeout: Duration,
    /// How long writing a response may make no progress before the connection is closed.
    pub write_stall_timeout: Duration,
}

impl TransportLimits {
    /// The limits with zeros raised to the smallest usable value.
    fn usable(self) -> TransportLimits {
        let at_least = |d: Duration| d.max(Duration::from_millis(1));
        TransportLimits {
            max_unauthenticated: self.max_unauthenticated.max(1),
            max_authenticated: self.max_authenticated.max(1),
            header_read_timeout: at_least(self.header_read_timeout),
            idle_timeout: at_least(self.idle_timeout),
            body_read_timeout: at_least(self.body_read_timeout),
            write_stall_timeout: at_least(self.write_stall_timeout),
        }
    }
}

/// How long an unauthenticated connection is open at least before the accept loop closes it
/// to make room (module docs, "Admission"), unless its header deadline is shorter.
pub const EVICTION_GRACE: Duration = Duration::from_millis(250);

/// Whether a request head's headers authenticate its connection (module docs, "Admission").
pub type Authenticates = Arc<dyn Fn(&http::HeaderMap) -> bool + Send + Sync>;

/// Serves `listener` on a new task until the returned handle stops it (or is dropped):
/// `make_service(stop)` builds each connection's service, holding `stop` for as long as the
/// connection lives, `wrap` turns the bounded request body ([`DeadlineBody`]) into the body
/// type that service takes (`axum::body::Body::new`, `jsonrpsee::server::HttpBody::new`), and
/// `authenticates` says which request heads authenticate their connection.
pub fn spawn<M, S, Req, Res>(
    listener: TcpListener,
    limits: TransportLimits,
    authenticates: Authenticates,
    wrap: fn(DeadlineBody<Incoming>) -> Req,
    make_service: M,
) -> ServerHandle
where
    M: Fn(StopHandle) -> S + Send + 'static,
    S: Service<http::Request<Req>, Response = http::Response<Res>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    Req: Send + 'static,
    Res: Body + From<&'static str> + Send + 'static,
    Res::Data: Send,
    Res::Error: Into<BoxError>,
{
    let (stop, handle) = stop_channel();
    let limits = limits.usable();
    let admission = Arc::new(Admission {
        unauthenticated: Arc::new(Semaphore::new(limits.max_unauthenticated)),
        authenticated: Arc::new(Semaphore::new(limits.max_authenticated)),
        waiting: Mutex::new(VecDeque::new()),
        grace: EVICTION_GRACE.min(limits.header_read_timeout),
        authenticates,
    });
    tokio::spawn(accept_loop(
        listener,
        limits,
        admission,
        wrap,
        make_service,
        stop,
    ));
    handle
}

/// The two connection budgets and the unauthenticated connections, oldest first.
struct Admission {
    unauthenticated: Arc<Semaphore>,
    authenticated: Arc<Semaphore>,
    /// The unauthenticated connections in accept order.
    waiting: Mutex<VecDeque<Waiting>>,
    /// [`EVICTION_GRACE`], or the header deadline when that is shorter.
    grace: Duration,
    authenticates: Authenticates,
}

/// An unauthenticated connection in [`Admission::waiting`].
struct Waiting {
    id: u64,
    accepted: tokio::time::Instant,
    /// Closes the connection.
    evict: Arc<Notify>,
}

impl Admission {
    fn waiting(&self) -> MutexGuard<'_, VecDeque<Waiting>> {
        // The queue is consistent after every statement; a panic elsewhere leaves it usable.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for a just-accepted connection: a free unauthenticated one, or the one the
    /// oldest unauthenticated connection frees when it is told to close, once it has been open
    /// for the grace. `None` when the budget's semaphore is closed (never).
    async fn unauthenticated_slot(&self) -> Option<OwnedSemaphorePermit> {
        loop {
            if let Ok(slot) = self.unauthenticated.clone().try_acquire_owned() {
                return Some(slot);
            }
            let oldest = self.waiting().front().map(|w| (w.id, w.accepted));
            let Some((id, accepted)) = oldest else {
                // Every slot is held by an authenticated connection beyond its budget.
                return self.unauthenticated.clone().acquire_owned().await.ok();
            };
            tokio::select! {
                slot = self.unauthenticated.clone().acquire_owned() => return slot.ok(),
                () = tokio::time::sleep_until(accepted + self.grace) => {}
            }
            // It may have been authenticated or closed meanwhile: then look again.
            let evicted = {
                let mut waiting = self.waiting();
                match waiting.front() {
                    Some(front) if front.id == id => waiting.pop_front(),
                    _ => None,
                }
            };
            if let Some(oldest) = evicted {
                oldest.evict.notify_one();
                return self.unauthenticated.clone().acquire_owned().await.ok();
            }
        }
    }
}

/// One connection's class and slot.
struct Place {
    id: u64,
    admission: Arc<Admission>,
    /// Notified when the accept loop closes this connection to make room.
    evicted: Arc<Notify>,
    /// Set, under the admission's queue lock, when a head authenticated this connection.
    authenticated: AtomicBool,
    slot: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Place {
    fn slot(&self) -> MutexGuard<'_, Option<OwnedSemaphorePermit>> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes this connection out of the unauthenticated queue in `waiting`; whether it was
    /// there (not yet closed to make room, not yet authenticated).
    fn leave_queue(&self, waiting: &mut VecDeque<Waiting>) -> bool {
        match waiting.iter().position(|w| w.id == self.id) {
            Some(index) => waiting.remove(index).is_some(),
            None => false,
        }
    }

    /// Called with each request head: when `headers` authenticate a connection that is still
    /// unauthenticated (and not being closed), marks it authenticated and moves it to the
    /// authenticated budget if that has room.
    fn admit(&self, headers: &http::HeaderMap) {
        if self.authenticated.load(Ordering::Acquire) || !(self.admission.authenticates)(headers) {
            return;
        }
        {
            let mut waiting = self.admission.waiting();
            if !self.leave_queue(&mut waiting) {
                return;
            }
            self.authenticated.store(true, Ordering::Release);
        }
        if let Ok(slot) = self.admission.authenticated.clone().try_acquire_owned() {
            // Frees the unauthenticated slot for the next connection.
            *self.slot() = Some(slot);
        }
    }

    /// At the unauthenticated deadline: whether the connection must close (no head has
    /// authenticated it); it leaves the queue if so.
    fn expire(&self) -> bool {
        let mut waiting = self.admission.waiting();
        if self.authenticated.load(Ordering::Acquire) {
            return false;
        }
        self.leave_queue(&mut waiting);
        true
    }

    /// The connection has ended: out of the queue, its slot freed.
    fn release(&self) {
        self.leave_queue(&mut self.admission.waiting());
        self.slot().take();
    }
}

/// Accepts connections until `stop` fires, each with an unauthenticated slot (module docs).
async fn accept_loop<M, S, Req, Res>(
    listener: TcpListener,
    limits: TransportLimits,
    admission: Arc<Admission>,
    wrap: fn(DeadlineBody<Incoming>) -> Req,
    make_service: M,
    stop: StopHandle,
) where
    M: Fn(StopHandle) -> S,
    S: Service<http::Request<Req>, Response = http::Response<Res>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    Req: Send + 'static,
    Res: Body + From<&'static str> + Send + 'static,
    Res::Data: Send,
    Res::Error: Into<BoxError>,
{
    let shutdown = stop.clone().shutdown();
    tokio::pin!(shutdown);
    let mut next_id = 0u64;
    loop {
        let (socket, remote_addr) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // pause briefly so a persistent error does not spin this loop.
                    tracing::debug!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let slot = tokio::select! {
            _ = &mut shutdown => break,
            slot = admission.unauthenticated_slot() => match slot {
                Some(slot) => slot,
                None => break,
            },
        };
        next_id = next_id.wrapping_add(1);
        let evicted = Arc::new(Notify::new());
        admission.waiting().push_back(Waiting {
            id: next_id,
            accepted: tokio::time::Instant::now(),
            evict: evicted.clone(),
        });
        let place = Arc::new(Place {
            id: next_id,
            admission: admission.clone(),
            evicted,
            authenticated: AtomicBool::new(false),
            slot: Mutex::new(Some(slot)),
        });
        let service = make_service(stop.clone());
        tokio::spawn(serve_connection(
            socket,
            remote_addr,
            service,
            wrap,
            limits,
            stop.clone(),
            place,
        ));
    }
    tracing::debug!("HTTP accept loop stopped");
}

/// Serves one connection until it closes, a deadline passes, the accept loop closes it to
/// make room, or the server stops; `place` frees the connection's slot when this returns.
async fn serve_connection<S, Req, Res>(
    socket: TcpStream,
    remote_addr: SocketAddr,
    service: S,
    wrap: fn(DeadlineBody<Incoming>) -> Req,
    limits: TransportLimits,
    stop: StopHandle,
    place: Arc<Place>,
) where
    S: Service<http::Request<Req>, Response = http::Response<Res>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    Req: Send + 'static,
    Res: Body + From<&'static str> + Send + 'static,
    Res::Data: Send,
    Res::Error: Into<BoxError>,
{
    if let Err(e) = socket.set_nodelay(true) {
        tracing::debug!(%remote_addr, error = %e, "could not set TCP_NODELAY");
    }
    let io = TokioIo::new(WriteStallGuard::new(socket, limits.write_stall_timeout));
    let body_read_timeout = limits.body_read_timeout;
    let admit = place.clone();
    let handler = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        admit.admit(request.headers());
        handle(
            service.clone(),
            request,
            wrap,
            body_read_timeout,
            remote_addr,
        )
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // hyper's head deadline is the authenticated one; `unauthenticated` below is shorter.
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(io, handler);
    tokio::pin!(connection);
    let shutdown = stop.shutdown();
    tokio::pin!(shutdown);
    let unauthenticated = tokio::time::sleep(limits.header_read_timeout);
    tokio::pin!(unauthenticated);
    let mut authenticated_in_time = false;
    let result = loop {
        tokio::select! {
            result = connection.as_mut() => break result,
            _ = &mut shutdown => {
                // Finish the request in progress (each part is bounded), then close.
                connection.as_mut().graceful_shutdown();
                break connection.await;
            }
            () = place.evicted.notified() => {
                tracing::debug!(%remote_addr, "unauthenticated connection closed to make room");
                break Ok(());
            }
            () = &mut unauthenticated, if !authenticated_in_time => {
                if place.expire() {
                    tracing::debug!(%remote_addr, "no authenticated request head in time");
                    break Ok(());
                }
                authenticated_in_time = true;
            }
        }
    };
    place.release();
    if let Err(e) = result {
        tracing::debug!(%remote_addr, error = %e, "HTTP connection closed with an error");
    }
}

/// Answers one request with `service`, its body bounded by `body_read_timeout`: HTTP 408 in
/// place of the service's answer when the body did not arrive in time.
async fn handle<S, Req, Res>(
    mut service: S,
    request: http::Request<Incoming>,
    wrap: fn(DeadlineBody<Incoming>) -> Req,
    body_read_timeout: Duration,
    remote_addr: SocketAddr,
) -> Result<http::Response<Res>, BoxError>
where
    S: Service<http::Request<Req>, Response = http::Response<Res>>,
    S::Error: Into<BoxError>,
    Res: From<&'static str>,
{
    let expired = Arc::new(AtomicBool::new(false));
    let mut request =
        request.map(|body| wrap(DeadlineBody::new(body, body_read_timeout, expired.clone())));
    request
        .extensions_mut()
        .insert(axum::extract::ConnectInfo(remote_addr));
    std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .map_err(Into::<BoxError>::into)?;
    let response = service
        .call(request)
        .await
        .map_err(Into::<BoxError>::into)?;
    if expired.load(Ordering::Relaxed) {
        tracing::debug!(%remote_addr, "request body not received in time");
        return Ok(request_timeout());
    }
    Ok(response)
}

/// HTTP 408 for a request whose body did not arrive in time; the connection closes after it.
fn request_timeout<Res: From<&'static str>>() -> http::Response<Res> {
    let mut response = http::Response::new(Res::from("request body not received in time\n"));
    *response.status_mut() = http::StatusCode::REQUEST_TIMEOUT;
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    response
}

/// The error a [`DeadlineBody`] yields when its deadline passes.
#[derive(Debug, thiserror::Error)]
#[error("the request body was not received within {0:?}")]
struct BodyTimeout(Duration);

/// A request body that fails with [`BodyTimeout`] (and sets `expired`) once `limit` has passed
/// since it was created, whether the client is silent or trickling bytes.
pub struct DeadlineBody<B> {
    inner: B,
    limit: Duration,
    deadline: Pin<Box<Sleep>>,
    expired: Arc<AtomicBool>,
}

impl<B> DeadlineBody<B> {
    fn new(inner: B, limit: Duration, expired: Arc<AtomicBool>) -> DeadlineBody<B> {
        DeadlineBody {
            inner,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
            expired,
        }
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        // Polled first so that a pending body is woken when the deadline passes.
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(BodyTimeout(this.limit).into())));
        }
        Pin::new(&mut this.inner)
            .poll_frame(cx)
            .map(|frame| frame.map(|frame| frame.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A socket whose writes fail with [`io::ErrorKind::TimedOut`] once one has been pending (the
/// peer's receive window full) for `limit`; reads pass through (hyper bounds them).
struct WriteStallGuard<T> {
    inner: T,
    limit: Duration,
    /// Armed while a write is pending; dropped when one makes progress.
    stall: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteStallGuard<T> {
    fn new(inner: T, limit: Duration) -> WriteStallGuard<T> {
        WriteStallGuard {
            inner,
            limit,
            stall: None,
        }
    }

    /// Maps the inner write's poll: progress disarms the stall clock, pending arms it and
    /// fails once it has run out.
    fn watch<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        match polled {
            Poll::Ready(result) => {
                self.stall = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let limit = self.limit;
                let stall = self
                    .stall
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match stall.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the peer read nothing of the response for {limit:?}"),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStallGuard<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStallGuard<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A body whose client never sends anything.
    struct Silent;

    impl Body for Silent {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Pending
        }
    }

    /// A response the peer never reads: the write fails after the stall limit instead of
    /// holding the connection (and its slot) for ever.
    #[tokio::test]
    async fn a_write_the_peer_never_reads_times_out() {
        let (ours, _theirs) = tokio::io::duplex(64);
        let mut guarded = WriteStallGuard::new(ours, Duration::from_millis(100));
        let started = std::time::Instant::now();
        let result = tokio::time::timeout(Duration::from_secs(5), guarded.write_all(&[0u8; 4096]))
            .await
            .expect("the guard ends the write");
        let error = result.expect_err("nobody reads the other end");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(100));
    }

    /// A write the peer reads slowly but steadily is not cut off: only a stall counts.
    #[tokio::test]
    async fn a_write_that_makes_progress_is_not_cut_off() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut guarded = WriteStallGuard::new(ours, Duration::from_millis(200));
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            let mut buf = [0u8; 64];
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                match tokio::io::AsyncReadExt::read(&mut theirs, &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink.extend_from_slice(&buf[..n]),
                }
            }
            sink.len()
        });
        // 1 KiB in 64-byte steps every 20 ms: ~320 ms in all, longer than the limit.
        guarded
            .write_all(&[7u8; 1024])
            .await
            .expect("progress keeps the write alive");
        guarded.shutdown().await.expect("shuts down");
        drop(guarded);
        assert_eq!(reader.await.expect("reader"), 1024);
    }

    /// Opens a connection to `addr` and sends `bytes`.
    async fn send(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(bytes).await.expect("sends");
        stream
    }

    /// Reads from `stream` until its bytes contain `needle`, for at most 5 s.
    async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
        let mut received = Vec::new();
        let mut buf = [0u8; 1024];
        let read = async {
            while !String::from_utf8_lossy(&received).contains(needle) {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => received.extend_from_slice(&buf[..n]),
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
        String::from_utf8_lossy(&received).into_owned()
    }

    /// With the unauthenticated budget full, a new connection closes the oldest
    /// unauthenticated one (after the grace) and is served instead of waiting behind it; the
    /// next oldest stays, and a connection that authenticated neither counts nor is closed.
    #[tokio::test]
    async fn a_new_connection_closes_the_oldest_unauthenticated_one() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("bound");
        let long = Duration::from_secs(30);
        let limits = TransportLimits {
            max_unauthenticated: 2,
            max_authenticated: 1,
            header_read_timeout: long,
            idle_timeout: long,
            body_read_timeout: long,
            write_stall_timeout: long,
        };
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "served" }));
        let authenticates: Authenticates =
            Arc::new(|headers: &http::HeaderMap| headers.contains_key("x-token"));
        let handle = spawn(
            listener,
            limits,
            authenticates,
            axum::body::Body::new,
            move |_| app.clone(),
        );
        let with_token = b"GET / HTTP/1.1\r\nHost: x\r\nx-token: 1\r\n\r\n";
        let mut authenticated = send(addr, with_token).await;
        assert!(read_until(&mut authenticated, "served")
            .await
            .contains("served"));
        let mut oldest = send(addr, b"GET / HTTP/1.1\r\nHo").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut next = send(addr, b"GET / HTTP/1.1\r\nHo").await;

        let mut third = send(
            addr,
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(read_until(&mut third, "served").await.contains("served"));
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), oldest.read_to_end(&mut rest));
        assert!(closed.await.is_ok(), "the oldest is closed to make room");
        let mut buf = [0u8; 16];
        let open = tokio::time::timeout(Duration::from_millis(200), next.read(&mut buf));
        assert!(open.await.is_err(), "the next oldest stays open");
        authenticated
            .write_all(with_token)
            .await
            .expect("still open");
        assert!(read_until(&mut authenticated, "served")
            .await
            .contains("served"));
        handle.stop().expect("stops");
    }

    /// A body that never ends fails at the deadline and marks itself expired.
    #[tokio::test]
    async fn a_body_past_its_deadline_fails_and_marks_expired() {
        let expired = Arc::new(AtomicBool::new(false));
        let mut body = DeadlineBody::new(Silent, Duration::from_millis(50), expired.clone());
        let next = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        let frame = tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .expect("the deadline ends the read");
        assert!(matches!(frame, Some(Err(_))));
        assert!(expired.load(Ordering::Relaxed));
    }
}
