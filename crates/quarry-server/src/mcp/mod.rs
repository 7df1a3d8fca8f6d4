//! How do AI agents reach quarry? `quarry mcp`: a Model Context Protocol server (the official
//! Rust SDK, `rmcp`) over stdio or streamable HTTP, on the HTTP server's own engine.
//!
//! The tools ([`tools`]) run the server's code paths: an index is an
//! [`IndexHandle`] of the registry ([`crate::indices`]) or one index
//! directory; `search`, `count`, `semantic_search` and `hybrid_search` build the `_search` /
//! `_count` body the HTTP API takes ([`args`]) and run it through [`crate::multi_index::run`]
//! (query DSL, Lucene syntax, highlighting, kNN, RRF), so they answer exactly as `quarry serve`;
//! writes go through the translog and are acknowledged once synced. Answers are bounded
//! ([`answer`], [`Limits`]). Writes are off unless `--allow-writes`.
//!
//! Transports: [`serve_stdio`] (the host starts `quarry mcp` and speaks JSON-RPC lines on its
//! standard streams; logs go to stderr) and [`serve_http`] (streamable HTTP at `/mcp`, loopback
//! only unless API keys are set).
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::IndexHandle;
use crate::metrics::Metrics;
use crate::{AppState, Config, Refresher, ServerError};

pub mod answer;
pub mod args;
mod http;
pub mod tools;

pub use tools::QuarryMcp;

/// The caps on what one tool call returns (stated in the tool descriptions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Most hits one search returns (`size`, `k`).
    pub max_size: usize,
    /// Longest string of a hit's fields, in bytes (longer ones are cut and marked).
    pub max_text_bytes: usize,
    /// Largest answer, in bytes of JSON.
    pub max_answer_bytes: usize,
    /// Time budget of one search: the best hits found within it are returned.
    pub search_timeout: Duration,
}

impl Default for Limits {
    /// 100 hits, 2,000 bytes per string, 64 KiB per answer (about 16,000 tokens), 10 s.
    fn default() -> Self {
        Limits {
            max_size: 100,
            max_text_bytes: 2_000,
            max_answer_bytes: 64 << 10,
            search_timeout: Duration::from_secs(10),
        }
    }
}

/// What `quarry mcp` serves.
#[derive(Debug, Clone)]
pub enum Source {
    /// Every index under a data directory (the one `quarry serve --data` uses).
    Data(PathBuf),
    /// One index directory of that layout (`DATA/<name>`), named by its last component.
    Index(PathBuf),
}

/// The `quarry mcp` settings.
#[derive(Debug, Clone)]
pub struct McpConfig {
    pub source: Source,
    /// Offer `create_index`, `index_documents` and `delete_documents`.
    pub allow_writes: bool,
    /// Streamable HTTP on this address instead of stdio.
    pub listen: Option<SocketAddr>,
    /// Accepted API keys over HTTP (`Authorization: ApiKey <key>` or `Bearer <key>`).
    pub api_keys: Option<Vec<String>>,
    pub limits: Limits,
}

impl McpConfig {
    /// Stdio, read-only, default caps.
    pub fn new(source: Source) -> Self {
        McpConfig {
            source,
            allow_writes: false,
            listen: None,
            api_keys: None,
            limits: Limits::default(),
        }
    }
}

/// Why `quarry mcp` could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("refusing to listen on {addr}, which is not a loopback address, without API keys: pass --api-key-file, or listen on 127.0.0.1")]
    PublicWithoutKeys { addr: SocketAddr },
    #[error("{path} is not an index directory of `quarry serve` (it has no `index` sub-directory); pass its parent with --data, or build it with `quarry serve`")]
    NotAnIndex { path: PathBuf },
    #[error("the index directory {path} has no name usable as an index name: {reason}")]
    BadName { path: PathBuf, reason: String },
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("MCP transport: {0}")]
    Transport(String),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// The indexes the tools see.
/// Either way [`serve`] runs the server's refresh and commit scheduler over them.
pub enum Backend {
    /// A data directory's registry.
    Data(AppState),
    /// One index.
    One(Arc<IndexHandle>),
}

impl Backend {
    /// Opens the source (replaying translogs), as `quarry serve` does.
    pub fn open(source: &Source) -> Result<Backend, McpError> {
        match source {
            Source::Data(dir) => Ok(Backend::Data(AppState::open(Config::new(dir.clone()))?)),
            Source::Index(dir) => {
                if !dir.join("index").is_dir() {
                    return Err(McpError::NotAnIndex { path: dir.clone() });
                }
                let name = dir
                    .canonicalize()?
                    .file_name()
                    .and_then(|n| n.to_str())
                    .map(str::to_string)
                    .unwrap_or_default();
                crate::mapping::check_index_name(&name).map_err(|e| McpError::BadName {
                    path: dir.clone(),
                    reason: e.reason,
                })?;
                let h = IndexHandle::open(&name, dir, Arc::new(Metrics::default())).map_err(
                    |source| ServerError::Open {
                        path: dir.clone(),
                        source,
                    },
                )?;
                Ok(Backend::One(Arc::new(h)))
            }
        }
    }

    /// Commits every index (shutdown).
    pub fn close(&self) -> Result<(), ServerError> {
        match self {
            Backend::Data(state) => state.close(),
            Backend::One(h) => h.close().map_err(|source| ServerError::Close {
                index: h.name().to_string(),
                source,
            }),
        }
    }
}

/// Opens the source, serves until the client leaves (stdio) or a signal (HTTP), then commits.
pub async fn serve(config: McpConfig) -> Result<(), McpError> {
    if let Some(addr) = config.listen {
        if !addr.ip().is_loopback() && config.api_keys.is_none() {
            return Err(McpError::PublicWithoutKeys { addr });
        }
    }
    let source = config.source.clone();
    let backend = tokio::task::spawn_blocking(move || Backend::open(&source))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    let backend = Arc::new(backend);
    let refresher = match &*backend {
        Backend::Data(state) => Refresher::start(state),
        Backend::One(h) => {
            let h = h.clone();
            Refresher::over(move || vec![h.clone()])
        }
    };
    let server = QuarryMcp::new(backend.clone(), config.allow_writes, config.limits);
    let served = match config.listen {
        Some(addr) => http::serve_http(server, addr, config.api_keys.clone()).await,
        None => serve_stdio(server).await,
    };
    drop(refresher);
    let closing = backend.clone();
    tokio::task::spawn_blocking(move || closing.close())
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    served
}

/// Serves one session on standard input and output until the client closes them or a signal
/// (SIGTERM, Ctrl-C) arrives, also during the handshake.
pub async fn serve_stdio(server: QuarryMcp) -> Result<(), McpError> {
    use rmcp::ServiceExt;
    let transport = |e: &dyn std::fmt::Display| McpError::Transport(e.to_string());
    let session = async {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| transport(&e))?;
        running.waiting().await.map_err(|e| transport(&e))?;
        Ok(())
    };
    tokio::select! {
        r = session => r,
        _ = crate::shutdown_signal() => Ok(()),
    }
}

pub use http::serve_http;

/// Runs [`serve`] on its own runtime with `tracing` logs to stderr (stdout is the protocol's in
/// stdio mode; level from `RUST_LOG`, default `warn`).
pub fn run(config: McpConfig) -> Result<(), McpError> {
    crate::on_runtime("warn", serve(config))?
}
