//! The shell examples of README.md and docs/*.md run as written and print what the Markdown
//! says they print.
//!
//! The rule, for whoever writes docs: a fenced block tagged `console` is an example. Each line
//! starting with `$ ` is a command (a line ending in `\` continues it); the lines after it, up to
//! the next `$ `, are its expected output (stdout and stderr together). In expected output `...`
//! stands for any text within a line (timings, paths), and a line that is only `...` stands for
//! any number of lines. Blocks tagged `sh` are not run (set-up commands such as `cargo` or `pip`).
//!
//! The commands of one file run in order, with `bash`, in a fresh directory where `data/` and
//! `tests/` are the repository's (so they read like commands run from the repository root) and
//! with the built `quarry` first on `PATH`. The first command that mentions `localhost:9200`
//! starts `quarry serve --data serve-data --listen 127.0.0.1:0` in that directory; every
//! `localhost:9200` is then replaced by its address, and the server is stopped at the end of
//! the file.
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// One command and the output the Markdown expects, with the line it starts on.
struct Example {
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The examples of the ```console blocks of `text`.
fn examples(text: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut in_console = false;
    let mut in_other = false;
    let mut continued = false;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        if in_console {
            if fence {
                in_console = false;
            } else if continued {
                let ex = out.last_mut().unwrap();
                ex.command.push('\n');
                ex.command.push_str(line);
                continued = line.ends_with('\\');
            } else if let Some(cmd) = line.strip_prefix("$ ") {
                out.push(Example {
                    line: i + 1,
                    command: cmd.to_string(),
                    expected: Vec::new(),
                });
                continued = cmd.ends_with('\\');
            } else {
                let ex = out
                    .last_mut()
                    .unwrap_or_else(|| panic!("line {}: output before any `$ ` command", i + 1));
                ex.expected.push(line.trim_end().to_string());
            }
        } else if in_other {
            in_other = !fence;
        } else if fence {
            if line.trim() == "```console" {
                in_console = true;
            } else {
                in_other = true;
            }
        }
    }
    out
}

/// Does `line` match `pattern`, where `...` in the pattern stands for any text?
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() || !line.ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Do the output lines match the expected ones (`...` alone: any number of lines)?
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((p, rest)) if p == "..." => {
            (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..]))
        }
        Some((p, rest)) => {
            !actual.is_empty() && line_matches(p, actual[0]) && lines_match(rest, &actual[1..])
        }
    }
}

struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(dir: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .current_dir(dir)
        .args(["serve", "--data", "serve-data", "--listen", "127.0.0.1:0"])
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
    Server { child, addr }
}

/// Runs the examples of one Markdown file; returns the failures and the number run.
fn run_file(name: &str) -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(root().join(name)).unwrap();
    let examples = examples(&text);
    let dir = tempfile::tempdir().unwrap();
    for link in ["data", "tests"] {
        std::os::unix::fs::symlink(root().join(link), dir.path().join(link)).unwrap();
    }
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_quarry"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut server: Option<Server> = None;
    let mut failures = Vec::new();
    for ex in &examples {
        let mut command = ex.command.clone();
        if command.contains("localhost:9200") {
            let s = server.get_or_insert_with(|| start_server(dir.path()));
            command = command.replace("localhost:9200", &s.addr);
        }
        let out = Command::new("bash")
            .current_dir(dir.path())
            .env("PATH", &path)
            .arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let actual: Vec<&str> = stdout.lines().map(str::trim_end).collect();
        let trim = |v: &[String]| {
            let n = v.iter().rposition(|l| !l.is_empty()).map_or(0, |i| i + 1);
            v[..n].to_vec()
        };
        let actual_owned: Vec<String> = actual.iter().map(|s| s.to_string()).collect();
        let actual_trimmed = trim(&actual_owned);
        let actual_refs: Vec<&str> = actual_trimmed.iter().map(String::as_str).collect();
        if !lines_match(&trim(&ex.expected), &actual_refs) {
            failures.push(format!(
                "{name}:{}: $ {}\n--- expected\n{}\n--- got (exit {:?})\n{}",
                ex.line,
                ex.command,
                ex.expected.join("\n"),
                out.status.code(),
                stdout
            ));
        }
    }
    (failures, examples.len())
}

#[test]
fn the_matcher_follows_the_documented_rule() {
    assert!(line_matches("took ... ms", "took 12 ms"));
    assert!(line_matches("a...b...c", "a1b2c"));
    assert!(!line_matches("a...b", "a1c"));
    assert!(!line_matches("exact", "exactly"));
    let exp = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&exp(&["x", "...", "z"]), &["x", "1", "2", "z"]));
    assert!(lines_match(&exp(&["x", "...", "z"]), &["x", "z"]));
    assert!(!lines_match(&exp(&["x", "z"]), &["x", "y", "z"]));
    let ex = examples("```console\n$ echo a \\\n  b\na b\n```\n```sh\n$ not run\n```\n");
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0].command, "echo a \\\n  b");
    assert_eq!(ex[0].expected, ["a b"]);
}

#[test]
fn shell_examples_of_the_docs_print_what_they_say() {
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    let mut failures = Vec::new();
    let mut run = 0;
    for name in &names {
        let (f, n) = run_file(name);
        eprintln!("{name}: {n} commands");
        failures.extend(f);
        run += n;
    }
    assert!(run >= 10, "only {run} console examples found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
