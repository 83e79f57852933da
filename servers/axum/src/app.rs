//! The HTTP layer: axum's Router for "/" and "/workday".

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::contract::{ALLOW, Answer, CONTENT_TYPE, Service};

/// The name in the hello body; must equal display_name in server.toml
/// (tests/http.rs checks it).
pub const DISPLAY_NAME: &str = "Rust axum";

/// The router of the contract.
///
/// - `get(...)` also answers HEAD: axum runs the GET handler, sets
///   Content-Length from the body's exact size and drops the body.
/// - Paths match exactly: axum never redirects "/workday/" (404).
/// - Another method on a known path reaches `method_not_allowed`; other
///   paths reach `not_found`.
/// - No middleware: no logging, no compression, no tracing.
pub fn router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/workday", get(workday))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .with_state(service)
}

/// `Uri` rather than axum's `Query`: the contract's strict rules (a repeated
/// or undecodable n or at is a 400, '+' is a space, ';' is not a
/// separator) need the raw query string; `Query` would go through serde.
async fn root(State(service): State<Arc<Service>>, uri: Uri) -> Response {
    answer(service.root(uri.query(), SystemTime::now()))
}

async fn workday(State(service): State<Arc<Service>>, uri: Uri) -> Response {
    answer(service.workday(uri.query(), SystemTime::now()))
}

/// 200 and 400 answers: the exact Content-Type, and a body of known length
/// (hyper writes Content-Length from it, never chunked). hyper adds Date.
fn answer(answer: Answer) -> Response {
    let (status, body) = match answer {
        Answer::Ok(body) => (StatusCode::OK, Bytes::from(body)),
        Answer::OkStatic(body) => (StatusCode::OK, Bytes::from_static(body)),
        Answer::BadRequest(text) => (StatusCode::BAD_REQUEST, Bytes::from_static(text.as_bytes())),
    };
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))],
        body,
    )
        .into_response()
}

/// axum's own 405 lists the methods as "GET,HEAD"; the Allow header set
/// here (axum keeps one a handler sets) spells it "GET, HEAD" like the
/// contract and the other stacks. Both routes allow the same methods.
async fn method_not_allowed() -> impl IntoResponse {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, HeaderValue::from_static(ALLOW))],
        "method not allowed",
    )
}

async fn not_found() -> impl IntoResponse {
    (StatusCode::NOT_FOUND, "not found")
}
