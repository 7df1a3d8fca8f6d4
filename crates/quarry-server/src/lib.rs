#![forbid(unsafe_code)]
//! quarry-server: how do clients reach quarry over HTTP? An Elasticsearch-compatible subset of
//! the REST API (axum on tokio), with a per-index translog for durable writes.
//!
//! Start it with [`run`] (what `quarry serve` calls), or build the [`app`] router over an
//! [`AppState`] to drive it in-process (tests).
//!
//! Modules: [`routes`] (the routing table; handlers in `routes::{admin, documents,
//! searching, multi}`), [`dsl`] (query DSL → `Query`), [`bulk`] (NDJSON), [`search`] (request
//! parameters and response shape), [`engine`] (the one owner of engine handles; writes,
//! versions and refresh scheduling in `engine::{write, versions, refresh}`), [`indices`]
//! (registry under the data directory), [`translog`], [`mapping`] (with [`dense_vector`]),
//! [`knn`] and [`retriever`] (vector search and rank fusion), [`metrics`], [`error`]; [`mcp`]
//! serves the same engine to AI agents over the Model Context Protocol (`quarry mcp`).
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::sync::Semaphore;

pub mod aliases;
pub mod bulk;
pub mod dense_vector;
pub mod dsl;
pub mod engine;
pub mod error;
pub mod highlight;
pub mod indices;
pub mod inference;
pub mod knn;
pub mod mapping;
pub mod mcp;
pub mod metrics;
pub mod multi_index;
pub mod resolve;
pub mod retriever;
pub mod routes;
pub mod search;
pub mod semantic;
pub mod translog;

pub use error::ApiError;

/// Server settings (the `quarry serve` flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// Directory holding one sub-directory per index.
    pub data: PathBuf,
    /// Address to listen on (default loopback `127.0.0.1:9200`).
    pub listen: SocketAddr,
    /// Accepted API keys; `None` disables authentication.
    pub api_keys: Option<Vec<String>>,
    /// Largest request body accepted (413 beyond).
    pub max_body_bytes: usize,
    /// Engine calls (searches, writes) running at once on the blocking pool.
    pub workers: usize,
    /// The time budget of a search that gives no `timeout` (`None`: unlimited, as in
    /// Elasticsearch's `search.default_search_timeout`).
    pub default_search_timeout: Option<std::time::Duration>,
}

impl Config {
    /// Defaults for a data directory: loopback port 9200, no keys, 100 MB bodies (as
    /// Elasticsearch's `http.max_content_length`), one worker per core plus one.
    pub fn new(data: impl Into<PathBuf>) -> Self {
        Config {
            data: data.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 9200)),
            api_keys: None,
            max_body_bytes: 100 << 20,
            workers: std::thread::available_parallelism().map_or(2, |n| n.get() + 1),
            default_search_timeout: None,
        }
    }
}

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot read the API key file {path}: {source}")]
    KeyFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the API key file {path} holds no key (one key per line)")]
    NoKeys { path: PathBuf },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot open the indexes in {path}: {source}")]
    Open { path: PathBuf, source: ApiError },
    #[error("server I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("final commit of index {index} failed: {source}")]
    Close { index: String, source: ApiError },
}

/// Reads API keys, one per line (blank lines and `#` comments skipped).
pub fn load_api_keys(path: &Path) -> Result<Vec<String>, ServerError> {
    let text = std::fs::read_to_string(path).map_err(|source| ServerError::KeyFile {
        path: path.to_path_buf(),
        source,
    })?;
    let keys: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if keys.is_empty() {
        return Err(ServerError::NoKeys {
            path: path.to_path_buf(),
        });
    }
    Ok(keys)
}

/// Shared state of the handlers.
#[derive(Clone)]
pub struct AppState {
    pub indices: Arc<indices::Indices>,
    pub metrics: Arc<metrics::Metrics>,
    pub config: Arc<Config>,
    /// Bounds the engine work running at once.
    pub permits: Arc<Semaphore>,
}

impl AppState {
    /// Opens the data directory (replaying translogs).
    pub fn open(config: Config) -> Result<Self, ServerError> {
        let metrics = Arc::new(metrics::Metrics::default());
        let indices = indices::Indices::open(&config.data, metrics.clone()).map_err(|source| {
            ServerError::Open {
                path: config.data.clone(),
                source,
            }
        })?;
        Ok(AppState {
            indices: Arc::new(indices),
            metrics,
            permits: Arc::new(Semaphore::new(config.workers.max(1))),
            config: Arc::new(config),
        })
    }

    /// Commits every index (shutdown).
    pub fn close(&self) -> Result<(), ServerError> {
        for h in self.indices.all() {
            h.close().map_err(|source| ServerError::Close {
                index: h.name().to_string(),
                source,
            })?;
        }
        Ok(())
    }
}

/// The router with all middleware: product header, auth, media types, body limit, metrics.
pub fn app(state: AppState) -> Router {
    routes::routes()
        .fallback(routes::fallback)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            check_request,
        ))
        .layer(axum::middleware::from_fn_with_state(state.clone(), observe))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state)
}

/// Outermost layer: the product header on every response, metrics and logs.
async fn observe(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let endpoint = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let mut resp = next.run(req).await;
    resp.headers_mut().insert(
        "x-elastic-product",
        HeaderValue::from_static("Elasticsearch"),
    );
    let status = resp.status();
    let took = start.elapsed();
    state
        .metrics
        .request(method.as_str(), &endpoint, status.as_u16(), took);
    if status.is_server_error() {
        tracing::error!(%method, %path, status = status.as_u16(), ?took, "request failed");
    } else {
        tracing::debug!(%method, %path, status = status.as_u16(), ?took, "request");
    }
    resp
}

