//! Requests to the server's router in-process, shared by the integration tests.
use axum::body::Body;
use axum::http::{Request, StatusCode};
use quarry_server::{app, AppState};
use serde_json::Value;
use tower::ServiceExt;

/// `method uri` with a JSON body: the status and the answer (JSON, or the text as a string).
pub async fn call(
    state: &AppState,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call_raw(
        state,
        method,
        uri,
        body.map(|b| b.to_string()),
        "application/json",
    )
    .await
}

/// [`call`] with a body of any content type.
pub async fn call_raw(
    state: &AppState,
    method: &str,
    uri: &str,
    body: Option<String>,
    ct: &str,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if body.is_some() {
        req = req.header("content-type", ct);
    }
    let req = req.body(Body::from(body.unwrap_or_default())).unwrap();
    let resp = app(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, body)
}
