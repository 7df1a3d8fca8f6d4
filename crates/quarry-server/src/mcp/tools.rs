//! Which tools does `quarry mcp` offer, and what does each do?
//!
//! Read tools: `list_indices`, `get_mapping`, `search`, `count`, `get_document`,
//! `semantic_search`, `hybrid_search`. Write tools (only with `--allow-writes`): `create_index`,
//! `index_documents`, `delete_documents`. Every failure the caller can fix (an unknown index,
//! a query that does not parse, a cap exceeded) is a tool error (`isError: true`) whose text
//! names the problem; the session goes on. Engine work runs on the blocking pool.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler};
use serde_json::{json, Value};

use super::answer::{document_answer, search_answer, PassageText};
use super::args::{
    CountArgs, CreateIndexArgs, DeleteDocsArgs, Embed, GetArgs, HybridArgs, IndexArg,
    IndexDocsArgs, SearchArgs, SemanticArgs, MAX_WRITE_BATCH,
};
use super::{Backend, Limits};
use crate::engine::{Condition, IndexHandle, WriteOp};
use crate::error::ApiError;
use crate::mapping::{check_index_name, mappings_of};

/// The tools that change an index, offered only with `--allow-writes`.
pub const WRITE_TOOLS: &[&str] = &["create_index", "index_documents", "delete_documents"];

/// A tool's failure: the text the caller sees.
type ToolResult = Result<CallToolResult, ErrorData>;

fn fail(text: impl Into<String>) -> ToolResult {
    Ok(CallToolResult::error(vec![ContentBlock::text(text.into())]))
}

fn api_fail(e: &ApiError) -> ToolResult {
    match &e.index {
        Some(i) => fail(format!("{} (index {i}): {}", e.kind, e.reason)),
        None => fail(format!("{}: {}", e.kind, e.reason)),
    }
}

fn answer(v: Value) -> ToolResult {
    Ok(CallToolResult::structured(v))
}

/// The text-to-vector step of `semantic_search` and `hybrid_search`: the question embedded by
/// the model of the field (a `semantic_text` field's hidden vector field, or a `dense_vector`
/// mapped with `embed`), as the HTTP API's `query_vector_builder` does. A field without a
/// model, an unknown index, a missing or damaged model: a tool error naming it.
fn embed_question(
    h: &Result<Arc<IndexHandle>, ApiError>,
    field: &str,
    question: &str,
) -> Result<Vec<f32>, String> {
    let text = |e: &ApiError| format!("{}: {}", e.kind, e.reason);
    let h = h.as_ref().map_err(text)?;
    let hidden = crate::mapping::semantic_vector_field(field);
    let f = match h.schema().field_by_name(&hidden) {
        Some(_) => hidden.as_str(),
        None => field,
    };
    h.embed_query(f, question)
        .map_err(|e| format!("{}; or pass `vector`", text(&e)))
}

/// The MCP server: the indexes, the caps, and the tool table.
#[derive(Clone)]
pub struct QuarryMcp {
    backend: Arc<Backend>,
    limits: Limits,
    tool_router: ToolRouter<QuarryMcp>,
}

impl QuarryMcp {
    /// The server over `backend`; the write tools are listed only when `allow_writes`. The caps
    /// are written into the tool descriptions (`{max_size}`, `{max_text_bytes}`,
    /// `{max_answer_bytes}`).
    pub fn new(backend: Arc<Backend>, allow_writes: bool, limits: Limits) -> Self {
        let mut router = ToolRouter::new();
        for mut route in Self::tool_router() {
            let write = WRITE_TOOLS.contains(&&*route.attr.name);
            if write && !allow_writes {
                continue;
            }
            if let Some(d) = &route.attr.description {
                let d = d
                    .replace("{max_size}", &limits.max_size.to_string())
                    .replace("{max_text_bytes}", &limits.max_text_bytes.to_string())
                    .replace("{max_answer_bytes}", &limits.max_answer_bytes.to_string());
                route.attr.description = Some(d.into());
            }
            route.attr.annotations = Some(ToolAnnotations::new().read_only(!write).destructive(
                route.attr.name == "delete_documents" || route.attr.name == "index_documents",
            ));
            router.add_route(route);
        }
        QuarryMcp {
            backend,
            limits,
            tool_router: router,
        }
    }

