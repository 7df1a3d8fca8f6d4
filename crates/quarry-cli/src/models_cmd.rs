//! `quarry models`: register embedding models with an index directory and list them.
use std::path::PathBuf;

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
        /// The index (or data) directory to register the model with.
        #[arg(long)]
        index: PathBuf,
    },
    /// List the models registered with an index directory.
    List {
        #[arg(long)]
        index: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: &ModelsCmd) -> Result<()> {
    match cmd {
        ModelsCmd::Add { name, path, index } => {
            let start = std::time::Instant::now();
            let m = quarry::embed::add_model(index, name, path)
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
        ModelsCmd::List { index, json } => {
            crate::require_index_dir(index)?;
            let models = quarry::embed::list_models(index)?;
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
