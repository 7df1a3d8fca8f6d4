//! Which models an index (or data directory) has, copied under `models/NAME/` with their
//! checksums, and the loaded models this process shares.
//!
//! `models/NAME/model.json` lists every copied file with its length and CRC-32C; loading a
//! model checks them all, so a damaged or swapped weight file is `Corrupt` (naming it), never a
//! silently different embedding. Layout: `docs/format/models.md`.
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::model::{model_error, SentenceModel};
use crate::{Error, Result};

/// The folder of an index directory that holds its models.
pub const MODELS_DIR: &str = "models";
/// The manifest of a registered model.
pub const MANIFEST: &str = "model.json";
/// The manifest's format version.
const MANIFEST_VERSION: u32 = 1;

/// The files a model directory may hold that loading reads; the first three are required.
const MODEL_FILES: [&str; 6] = [
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
];

/// One copied file of a registered model.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// The path under the model's folder.
    pub path: String,
    pub bytes: u64,
    /// CRC-32C (Castagnoli) of the file, as 8 lowercase hex digits.
    pub crc32c: String,
}

/// The manifest of a registered model (`models/NAME/model.json`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelManifest {
    pub version: u32,
    pub name: String,
    /// Where the files were copied from (information only).
    pub source: String,
    /// The length of the vectors the model makes.
    pub dims: usize,
    /// The most word pieces of a text the model reads.
    pub max_tokens: usize,
    pub files: Vec<ModelFile>,
}

/// Checks a model name: 1 to 64 ASCII letters, digits, `-`, `_` or `.`, not starting with `.`.
pub fn check_model_name(name: &str) -> Result<()> {
    if crate::schema::is_model_name(name) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "model name {name:?}: names are 1 to 64 ASCII letters, digits, '-', '_' or '.', not starting with '.'"
        )))
    }
}

/// The folder of model `name` under the index directory `index_dir`.
pub fn model_dir(index_dir: &Path, name: &str) -> PathBuf {
    index_dir.join(MODELS_DIR).join(name)
}

fn crc_of(path: &Path) -> std::io::Result<(u64, u32)> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut crc, mut len) = (0u32, 0u64);
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok((len, crc));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        len += n as u64;
    }
}

/// Copies the model in `source` into `index_dir/models/NAME/` (created if needed; the index
/// itself need not exist yet), after loading it once to prove it works, and writes its
/// manifest. Replaces an earlier model of that name. Returns the manifest.
pub fn add_model(index_dir: &Path, name: &str, source: &Path) -> Result<ModelManifest> {
    check_model_name(name)?;
    let model = SentenceModel::load(source)?;
    let dest = model_dir(index_dir, name);
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Error::InvalidArgument(format!(
            "model {name:?}: cannot {what} {}: {e}",
            p.display()
        ))
    };
    // Copy into a fresh folder, then swap it in, so a half-copied model is never registered.
    let staging = index_dir.join(MODELS_DIR).join(format!(".{name}.tmp"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io("remove", &staging, e))?;
    }
    let mut files = Vec::new();
    for file in MODEL_FILES {
        let from = source.join(file);
        if !from.is_file() {
            continue;
        }
        let to = staging.join(file);
        let parent = to.parent().expect("a file under the staging folder");
        std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
        std::fs::copy(&from, &to).map_err(|e| io("copy", &from, e))?;
        let (bytes, crc) = crc_of(&to).map_err(|e| io("read", &to, e))?;
        files.push(ModelFile {
            path: file.to_string(),
            bytes,
            crc32c: format!("{crc:08x}"),
        });
    }
    let manifest = ModelManifest {
        version: MANIFEST_VERSION,
        name: name.to_string(),
        source: source.display().to_string(),
        dims: model.dims(),
        max_tokens: model.max_tokens(),
        files,
    };
    let text = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
    std::fs::write(staging.join(MANIFEST), text).map_err(|e| io("write", &staging, e))?;
    if dest.exists() {
        std::fs::remove_dir_all(&dest).map_err(|e| io("remove", &dest, e))?;
    }
    std::fs::rename(&staging, &dest).map_err(|e| io("rename", &staging, e))?;
    Ok(manifest)
}

/// The manifests of the models registered with `index_dir`, by name.
pub fn list_models(index_dir: &Path) -> Result<Vec<ModelManifest>> {
    let root = index_dir.join(MODELS_DIR);
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(MANIFEST).is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names.iter().map(|n| read_manifest(index_dir, n)).collect()
}

