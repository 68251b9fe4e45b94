//! Bearer-token authentication of thresholdd's HTTP requests (RFC 6750 §2.1).
//!
//! Every request must carry `Authorization: Bearer <token>`; anything else gets HTTP 401 with
//! `WWW-Authenticate: Bearer` before the JSON-RPC layer sees the body. The comparison is
//! constant-time in the token's contents and length: both sides are hashed (SHA3-256) and the
//! digests compared with `subtle`, so a caller learns neither a matching prefix nor the length.
//! An admitted request goes on without its `Authorization` header, so no later layer can log
//! the token.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use quasar_crypto::hash::sha3_256;
use subtle::ConstantTimeEq;
use tower::{Layer, Service};

/// The token's digest, shared by every connection's service.
#[derive(Clone)]
pub struct BearerAuthLayer {
    digest: Arc<[u8; 32]>,
}

impl std::fmt::Debug for BearerAuthLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerAuthLayer(<token>)")
    }
}

impl BearerAuthLayer {
    /// A layer that admits requests bearing exactly `token`.
    pub fn new(token: &str) -> BearerAuthLayer {
        BearerAuthLayer {
            digest: Arc::new(sha3_256(token.as_bytes())),
        }
    }

    /// Whether `header` (the raw `Authorization` value) is `Bearer <token>`. The scheme name is
    /// case-insensitive (RFC 9110 §11.1); the token is compared in constant time.
    fn admits(&self, header: Option<&[u8]>) -> bool {
        let presented = header
            .and_then(|value| {
                let (scheme, token) = value.split_at_checked(7)?;
                scheme.eq_ignore_ascii_case(b"bearer ").then_some(token)
            })
            .unwrap_or_default();
        // Hash even when no token was presented, so every rejection costs the same.
        let digest = sha3_256(presented);
        bool::from(digest.ct_eq(&*self.digest)) && header.is_some()
    }

    /// Whether `headers` carry `Authorization: Bearer <token>` ([`BearerAuthLayer::admits`]
    /// on its value). The transport asks this of each request head, to move a connection that
    /// presents the token to the authenticated budget ([`quasar_process::http_serve`], "Admission").
    pub fn admits_headers(&self, headers: &http::HeaderMap) -> bool {
        self.admits(
            headers
                .get(http::header::AUTHORIZATION)
                .map(|value| value.as_bytes()),
        )
    }
}

impl<S> Layer<S> for BearerAuthLayer {
    type Service = BearerAuth<S>;

    fn layer(&self, inner: S) -> BearerAuth<S> {
        BearerAuth {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`BearerAuthLayer`] wraps around the JSON-RPC server.
#[derive(Clone, Debug)]
pub struct BearerAuth<S> {
    inner: S,
    layer: BearerAuthLayer,
}

/// HTTP 401 with the RFC 6750 challenge and a one-line reason.
fn unauthorized() -> HttpResponse {
    let mut response = HttpResponse::new(HttpBody::from(
        "missing or wrong bearer token (Authorization: Bearer <token>)\n",
    ));
    *response.status_mut() = http::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
    response
}

impl<S, B> Service<HttpRequest<B>> for BearerAuth<S>
where
    S: Service<HttpRequest<B>, Response = HttpResponse>,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, S::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: HttpRequest<B>) -> Self::Future {
        if self.layer.admits_headers(request.headers()) {
            // Nothing past this layer needs the token: jsonrpsee logs request headers at TRACE.
            request.headers_mut().remove(http::header::AUTHORIZATION);
            Box::pin(self.inner.call(request))
        } else {
            tracing::debug!(path = %request.uri().path(), "rejected a request without the bearer token");
            Box::pin(async { Ok(unauthorized()) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BearerAuthLayer;

    #[test]
    fn admits_only_the_exact_token() {
        let layer = BearerAuthLayer::new("s3cret");
        assert!(layer.admits(Some(b"Bearer s3cret")));
        assert!(layer.admits(Some(b"bearer s3cret")));
        for bad in [
            &b"Bearer s3cre"[..],
            b"Bearer s3cret ",
            b"Bearer  s3cret",
            b"Basic s3cret",
            b"s3cret",
            b"Bearer",
            b"",
        ] {
            assert!(
                !layer.admits(Some(bad)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(!layer.admits(None));
    }
}