    /// The names of the tools offered, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        let mut n: Vec<String> = self
            .tool_router
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        n.sort();
        n
    }

    /// The index `name`: a valid index name (so never a path: no `/`, `..` or absolute
    /// path can reach the file system), then looked up among the open indexes and aliases.
    pub fn handle(&self, name: &str) -> Result<Arc<IndexHandle>, ApiError> {
        check_index_name(name)?;
        match &*self.backend {
            Backend::Data(state) => state.indices.get(name),
            Backend::One(h) if h.name() == name => Ok(h.clone()),
            Backend::One(h) => {
                let mut e = ApiError::no_index(name);
                e.reason = format!(
                    "no such index [{name}]: this server serves only [{}]",
                    h.name()
                );
                Err(e)
            }
        }
    }

    fn handles(&self) -> Vec<Arc<IndexHandle>> {
        match &*self.backend {
            Backend::Data(state) => state.indices.all(),
            Backend::One(h) => vec![h.clone()],
        }
    }

    /// Runs `f` on the blocking pool; a panic becomes a tool error, not a dead session.
    async fn blocking<F>(f: F) -> ToolResult
    where
        F: FnOnce() -> ToolResult + Send + 'static,
    {
        match tokio::task::spawn_blocking(f).await {
            Ok(r) => r,
            Err(e) => fail(format!("internal error: {e}")),
        }
    }

    /// Builds a search body with `build`, whose question (if any) is embedded by `index`'s
    /// model, on the blocking pool (embedding runs the model).
    async fn embedded_body<F>(&self, index: &str, build: F) -> Result<Value, ToolResult>
    where
        F: FnOnce(&Limits, &Embed) -> Result<Value, String> + Send + 'static,
    {
        let h = self.handle(index);
        let limits = self.limits;
        let r = tokio::task::spawn_blocking(move || {
            let embed = move |field: &str, q: &str| embed_question(&h, field, q);
            build(&limits, &embed)
        })
        .await;
        match r {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(e)) => Err(fail(e)),
            Err(e) => Err(fail(format!("internal error: {e}"))),
        }
    }

    /// The stored text field whose passages vector field `field` of `index` embeds: a
    /// `semantic_text` field's own text, or a `dense_vector`'s `embed.from`. None for a field
    /// without a model (its vectors are never passages) or an unknown index (the search says).
    fn passage_source(&self, index: &str, field: &str) -> Option<String> {
        let h = self.handle(index).ok()?;
        let schema = h.schema();
        if schema
            .field_by_name(&crate::mapping::semantic_vector_field(field))
            .is_some()
        {
            return Some(field.to_string());
        }
        schema
            .field_by_name(field)?
            .embed
            .as_ref()
            .map(|e| e.from.clone())
    }

    /// Runs a kNN search body (`semantic_search`, `hybrid_search`) on one index: its hits
    /// carry the passage that matched, with its text from the same hit.
    async fn run_knn_search(&self, index: String, field: &str, mut body: Value) -> ToolResult {
        let passages = self
            .passage_source(&index, field)
            .map(|f| PassageText::ask(&mut body, &f));
        self.run(index, body, false, passages).await
    }

    /// Runs a `_search` (or `_count`) body on one index, as the HTTP server does.
    async fn run_search(&self, index: String, body: Value, count_only: bool) -> ToolResult {
        self.run(index, body, count_only, None).await
    }

    async fn run(
        &self,
        index: String,
        body: Value,
        count_only: bool,
        passages: Option<PassageText>,
    ) -> ToolResult {
        let h = match self.handle(&index) {
            Ok(h) => h,
            Err(e) => return api_fail(&e),
        };
        let limits = self.limits;
        Self::blocking(move || {
            let start = Instant::now();
            let es = crate::multi_index::run(
                &[h],
                &body,
                &HashMap::new(),
                count_only,
                start,
                Some(limits.search_timeout),
            );
            match es {
                Ok(es) if count_only => answer(json!({"index": index, "count": es["count"]})),
                Ok(es) => answer(search_answer(&index, &es, &limits, passages.as_ref())),
                Err(e) => api_fail(&e),
            }
        })
        .await
    }

    /// Applies writes to one index; acknowledged only once the translog holds them durably.
    async fn run_writes(&self, index: String, ops: Vec<WriteOp>, refresh: bool) -> ToolResult {
        if ops.len() > MAX_WRITE_BATCH {
            return fail(format!(
                "{} writes in one call; at most {MAX_WRITE_BATCH}: split them",
                ops.len()
            ));
        }
        let h = match self.handle(&index) {
            Ok(h) => h,
            Err(e) => return api_fail(&e),
        };
        Self::blocking(move || {
            let n = ops.len();
            let (results, seq) = h.write(ops);
            if let Err(e) = h.sync(seq) {
                return fail(format!(
                    "the writes were applied but could not be made durable, so they are not acknowledged: {}",
                    e.reason
                ));
            }
            if refresh {
                if let Err(e) = h.refresh() {
                    return api_fail(&e);
                }
            }
            let mut counts: HashMap<&str, u64> = HashMap::new();
            let mut items = Vec::new();
            let mut errors = Vec::new();
            for (i, r) in results.iter().enumerate() {
                match r {
                    Ok(o) => {
                        *counts.entry(o.result).or_default() += 1;
                        if n <= 100 {
                            items.push(json!({"id": o.id, "result": o.result, "version": o.meta.version}));
                        }
                    }
                    Err(e) => {
                        *counts.entry("failed").or_default() += 1;
                        if errors.len() < 20 {
                            errors.push(json!({"position": i, "error": format!("{}: {}", e.kind, e.reason)}));
                        }
                    }
                }
            }
            let mut a = json!({
                "index": h.name(),
                "acknowledged": true,
                "durable": true,
                "searchable": refresh,
                "counts": counts,
            });
            if !items.is_empty() {
                a["items"] = json!(items);
            }
            if !errors.is_empty() {
                a["errors"] = json!(errors);
            }
            answer(a)
        })
        .await
    }
}

