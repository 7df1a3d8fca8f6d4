//! The peers of the vector benchmark, each in its own process, fed the same vectors: FAISS,
//! hnswlib and usearch (`scripts/vectors-peers.py` in the venv of `scripts/vectors-venv.sh`),
//! Lucene (the Java harness's `vectors` mode) and native-vector-store (`scripts/vectors-nvs.js`
//! on the addon built from its npm package's source).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::data::VectorSet;
use super::{recall, Truth, VectorsArgs, SELECTIVITIES};
use crate::launch::{lucene_launcher, Launcher};

/// Runs a peer process and returns the JSON objects it printed, one per line (an `error`
/// record fails the engine).
pub fn records(mut cmd: Command) -> Result<Vec<Value>> {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().with_context(|| format!("starting {cmd:?}"))?;
    let stdout = child.stdout.take().context("piped stdout")?;
    let mut out = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(v) if v.is_object() => {
                if v["op"] == "error" {
                    bail!("{}", v["error"].as_str().unwrap_or("error"));
                }
                out.push(v)
            }
            _ if line.trim().is_empty() => {}
            _ => eprintln!("[peer stdout, not JSON] {line}"),
        }
    }
    let st = child.wait()?;
    if !st.success() {
        bail!("{cmd:?} failed ({st})");
    }
    Ok(out)
}

fn ef_arg(ef: &[usize]) -> String {
    ef.iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// FAISS flat / HNSW, hnswlib or usearch through `scripts/vectors-peers.py`.
pub fn python(
    args: &VectorsArgs,
    repo: &Path,
    engine: &str,
    set: &VectorSet,
    truth: &Path,
    ef: &[usize],
    work: &Path,
) -> Result<Vec<Value>> {
    let python = args
        .python
        .clone()
        .unwrap_or_else(|| repo.join("target/vectors-venv/bin/python"));
    if !python.exists() {
        bail!(
            "{} is missing: run scripts/vectors-venv.sh (PyPI: faiss-cpu, hnswlib, usearch)",
            python.display()
        );
    }
    let mut cmd = Command::new(python);
    cmd.arg(repo.join("scripts/vectors-peers.py"))
        .arg("--docs")
        .arg(&set.docs_path)
        .args(["--count", &set.n().to_string()])
        .arg("--queries")
        .arg(&set.queries_path)
        .args(["--nq", &set.nq().to_string()])
        .args(["--dims", &set.dims.to_string()])
        .arg("--truth")
        .arg(truth)
        .args(["--k", &args.k.to_string()])
        .args(["--m", &args.m.to_string()])
        .args(["--ef-construction", &args.ef_construction.to_string()])
        .args(["--ef", &ef_arg(ef)])
        .args(["--engines", engine])
        .arg("--tmp")
        .arg(work.join(format!("{engine}-tmp")))
        .env("OMP_NUM_THREADS", "1")
        .env("MKL_NUM_THREADS", "1")
        .env("OPENBLAS_NUM_THREADS", "1");
    records(cmd)
}

/// Writes the truth of every filter (rows of k u32, one file per selectivity) for Lucene.
fn write_truths(truth: &Truth, k: usize, work: &Path) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for (rows, p) in std::iter::once(&truth.all)
        .chain(truth.filtered.iter())
        .zip(
            ["all".to_string()]
                .into_iter()
                .chain(SELECTIVITIES.iter().map(|p| format!("p{p}"))),
        )
    {
        let path = work.join(format!("truth-{p}.u32"));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for r in rows {
            for i in 0..k {
                f.write_all(&r.get(i).copied().unwrap_or(u32::MAX).to_le_bytes())?;
            }
        }
        f.flush()?;
        paths.push(path);
    }
    Ok(paths)
}

