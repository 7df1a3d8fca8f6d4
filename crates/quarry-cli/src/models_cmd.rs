//! `quarry models`: register embedding models with an index directory (or a server's data
//! directory) and list them.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

#[derive(clap::Subcommand, Debug)]
pub enum ModelsCmd {
    /// Copy a model directory (config.json, tokenizer.json, model.safetensors and its
    /// sentence-transformers settings) into INDEX/models/NAME/ with checksums. The index need
    /// not exist yet; an earlier model of that name is replaced.
    Add {
        /// The name a schema's `"embed": {"model": NAME}` uses.
        name: String,
        /// The model directory (e.g. the one `scripts/fetch-model.sh` prints).
        path: PathBuf,
        #[command(flatten)]
        place: Place,
    },
    /// List the models registered with an index directory (or a data directory).
    List {
        #[command(flatten)]
        place: Place,
        #[arg(long)]
        json: bool,
    },
}

/// Where models are registered: one index, or the data directory of `quarry serve`/`quarry mcp`.
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct Place {
    /// The index directory to register the model with.
    #[arg(long)]
    index: Option<PathBuf>,
    /// The data directory of `quarry serve` / `quarry mcp`: the model goes to
    /// DATA/_inference/models/NAME/, where `semantic_text` mappings (`inference_id`) and
    /// `dense_vector` mappings with `embed` find it (an index created with it keeps its own
    /// copy).
    #[arg(long)]
    data: Option<PathBuf>,
}

impl Place {
    /// The directory the engine's registry functions take.
    fn root(&self) -> PathBuf {
        match (&self.index, &self.data) {
            (Some(i), _) => i.clone(),
            (None, Some(d)) => quarry_server::inference::registry(d),
            (None, None) => unreachable!("clap requires --index or --data"),
        }
    }
    fn shown(&self) -> &Path {
        self.index
            .as_deref()
            .or(self.data.as_deref())
            .expect("clap requires --index or --data")
    }
}

pub fn run(cmd: &ModelsCmd) -> Result<()> {
    match cmd {
        ModelsCmd::Add { name, path, place } => {
            let start = std::time::Instant::now();
            let index = place.shown();
            let m = quarry::embed::add_model(&place.root(), name, path)
                .with_context(|| format!("adding model {name:?} from {}", path.display()))?;
            let bytes: u64 = m.files.iter().map(|f| f.bytes).sum();
            println!(
                "model {name} added to {}: {} dims, at most {} word pieces per text, {} files, {:.1} MB, in {:.2} s",
                index.display(),
                m.dims,
                m.max_tokens,
                m.files.len(),
                bytes as f64 / 1e6,
                start.elapsed().as_secs_f64()
            );
        }
        ModelsCmd::List { place, json } => {
            let index = place.shown();
            if place.data.is_none() {
                crate::require_index_dir(index)?;
            }
            let models = quarry::embed::list_models(&place.root())?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&models)?);
            } else if models.is_empty() {
                println!("no models registered with {}", index.display());
            } else {
                for m in &models {
                    let bytes: u64 = m.files.iter().map(|f| f.bytes).sum();
                    println!(
                        "{}: {} dims, {} word pieces, {:.1} MB (from {})",
                        m.name,
                        m.dims,
                        m.max_tokens,
                        bytes as f64 / 1e6,
                        m.source
                    );
                }
            }
        }
    }
    Ok(())
}
