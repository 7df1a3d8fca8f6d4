//! What does a failed request answer? Elasticsearch-shaped error bodies with the right status.
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A request that failed: an HTTP status, an Elasticsearch error type and a reason.
///
/// The body is `{"error": {"type", "reason", "root_cause": [..]}, "status": N}`, which is what
/// the Elasticsearch clients read to build their exceptions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind} ({status}): {reason}")]
pub struct ApiError {
    /// The HTTP status (4xx for the client's mistakes, 5xx only for the server's own).
    pub status: StatusCode,
    /// Elasticsearch's `error.type`, e.g. `parsing_exception`.
    pub kind: &'static str,
    /// A sentence saying what was wrong and where.
    pub reason: String,
    /// The index the error concerns, when there is one.
    pub index: Option<String>,
}

impl ApiError {
    /// An error with the given status, type and reason.
    pub fn new(status: StatusCode, kind: &'static str, reason: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            reason: reason.into(),
            index: None,
        }
    }
    /// 400 `parsing_exception`: the request body could not be read as the API expects.
    pub fn parsing(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "parsing_exception", reason)
    }
    /// 400 `illegal_argument_exception`.
    pub fn illegal(reason: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "illegal_argument_exception",
            reason,
        )
    }
    /// 400 `x_content_parse_exception`: malformed JSON.
    pub fn json(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "x_content_parse_exception", reason)
    }
    /// 400 for a feature this server does not implement (named in the reason).
    pub fn unsupported(what: impl std::fmt::Display) -> Self {
        Self::illegal(format!("{what} is not supported by quarry"))
    }
    /// 404 `index_not_found_exception`.
    pub fn no_index(index: &str) -> Self {
        let mut e = Self::new(
            StatusCode::NOT_FOUND,
            "index_not_found_exception",
            format!("no such index [{index}]"),
        );
        e.index = Some(index.to_string());
        e
    }
    /// 500 for failures of the server itself (I/O, corrupt files).
    pub fn internal(reason: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "exception",
            reason.into(),
        )
    }
    /// Attaches the index name.
    pub fn in_index(mut self, index: &str) -> Self {
        self.index = Some(index.to_string());
        self
    }

    /// The JSON `error` object (also used for `_bulk` item errors).
    pub fn error_object(&self) -> serde_json::Value {
        let mut cause = json!({"type": self.kind, "reason": self.reason});
        if let Some(i) = &self.index {
            cause["index"] = json!(i);
        }
        let mut obj = cause.clone();
        obj["root_cause"] = json!([cause]);
        obj
    }
}

/// Maps an engine error: input errors are 400, everything else (I/O, corruption) 500.
impl From<quarry::Error> for ApiError {
    fn from(e: quarry::Error) -> Self {
        use quarry::Error as E;
        match &e {
            E::Document { .. } => Self::new(
                StatusCode::BAD_REQUEST,
                "document_parsing_exception",
                e.to_string(),
            ),
            E::Json { .. } => Self::json(e.to_string()),
            E::Schema(_) => Self::new(
                StatusCode::BAD_REQUEST,
                "mapper_parsing_exception",
                e.to_string(),
            ),
            E::Parse(_) | E::UnknownField { .. } | E::Query(_) => Self::new(
                StatusCode::BAD_REQUEST,
                "query_shard_exception",
                e.to_string(),
            ),
            E::InvalidArgument(_) => Self::illegal(e.to_string()),
            _ => Self::internal(e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.error_object(), "status": self.status.as_u16()});
        (self.status, axum::Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_type_reason_and_root_cause() {
        let e = ApiError::no_index("books");
        let o = e.error_object();
        assert_eq!(o["type"], "index_not_found_exception");
        assert_eq!(o["root_cause"][0]["reason"], "no such index [books]");
        assert_eq!(o["index"], "books");
    }

    #[test]
    fn engine_input_errors_are_client_errors() {
        let e: ApiError = quarry::Error::Document {
            field: "x".into(),
            reason: "bad".into(),
        }
        .into();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        let e: ApiError = quarry::Error::Corrupt {
            file: "a".into(),
            offset: None,
            reason: "b".into(),
        }
        .into();
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
