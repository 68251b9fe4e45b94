//! The typed client against a real HTTP server (axum on loopback) that answers as a node does:
//! each answer the client must tell apart (found, 404, 410, 503, a contradiction, a rejection,
//! a body that is not the type) comes back as the value or error its docs name.

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use quasar_client::{
    http_client, ApiError, Client, ClientError, Readiness, Submitted, TxInfo, TxStatus,
    MAX_QUOTED_BODY,
};
use std::time::Duration;

fn readiness(ready: bool) -> Readiness {
    Readiness {
        ready,
        reasons: if ready {
            vec![]
        } else {
            vec!["catching up".into()]
        },
        finalized_height: 7,
        height: 9,
        last_finalized_ms_ago: Some(12),
        stale_after_ms: 5000,
        peers: 3,
    }
}

/// Serves `app` on a loopback port; a client of it.
async fn serve(app: Router) -> Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Client::with_http(
        http_client(Duration::from_secs(5)).unwrap(),
        format!("http://{addr}"),
    )
}

fn error(status: StatusCode, message: &str) -> axum::response::Response {
    (
        status,
        Json(ApiError {
            error: message.into(),
        }),
    )
        .into_response()
}

#[tokio::test]
async fn each_answer_becomes_the_documented_value_or_error() {
    let app = Router::new()
        .route(
            "/block/1",
            get(|| async { error(StatusCode::GONE, "pruned") }),
        )
        .route(
            "/block/2",
            get(|| async { error(StatusCode::NOT_FOUND, "no finalized block") }),
        )
        .route("/block/3", get(|| async { "{\"height\": \"three\"}" }))
        .route(
            "/tx/{hash}",
            get(
                |axum::extract::Path(hash): axum::extract::Path<String>| async move {
                    Json(TxInfo {
                        hash,
                        status: TxStatus::Finalized,
                        height: Some(4),
                    })
                },
            ),
        )
        .route(
            "/tx",
            post(|body: axum::body::Bytes| async move {
                if body.is_empty() {
                    error(StatusCode::BAD_REQUEST, &"x".repeat(1000))
                } else {
                    Json(quasar_client::TxAccepted { hash: "ab".into() }).into_response()
                }
            }),
        )
        .route(
            "/ready",
            get(|| async { (StatusCode::SERVICE_UNAVAILABLE, Json(readiness(false))) }),
        )
        .route(
            "/status",
            get(|| async { error(StatusCode::INTERNAL_SERVER_ERROR, "store failed") }),
        );
    let client = serve(app).await;

    assert!(matches!(
        client.block(1).await,
        Err(ClientError::Pruned { url }) if url.ends_with("/block/1")
    ));
    assert!(matches!(client.block(2).await, Ok(None)));
    assert!(matches!(
        client.block(3).await,
        Err(ClientError::Http { .. })
    ));
    let tx = client.tx("cd").await.unwrap().unwrap();
    assert_eq!(
        (tx.hash.as_str(), tx.status, tx.height),
        ("cd", TxStatus::Finalized, Some(4))
    );

    assert_eq!(
        client.submit_tx(b"tx".to_vec()).await.unwrap(),
        Submitted::Accepted("ab".into())
    );
    match client.submit_tx(Vec::new()).await.unwrap() {
        Submitted::Rejected { status, body } => {
            assert_eq!(status, 400);
            assert!(body.starts_with("{\"error\":\"xxx"), "{body}");
            assert_eq!(body.len(), MAX_QUOTED_BODY + '…'.len_utf8(), "cut: {body}");
        }
        other => panic!("{other:?}"),
    }

    assert_eq!(client.ready().await.unwrap(), readiness(false));
    match client.status().await {
        Err(ClientError::Status { status, body, .. }) => {
            assert_eq!(status, 500);
            assert!(body.contains("store failed"), "{body}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_ready_answer_that_contradicts_its_status_code_is_an_error() {
    // 200 with `ready: false`: a node that contradicts itself.
    let client =
        serve(Router::new().route("/ready", get(|| async { Json(readiness(false)) }))).await;
    assert!(matches!(
        client.ready().await,
        Err(ClientError::Inconsistent { .. })
    ));
    // 503 with `ready: true` likewise.
    let client = serve(Router::new().route(
        "/ready",
        get(|| async { (StatusCode::SERVICE_UNAVAILABLE, Json(readiness(true))) }),
    ))
    .await;
    assert!(matches!(
        client.ready().await,
        Err(ClientError::Inconsistent { .. })
    ));
    // Any other code is a status error.
    let client = serve(Router::new().route(
        "/ready",
        get(|| async { error(StatusCode::NOT_FOUND, "no such route") }),
    ))
    .await;
    assert!(matches!(
        client.ready().await,
        Err(ClientError::Status { status: 404, .. })
    ));
}

#[tokio::test]
async fn metrics_carry_the_bearer_token_when_given_one() {
    let app = Router::new().route(
        "/metrics",
        get(|headers: HeaderMap| async move {
            match headers.get("authorization").and_then(|v| v.to_str().ok()) {
                Some("Bearer s3cret") => (StatusCode::OK, "up 1\n").into_response(),
                _ => error(StatusCode::UNAUTHORIZED, "token required"),
            }
        }),
    );
    let client = serve(app).await;
    assert!(matches!(
        client.metrics().await,
        Err(ClientError::Status { status: 401, .. })
    ));
    assert_eq!(
        client.with_token("s3cret").metrics().await.unwrap(),
        "up 1\n"
    );
}

#[tokio::test]
async fn evidence_queries_name_only_what_is_given() {
    let app = Router::new().route(
        "/evidence",
        get(
            |axum::extract::RawQuery(raw): axum::extract::RawQuery| async move {
                Json(quasar_client::EvidenceList {
                    count: 1,
                    evidence: vec![quasar_client::EvidenceEntry {
                        kind: raw.unwrap_or_default(),
                        signer: 2,
                        view: 3,
                        first: "00".into(),
                        second: "01".into(),
                    }],
                })
            },
        ),
    );
    let client = serve(app).await;
    let query = |list: quasar_client::EvidenceList| list.evidence[0].kind.clone();
    assert_eq!(query(client.evidence(None, None).await.unwrap()), "");
    assert_eq!(
        query(client.evidence(Some(5), Some(9)).await.unwrap()),
        "limit=5&from_view=9"
    );
    assert_eq!(
        query(client.evidence(None, Some(9)).await.unwrap()),
        "from_view=9"
    );
}

/// A node that is not there: the error names the URL once, the cause, and what to check (not
/// the URL twice behind reqwest's "error sending request").
#[tokio::test]
async fn an_unreachable_node_is_an_http_error_naming_the_url() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::with_http(
        http_client(Duration::from_secs(2)).unwrap(),
        format!("http://127.0.0.1:{port}"),
    );
    match client.status().await {
        Err(e @ ClientError::Http { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains(&format!("127.0.0.1:{port}/status")),
                "{message}"
            );
            assert!(message.contains("is the node running"), "{message}");
            assert!(!message.contains("error sending request"), "{message}");
            assert_eq!(message.matches(&format!(":{port}")).count(), 1, "{message}");
        }
        other => panic!("{other:?}"),
    }
}