/// Whether a `Content-Type` is one Elasticsearch accepts (JSON, NDJSON, the vnd forms with
/// `compatible-with=7|8|9`).
pub fn media_type_ok(value: &str) -> bool {
    let mut parts = value.split(';').map(|p| p.trim().to_ascii_lowercase());
    let mime = parts.next().unwrap_or_default();
    match mime.as_str() {
        "application/json" | "application/x-ndjson" => true,
        "application/vnd.elasticsearch+json" | "application/vnd.elasticsearch+x-ndjson" => parts
            .all(|p| match p.split_once('=') {
                Some((k, v)) if k.trim() == "compatible-with" => {
                    matches!(v.trim(), "7" | "8" | "9")
                }
                _ => true,
            }),
        _ => false,
    }
}

/// Inner layer: API keys, media type, and the body size limit (the body is read here once).
async fn check_request(State(state): State<AppState>, req: Request, next: Next) -> Response {
    match checked(&state, req).await {
        Ok(req) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

async fn checked(state: &AppState, req: Request) -> Result<Request, ApiError> {
    if let Some(keys) = &state.config.api_keys {
        let health = req.method() == Method::GET && req.uri().path() == "/";
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("ApiKey "))
            .map(str::trim);
        if !health && !presented.is_some_and(|p| keys.iter().any(|k| k == p)) {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "security_exception",
                "missing or invalid API key: send `Authorization: ApiKey <key>`",
            ));
        }
    }
    let (parts, body) = req.into_parts();
    let bytes = routes::read_limited(body, state.config.max_body_bytes, &parts.headers).await?;
    if !bytes.is_empty() {
        if let Some(ct) = parts.headers.get(header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or_default();
            if !media_type_ok(ct) {
                return Err(ApiError::new(
                    StatusCode::NOT_ACCEPTABLE,
                    "media_type_header_exception",
                    format!("Content-Type header [{ct}] is not supported"),
                ));
            }
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The refresh and commit scheduler: a plain thread (refresh is blocking engine work) that
/// every 50 ms refreshes indexes whose `refresh_interval` has passed and commits those whose
/// commit is due (see [`engine::refresh`]). Stopped and joined when dropped.
pub struct Refresher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Refresher {
    /// Starts the scheduler over the state's indexes (`quarry serve` starts one; in-process
    /// users start one when they want scheduled refreshes).
    pub fn start(state: &AppState) -> Refresher {
        let indices = state.indices.clone();
        Self::over(move || indices.all())
    }

    /// Starts the scheduler over the indexes `handles` returns each round (`quarry mcp
    /// --index` has one index and no registry).
    pub fn over(handles: impl Fn() -> Vec<Arc<engine::IndexHandle>> + Send + 'static) -> Refresher {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || refresh_loop(handles, flag));
        Refresher {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn refresh_loop(handles: impl Fn() -> Vec<Arc<engine::IndexHandle>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        for h in handles() {
            if h.commit_due() {
                if let Err(e) = h.commit() {
                    tracing::error!(index = h.name(), error = %e, "scheduled commit failed");
                }
            } else if h.refresh_due() {
                if let Err(e) = h.refresh() {
                    tracing::error!(index = h.name(), error = %e, "scheduled refresh failed");
                }
            }
        }
    }
}

/// Serves until SIGTERM or Ctrl-C, then finishes in-flight requests and commits every index.
/// Prints `quarry listening on http://ADDR` once bound (port 0 picks a free port).
pub async fn serve(config: Config) -> Result<(), ServerError> {
    let listen = config.listen;
    let state = tokio::task::spawn_blocking(move || AppState::open(config))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| ServerError::Bind {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr()?;
    println!("quarry listening on http://{addr}");
    tracing::info!(%addr, "listening");
    let refresher = Refresher::start(&state);
    axum::serve(listener, app(state.clone()))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    tracing::info!("shutting down: final commit");
    drop(refresher);
    tokio::task::spawn_blocking(move || state.close())
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// Runs the server on its own multi-threaded runtime, with `tracing` logs to stderr (level from
/// `RUST_LOG`, default `info`).
pub fn run(config: Config) -> Result<(), ServerError> {
    on_runtime("info", serve(config))?
}

/// Runs `future` on a new multi-threaded runtime, with `tracing` logs to stderr (never stdout,
/// which `quarry mcp` speaks on) at `RUST_LOG`'s level, else `default_level`.
pub(crate) fn on_runtime<F: std::future::Future>(
    default_level: &str,
    future: F,
) -> std::io::Result<F::Output> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let out = rt.block_on(future);
    // Not a plain drop, which waits for every blocking task: `quarry mcp`'s stdin reader is one,
    // and it waits for a line that never comes when a signal, not the client, ended the session.
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        for ok in [
            "application/json",
            "application/json; charset=UTF-8",
            "application/x-ndjson",
            "application/vnd.elasticsearch+json; compatible-with=8",
            "application/vnd.elasticsearch+x-ndjson;compatible-with=9",
            "Application/VND.elasticsearch+json; compatible-with = 7",
        ] {
            assert!(media_type_ok(ok), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/vnd.elasticsearch+json; compatible-with=6",
        ] {
            assert!(!media_type_ok(bad), "{bad}");
        }
    }
}