/// Lucene 10.6 HNSW, float32 and int7 scalar-quantized, through the Java harness's `vectors`
/// mode.
pub fn lucene(
    args: &VectorsArgs,
    repo: &Path,
    set: &VectorSet,
    truth: &Truth,
    ef: &[usize],
    work: &Path,
) -> Result<Vec<Value>> {
    let Launcher::Java { java, opts, jar } = lucene_launcher(repo, args.lucene_jar.clone())? else {
        bail!("no Java launcher for Lucene");
    };
    let truths = write_truths(truth, args.k, work)?;
    let mut cmd = Command::new(java);
    cmd.args(opts)
        .arg("--add-modules")
        .arg("jdk.incubator.vector")
        .arg("-jar")
        .arg(jar)
        .arg("vectors")
        .arg("--docs")
        .arg(&set.docs_path)
        .args(["--count", &set.n().to_string()])
        .arg("--queries")
        .arg(&set.queries_path)
        .args(["--nq", &set.nq().to_string()])
        .args(["--dims", &set.dims.to_string()])
        .arg("--truth")
        .arg(&truths[0])
        .arg("--truth-filtered")
        .arg(
            truths[1..]
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
        )
        .args([
            "--selectivities",
            &SELECTIVITIES
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ])
        .args(["--filter-candidates", &args.filter_candidates.to_string()])
        .args(["--k", &args.k.to_string()])
        .args(["--m", &args.m.to_string()])
        .args(["--ef-construction", &args.ef_construction.to_string()])
        .args(["--ef", &ef_arg(ef)])
        .arg("--index")
        .arg(work.join("lucene-index"));
    let out = records(cmd);
    let _ = std::fs::remove_dir_all(work.join("lucene-index"));
    out
}

/// The documents as native-vector-store's JSON layout: files of 1,000 `{id, text, metadata:
/// {embedding}}` objects (an array per file), written once per set under `work`.
pub fn nvs_dir(set: &VectorSet, work: &Path) -> Result<PathBuf> {
    let dir = work.join(format!("nvs-{}-{}", set.name, set.n()));
    let marker = dir.join(".complete");
    if marker.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    for (f, start) in (0..set.n()).step_by(1000).enumerate() {
        let mut w = std::io::BufWriter::new(std::fs::File::create(
            dir.join(format!("docs-{f:05}.json")),
        )?);
        w.write_all(b"[")?;
        for row in start..(start + 1000).min(set.n()) {
            if row > start {
                w.write_all(b",\n")?;
            }
            let doc = serde_json::json!({
                "id": row.to_string(),
                "text": set.texts[row],
                "metadata": {"embedding": set.doc(row)},
            });
            serde_json::to_writer(&mut w, &doc)?;
        }
        w.write_all(b"]\n")?;
        w.flush()?;
    }
    std::fs::write(&marker, b"")?;
    Ok(dir)
}

/// native-vector-store 0.4.0 through `scripts/vectors-nvs.js`: loadDir of the JSON directory,
/// then every query (one OpenMP thread, and all cores), recall against the exact answers.
pub fn nvs(
    args: &VectorsArgs,
    repo: &Path,
    set: &VectorSet,
    truth: &Truth,
    work: &Path,
) -> Result<Vec<Value>> {
    let package = args
        .nvs
        .clone()
        .unwrap_or_else(|| repo.join("target/nvs/package"));
    let addon = package.join("build/Release/vector_store.node");
    if !addon.exists() {
        bail!(
            "{} is missing: run scripts/vectors-nvs-build.sh (npm pack native-vector-store@0.4.0, \
             then node-gyp rebuild from its source: the prebuilt Linux addon needs GLIBCXX_3.4.32, \
             newer than this machine's libstdc++)",
            addon.display()
        );
    }
    let dir = nvs_dir(set, work)?;
    let mut recs = Vec::new();
    for threads in ["1", "all"] {
        let mut cmd = Command::new("node");
        cmd.arg(repo.join("scripts/vectors-nvs.js"))
            .arg(&addon)
            .arg(&dir)
            .arg(&set.queries_path)
            .args([
                set.nq().to_string(),
                set.dims.to_string(),
                args.k.to_string(),
            ]);
        let out = work.join(format!("nvs-{threads}.jsonl"));
        cmd.arg(&out);
        if threads == "1" {
            cmd.env("OMP_NUM_THREADS", "1");
        }
        // The addon prints to stdout: keep it out of the way.
        records(cmd)?;
        let lines: Vec<Value> = std::fs::read_to_string(&out)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<std::result::Result<_, _>>()?;
        for mut r in lines {
            if let Some(ids) = r.get("ids").cloned() {
                let got: Vec<Vec<u32>> = ids
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|row| {
                        row.as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|x| x.as_str()?.parse().ok())
                            .collect()
                    })
                    .collect();
                let obj = r.as_object_mut().expect("object");
                obj.remove("ids");
                obj.insert("recall".into(), recall(&got, &truth.all, args.k).into());
            }
            r["threads"] = threads.into();
            if threads == "all" {
                r["engine"] = "nvs-omp-all".into();
            }
            recs.push(r);
        }
    }
    Ok(recs)
}
