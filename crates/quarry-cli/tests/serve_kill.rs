//! `quarry serve` survives kill -9: while several clients send concurrent `_bulk` requests, the
//! server is killed with SIGKILL and restarted; every document whose request was acknowledged
//! must be found, and none twice.
//!
//! Cycles: `QUARRY_KILL_CYCLES` (default 3). The long run quoted in the README:
//! `QUARRY_KILL_CYCLES=100 cargo test -p quarry-cli --test serve_kill -- --nocapture`.
#![cfg(unix)]
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One HTTP/1.1 request on a fresh connection; returns (status, body).
fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
    ct: &str,
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad response {text:?}")))?;
    let body = text.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    Ok((status, body))
}

fn start(data: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("quarry listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, addr)
}

#[test]
fn acknowledged_bulk_writes_survive_sigkill() {
    let cycles: usize = std::env::var("QUARRY_KILL_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = start(dir.path());
    let (st, body) = http(
        &addr,
        "PUT",
        "/docs",
        r#"{"mappings": {"properties": {"n": {"type": "long"}, "text": {"type": "text"}}}, "settings": {"refresh_interval": "200ms"}}"#,
        "application/json",
    )
    .unwrap();
    assert_eq!(st, 200, "{body}");
    let next_id = Arc::new(AtomicU64::new(0));
    let acked: Arc<Mutex<Vec<u64>>> = Arc::default();
    let mut addr = addr;
    for cycle in 0..cycles {
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..4)
            .map(|_| {
                let (addr, stop, next_id, acked) =
                    (addr.clone(), stop.clone(), next_id.clone(), acked.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let ids: Vec<u64> =
                            (0..50).map(|_| next_id.fetch_add(1, Ordering::Relaxed)).collect();
                        let mut bulk = String::new();
                        for id in &ids {
                            bulk.push_str(&format!(
                                "{{\"index\":{{\"_index\":\"docs\",\"_id\":\"{id}\"}}}}\n{{\"n\":{id},\"text\":\"document number {id}\"}}\n"
                            ));
                        }
                        match http(&addr, "POST", "/_bulk", &bulk, "application/x-ndjson") {
                            Ok((200, body)) if body.contains("\"errors\":false") => {
                                acked.lock().unwrap().extend(ids)
                            }
                            Ok((st, body)) => panic!("bulk answered {st}: {body}"),
                            Err(_) => return, // the server died mid-request: not acknowledged
                        }
                    }
                })
            })
            .collect();
        let wait = Instant::now();
        let before = acked.lock().unwrap().len();
        while acked.lock().unwrap().len() < before + 200 && wait.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(37 * (cycle as u64 % 5)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        stop.store(true, Ordering::Relaxed);
        for c in clients {
            c.join().unwrap();
        }
        let (c, a) = start(dir.path());
        child = c;
        addr = a;
        let acked_now = acked.lock().unwrap().clone();
        let (st, body) = http(&addr, "POST", "/docs/_count", "", "application/json").unwrap();
        assert_eq!(st, 200, "{body}");
        let count: u64 = serde_json::from_str::<serde_json::Value>(&body).unwrap()["count"]
            .as_u64()
            .unwrap();
        let sent = next_id.load(Ordering::Relaxed);
        assert!(
            count >= acked_now.len() as u64,
            "cycle {cycle}: {count} docs, {} acknowledged",
            acked_now.len()
        );
        assert!(
            count <= sent,
            "cycle {cycle}: {count} docs but only {sent} sent (duplicates)"
        );
        for chunk in acked_now.chunks(1000) {
            let ids: Vec<String> = chunk.iter().map(|i| i.to_string()).collect();
            let q = serde_json::json!({"query": {"ids": {"values": ids}}, "size": 0, "track_total_hits": true});
            let (st, body) = http(
                &addr,
                "POST",
                "/docs/_search",
                &q.to_string(),
                "application/json",
            )
            .unwrap();
            assert_eq!(st, 200, "{body}");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(
                v["hits"]["total"]["value"],
                chunk.len(),
                "cycle {cycle}: acknowledged documents lost"
            );
        }
        eprintln!(
            "cycle {cycle}: {} acknowledged, {count} present, {sent} sent",
            acked_now.len()
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
