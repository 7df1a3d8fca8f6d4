//! The `quarry-bench` binary's command line: its subcommands are listed, and bad arguments fail
//! at once with a message naming them, before any engine is built or started.
//!
//! Being an integration test, this also makes `cargo test --workspace` build the binary with the
//! test build's features, so scripts/test.sh's benchmark smoke run reuses it (no second build).
use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_quarry-bench"))
}

#[test]
fn help_lists_the_suites() {
    let out = bench().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for cmd in ["run", "structured", "vectors", "online-parity", "load"] {
        assert!(text.contains(cmd), "{cmd} missing from:\n{text}");
    }
}

#[test]
fn an_unknown_workload_fails_before_any_engine_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench()
        .args([
            "run",
            "--workload",
            "w7",
            "--quick",
            "--engines",
            "lucene",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown workload \"w7\""), "{err}");
    assert!(
        !err.contains("[lucene]"),
        "Lucene was prepared first: {err}"
    );
}

#[test]
fn an_unknown_subcommand_is_refused() {
    let out = bench().arg("bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
}