/// Reads and checks the manifest of model `name`.
pub fn read_manifest(index_dir: &Path, name: &str) -> Result<ModelManifest> {
    check_model_name(name)?;
    let dir = model_dir(index_dir, name);
    let path = dir.join(MANIFEST);
    let file = format!("{MODELS_DIR}/{name}/{MANIFEST}");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::InvalidArgument(format!(
                "no model {name:?} is registered with {} (add it with `quarry models add {name} PATH --index {}`)",
                index_dir.display(),
                index_dir.display()
            )))
        }
        Err(e) => return Err(model_error(&dir, format!("cannot read {MANIFEST}: {e}"))),
    };
    let m: ModelManifest = serde_json::from_str(&text).map_err(|e| Error::corrupt(&file, e))?;
    if m.version != MANIFEST_VERSION {
        return Err(Error::TooNew {
            file,
            found: m.version,
            max: MANIFEST_VERSION,
        });
    }
    if m.name != name {
        return Err(Error::corrupt(
            &file,
            format!("it names model {:?}", m.name),
        ));
    }
    Ok(m)
}

/// Checks every file of a registered model against its manifest.
pub fn verify_model(index_dir: &Path, manifest: &ModelManifest) -> Result<()> {
    let dir = model_dir(index_dir, &manifest.name);
    for f in &manifest.files {
        let file = format!("{MODELS_DIR}/{}/{}", manifest.name, f.path);
        if f.path.contains("..") || f.path.starts_with('/') {
            return Err(Error::corrupt(
                &file,
                "the manifest names a path outside the model",
            ));
        }
        let (bytes, crc) = crc_of(&dir.join(&f.path))
            .map_err(|e| Error::corrupt(&file, format!("cannot read it: {e}")))?;
        let crc = format!("{crc:08x}");
        if bytes != f.bytes || crc != f.crc32c {
            return Err(Error::corrupt(
                &file,
                format!(
                    "{bytes} bytes with CRC-32C {crc}, the manifest says {} bytes with {}; register the model again (`quarry models add`)",
                    f.bytes, f.crc32c
                ),
            ));
        }
    }
    Ok(())
}

type Cache = Mutex<HashMap<(PathBuf, ModelManifest), Arc<SentenceModel>>>;

/// Loads model `name` of `index_dir` (checksums verified), once per process: later calls for
/// the same files share it.
pub fn load_model(index_dir: &Path, name: &str) -> Result<Arc<SentenceModel>> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let manifest = read_manifest(index_dir, name)?;
    let dir = model_dir(index_dir, name);
    let key = (
        dir.canonicalize().unwrap_or_else(|_| dir.clone()),
        manifest.clone(),
    );
    let cache = CACHE.get_or_init(Default::default);
    if let Some(m) = cache.lock().expect("model cache").get(&key) {
        return Ok(m.clone());
    }
    verify_model(index_dir, &manifest)?;
    let model = Arc::new(SentenceModel::load(&dir)?);
    cache
        .lock()
        .expect("model cache")
        .insert(key, model.clone());
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names() {
        for ok in ["minilm", "all-MiniLM-L6-v2", "a_b.c"] {
            check_model_name(ok).unwrap();
        }
        for bad in ["", ".hidden", "a/b", "a b", "..", &"x".repeat(65)] {
            let text = check_model_name(bad).unwrap_err().to_string();
            assert!(text.contains("model name"), "{text}");
        }
    }

    #[test]
    fn an_unregistered_model_says_how_to_add_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = load_model(dir.path(), "minilm").unwrap_err().to_string();
        assert!(text.contains("quarry models add minilm"), "{text}");
        assert!(list_models(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_changed_file_fails_its_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let m = model_dir(dir.path(), "m");
        std::fs::create_dir_all(&m).unwrap();
        std::fs::write(m.join("config.json"), "{}").unwrap();
        let (bytes, crc) = crc_of(&m.join("config.json")).unwrap();
        let manifest = ModelManifest {
            version: MANIFEST_VERSION,
            name: "m".into(),
            source: "/nowhere".into(),
            dims: 4,
            max_tokens: 8,
            files: vec![ModelFile {
                path: "config.json".into(),
                bytes,
                crc32c: format!("{crc:08x}"),
            }],
        };
        std::fs::write(m.join(MANIFEST), serde_json::to_string(&manifest).unwrap()).unwrap();
        assert_eq!(read_manifest(dir.path(), "m").unwrap(), manifest);
        verify_model(dir.path(), &manifest).unwrap();
        std::fs::write(m.join("config.json"), "{ }").unwrap();
        let err = verify_model(dir.path(), &manifest).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("models/m/config.json"), "{err}");
        std::fs::write(m.join(MANIFEST), "{").unwrap();
        let err = read_manifest(dir.path(), "m").unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    }
}