#[tool_router]
impl QuarryMcp {
    #[tool(
        description = "List the indexes: for each its name, number of live documents and fields with their types (text fields are searched with BM25, keyword/number/date fields filtered exactly, dense_vector fields by semantic_search). Call this first."
    )]
    async fn list_indices(&self) -> ToolResult {
        let handles = self.handles();
        Self::blocking(move || {
            let list: Vec<Value> = handles
                .iter()
                .map(|h| {
                    let props = mappings_of(h.schema())["properties"].clone();
                    let fields: serde_json::Map<String, Value> = props
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), v["type"].clone()))
                        .collect();
                    json!({"name": h.name(), "docs": h.searcher().live_doc_count(), "fields": fields})
                })
                .collect();
            answer(json!({"indices": list}))
        })
        .await
    }

    #[tool(
        description = "The Elasticsearch mapping of one index: every field with its type and options (`format` of dates, `dims` and `similarity` of dense_vector fields)."
    )]
    async fn get_mapping(&self, Parameters(a): Parameters<IndexArg>) -> ToolResult {
        match self.handle(&a.index) {
            Ok(h) => answer(json!({"index": h.name(), "mappings": mappings_of(h.schema())})),
            Err(e) => api_fail(&e),
        }
    }

    #[tool(
        description = "Full-text search of one index, ranked by BM25 exactly as Lucene ranks. The query is Lucene's classic syntax in `query` (`oil AND prices`, `title:\"crude oil\"`, `year:[1990 TO 2000]`, `pric*`, `roam~1`) or an Elasticsearch query DSL object in `query_dsl` (match, match_phrase, multi_match, term, terms, range, bool, query_string, wildcard, fuzzy, ...). Returns the exact total, and per hit its `id`, `score`, the stored `fields` asked for and, with `highlight`, snippets with the matches in <em></em>. Caps: `size` at most {max_size}; strings in a hit's fields are cut to {max_text_bytes} bytes (ending in …, listed in `cut_fields`: use get_document for the whole text); the answer stays under {max_answer_bytes} bytes (`truncated` says when hits were left out)."
    )]
    async fn search(&self, Parameters(a): Parameters<SearchArgs>) -> ToolResult {
        match a.to_body(&self.limits) {
            Ok(body) => self.run_search(a.index, body, false).await,
            Err(e) => fail(e),
        }
    }

    #[tool(
        description = "The exact number of documents of one index matching a query: Lucene syntax in `query` or an Elasticsearch query DSL object in `query_dsl` (neither: all documents). Cheaper than search when only the number matters."
    )]
    async fn count(&self, Parameters(a): Parameters<CountArgs>) -> ToolResult {
        match a.to_body() {
            Ok(body) => self.run_search(a.index, body, true).await,
            Err(e) => fail(e),
        }
    }

    #[tool(
        description = "One document by id (the `id` of a hit), with its stored fields (all, or those in `fields`). The answer stays under {max_answer_bytes} bytes: longer fields are cut and listed in `cut_fields`."
    )]
    async fn get_document(&self, Parameters(a): Parameters<GetArgs>) -> ToolResult {
        let h = match self.handle(&a.index) {
            Ok(h) => h,
            Err(e) => return api_fail(&e),
        };
        let filter = match &a.fields {
            Some(f) => match crate::search::parse_source(&json!(f)) {
                Ok(f) => Some(f),
                Err(e) => return api_fail(&e),
            },
            None => None,
        };
        let limits = self.limits;
        Self::blocking(move || match h.get(&a.id) {
            Ok(found) => {
                let found = found.map(|(src, meta)| {
                    let src = match &filter {
                        Some(f) => f.apply(src).unwrap_or_default(),
                        None => src,
                    };
                    (src, meta.version)
                });
                answer(document_answer(h.name(), &a.id, found, &limits))
            }
            Err(e) => api_fail(&e),
        })
        .await
    }

    #[tool(
        description = "Semantic search: the `k` documents whose vector in `field` (a dense_vector field) is nearest to the query vector, best first, with their similarity score; `field` is a dense_vector or semantic_text field. Give the query as `question` (text, embedded by the field's embedding model: semantic_text fields and dense_vector fields mapped with `embed` have one) or as `vector` (numbers, as many as the field's dims). `filter` (Lucene string or query DSL object) restricts the candidates. A long text is embedded as overlapping passages and scores by its best one: such a hit carries `passage` {index, start, end, text}, the passage that matched (its number, its byte span in the field's text, and that text). Same hit shape and caps as search: `k` at most {max_size}, strings (the passage text too) cut to {max_text_bytes} bytes, answer under {max_answer_bytes} bytes."
    )]
    async fn semantic_search(&self, Parameters(a): Parameters<SemanticArgs>) -> ToolResult {
        let (index, field) = (a.index.clone(), a.field.clone());
        match self
            .embedded_body(&index, move |limits, embed| a.to_body(limits, embed))
            .await
        {
            Ok(body) => self.run_knn_search(index, &field, body).await,
            Err(e) => e,
        }
    }

    #[tool(
        description = "Hybrid search: BM25 over the text fields and kNN over the vector `field`, fused by reciprocal rank fusion (a hit scores the sum of 1 / (rank_constant + rank) over the two rankings; rank_constant 60, each ranking cut to rank_window_size = max(size, 10)). The BM25 side is the words of `question` (or a Lucene query in `query`); the kNN side is the embedding of `question` (or `vector`). `filter` applies to both. A hit the kNN side found by a passage of a long text carries `passage` {index, start, end, text}, as in semantic_search. Same hit shape and caps as search: `size` at most {max_size}, strings (the passage text too) cut to {max_text_bytes} bytes, answer under {max_answer_bytes} bytes."
    )]
    async fn hybrid_search(&self, Parameters(a): Parameters<HybridArgs>) -> ToolResult {
        let (index, field) = (a.index.clone(), a.field.clone());
        match self
            .embedded_body(&index, move |limits, embed| a.to_body(limits, embed))
            .await
        {
            Ok(body) => self.run_knn_search(index, &field, body).await,
            Err(e) => e,
        }
    }

    #[tool(
        description = "Create an index with Elasticsearch mappings (field types text, keyword, integer, long, float, double, boolean, date, dense_vector). Mappings are strict: documents may only hold the declared fields."
    )]
    async fn create_index(&self, Parameters(a): Parameters<CreateIndexArgs>) -> ToolResult {
        let Backend::Data(state) = &*self.backend else {
            return fail("this server serves one index (--index); start it with --data DIR to create indexes");
        };
        let indices = state.indices.clone();
        Self::blocking(move || {
            let body = json!({"mappings": a.mappings});
            match indices.create(&a.index, &body) {
                Ok(h) => answer(json!({"acknowledged": true, "index": h.name()})),
                Err(e) => api_fail(&e),
            }
        })
        .await
    }

    #[tool(
        description = "Add or replace documents (at most 10,000 per call): each `{\"id\": optional, \"source\": {fields}}`; an existing id is replaced. Acknowledged only once the writes are durable (fsynced to the translog); with `refresh` (default true) they are searchable when the call returns. Answers counts per result, per-document results for up to 100 documents, and the first 20 errors with their positions."
    )]
    async fn index_documents(&self, Parameters(a): Parameters<IndexDocsArgs>) -> ToolResult {
        let ops = a
            .documents
            .into_iter()
            .map(|d| WriteOp::Index {
                id: d.id,
                source: d.source,
                create: false,
                cond: Condition::default(),
            })
            .collect();
        self.run_writes(a.index, ops, a.refresh.unwrap_or(true))
            .await
    }

    #[tool(
        description = "Delete documents by id (at most 10,000 per call). Acknowledged only once durable; `not_found` counts ids that were not there. With `refresh` (default true) searches no longer see them when the call returns."
    )]
    async fn delete_documents(&self, Parameters(a): Parameters<DeleteDocsArgs>) -> ToolResult {
        let ops = a
            .ids
            .into_iter()
            .map(|id| WriteOp::Delete {
                id,
                cond: Condition::default(),
            })
            .collect();
        self.run_writes(a.index, ops, a.refresh.unwrap_or(true))
            .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for QuarryMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("quarry", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "quarry: full-text (BM25, Lucene syntax or Elasticsearch query DSL), semantic and hybrid search over local indexes. Start with list_indices, then search; get_document returns a hit's whole text.",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(allow_writes: bool) -> (tempfile::TempDir, QuarryMcp) {
        let tmp = tempfile::tempdir().unwrap();
        let state = crate::AppState::open(crate::Config::new(tmp.path().join("data"))).unwrap();
        let mappings = json!({"mappings": {"properties": {"title": {"type": "text"}}}});
        state.indices.create("books", &mappings).unwrap();
        let backend = Arc::new(Backend::Data(state));
        (
            tmp,
            QuarryMcp::new(backend, allow_writes, Limits::default()),
        )
    }

    fn text(r: &CallToolResult) -> String {
        r.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default()
    }

    #[test]
    fn index_names_that_are_paths_never_reach_the_file_system() {
        let (tmp, mcp) = server(false);
        // A directory that exists beside the data directory: still not an index name.
        std::fs::create_dir_all(tmp.path().join("x/index")).unwrap();
        let abs = tmp.path().join("x");
        for bad in [
            "../x",
            "..",
            "/etc",
            "books/../../x",
            "./books",
            "a\\b",
            abs.to_str().unwrap(),
        ] {
            let e = mcp.handle(bad).err().expect("refused");
            assert_eq!(e.kind, "invalid_index_name_exception", "{bad}");
        }
        assert_eq!(mcp.handle("books").unwrap().name(), "books");
        assert_eq!(
            mcp.handle("x").err().expect("no such index").kind,
            "index_not_found_exception"
        );
    }

    #[test]
    fn write_tools_are_offered_only_when_allowed() {
        let (_tmp, ro) = server(false);
        assert_eq!(
            ro.tool_names(),
            [
                "count",
                "get_document",
                "get_mapping",
                "hybrid_search",
                "list_indices",
                "search",
                "semantic_search"
            ]
        );
        let (_tmp, rw) = server(true);
        assert_eq!(rw.tool_names().len(), 10);
        for w in WRITE_TOOLS {
            assert!(rw.tool_names().iter().any(|n| n == w), "{w}");
        }
        // The caps are written into the descriptions.
        let search = ro.tool_router.get("search").unwrap();
        let d = search.description.as_deref().unwrap();
        assert!(
            d.contains("at most 100") && d.contains("65536 bytes"),
            "{d}"
        );
        assert!(!d.contains('{') || !d.contains("{max_"), "{d}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tools_answer_and_fail_as_tool_errors() {
        let (_tmp, mcp) = server(true);
        let docs: Vec<super::super::args::DocInput> = serde_json::from_value(json!([
            {"id": "1", "source": {"title": "The Left Hand of Darkness"}},
            {"id": "2", "source": {"title": "Dune"}},
            {"source": {"title": "Darkness at Noon"}}
        ]))
        .unwrap();
        let r = mcp
            .index_documents(Parameters(IndexDocsArgs {
                index: "books".into(),
                documents: docs,
                refresh: None,
            }))
            .await
            .unwrap();
        let a = r.structured_content.unwrap();
        assert_eq!(a["counts"]["created"], 3, "{a}");
        assert_eq!(a["acknowledged"], true);
        let search = |query: &str, size: Option<usize>| SearchArgs {
            index: "books".into(),
            query: Some(query.into()),
            size,
            ..SearchArgs::default()
        };
        let r = mcp
            .search(Parameters(search("darkness", None)))
            .await
            .unwrap();
        let a = r.structured_content.unwrap();
        assert_eq!(a["total"], 2, "{a}");
        assert_eq!(a["hits"][0]["fields"]["title"], "Darkness at Noon");
        let r = mcp
            .search(Parameters(search("darkness", Some(101))))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true));
        assert!(text(&r).contains("cap of 100"), "{}", text(&r));
        let r = mcp
            .search(Parameters(search("title:(", None)))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true));
        let r = mcp
            .delete_documents(Parameters(DeleteDocsArgs {
                index: "books".into(),
                ids: vec!["1".into(), "9".into()],
                refresh: None,
            }))
            .await
            .unwrap();
        let a = r.structured_content.unwrap();
        assert_eq!(a["counts"], json!({"deleted": 1, "not_found": 1}), "{a}");
        let r = mcp
            .count(Parameters(CountArgs {
                index: "books".into(),
                ..CountArgs::default()
            }))
            .await
            .unwrap();
        assert_eq!(r.structured_content.unwrap()["count"], 2);
    }
}
