//! How is MCP served over HTTP? Streamable HTTP at `/mcp` (rmcp's service inside an axum
//! router), behind the server's API keys when they are set.
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{McpError, QuarryMcp};
use crate::ServerError;

/// The key a request presents: `Authorization: ApiKey <key>` (as `quarry serve`) or
/// `Bearer <key>` (what MCP hosts send).
fn presented(req: &Request) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    v.strip_prefix("ApiKey ")
        .or_else(|| v.strip_prefix("Bearer "))
        .map(str::trim)
}

async fn check_key(State(keys): State<Arc<Vec<String>>>, req: Request, next: Next) -> Response {
    if presented(&req).is_some_and(|p| keys.iter().any(|k| k == p)) {
        return next.run(req).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        "missing or invalid API key: send `Authorization: Bearer <key>` (or `ApiKey <key>`)\n",
    )
        .into_response()
}

/// Serves streamable HTTP on `addr` (at `/mcp`) until SIGTERM or Ctrl-C; prints
/// `quarry mcp listening on http://ADDR/mcp` once bound (port 0 picks a free port). Without
/// keys only loopback `Host`s are accepted (rmcp's guard against DNS rebinding); with keys
/// any host, since every request must carry a key.
pub async fn serve_http(
    server: QuarryMcp,
    addr: SocketAddr,
    api_keys: Option<Vec<String>>,
) -> Result<(), McpError> {
    let stop = CancellationToken::new();
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    if api_keys.is_some() {
        config = config.disable_allowed_hosts();
    }
    let service: StreamableHttpService<QuarryMcp, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(keys) = api_keys {
        router = router.layer(axum::middleware::from_fn_with_state(
            Arc::new(keys),
            check_key,
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    let bound = listener.local_addr()?;
    println!("quarry mcp listening on http://{bound}/mcp");
    tracing::info!(addr = %bound, "MCP over streamable HTTP");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            crate::shutdown_signal().await;
            stop.cancel();
        })
        .await?;
    Ok(())
}
