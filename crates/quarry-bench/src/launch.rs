//! How is a driver process started, read and reaped: the launcher of each engine (this binary
//! or the Lucene jar), the JSON lines it prints, and its peak RSS and faults from `wait4`.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// How to start one engine's driver.
#[derive(Debug, Clone)]
pub enum Launcher {
    /// This very binary: `quarry-bench driver <engine> ...`.
    SelfExe { engine: &'static str },
    /// `java [opts] -jar JAR ...`
    Java {
        java: PathBuf,
        opts: Vec<String>,
        jar: PathBuf,
    },
}

impl Launcher {
    fn command(&self, args: &[OsString]) -> Result<Command> {
        Ok(match self {
            Launcher::SelfExe { engine } => {
                let mut c = Command::new(std::env::current_exe()?);
                c.arg("driver").arg(engine).args(args);
                c
            }
            Launcher::Java { java, opts, jar } => {
                let mut c = Command::new(java);
                c.args(opts).arg("-jar").arg(jar).args(args);
                c
            }
        })
    }
}

/// Outcome of one driver process.
pub struct DriverRun {
    pub records: Vec<Value>,
    /// Wall time from just before spawn to the first complete stdout line, µs.
    pub spawn_to_first_line_us: Option<f64>,
    /// ru_maxrss of the child (bytes) and its major faults, from wait4. The ru_maxrss carries the
    /// parent's high-water mark over fork/exec, so reports use the driver's own `VmHWM` instead.
    pub child_maxrss_bytes: u64,
    pub child_major_faults: u64,
    pub wall_seconds: f64,
}

impl DriverRun {
    /// Takes the first record the driver printed for `op` (`index`, `merge`, `coldstart`…).
    pub fn take_record(&mut self, op: &str) -> Result<Value> {
        let i = self
            .records
            .iter()
            .position(|v| v["op"] == op)
            .with_context(|| format!("driver printed no {op} record"))?;
        Ok(self.records.swap_remove(i))
    }
}

pub fn run_driver(launcher: &Launcher, args: &[OsString]) -> Result<DriverRun> {
    run_driver_with(launcher, args, &[], None)
}

/// [`run_driver`] with extra environment variables and, with `cgroup_procs`, an fd of a memory
/// cgroup's `cgroup.procs`: the child writes `0` to it between fork and exec, so the driver runs
/// inside the group from its first instruction (every page it touches is charged there).
pub fn run_driver_with(
    launcher: &Launcher,
    args: &[OsString],
    env: &[(&str, &str)],
    cgroup_procs: Option<std::os::fd::RawFd>,
) -> Result<DriverRun> {
    let mut cmd = launcher.command(args)?;
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(fd) = cgroup_procs {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the forked child before exec and only calls write(2), which
        // is async-signal-safe, on an fd the parent keeps open for the whole call; it allocates
        // nothing and touches no lock.
        unsafe {
            cmd.pre_exec(move || {
                let rc = libc::write(fd, b"0\n".as_ptr().cast(), 2);
                if rc < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {launcher:?}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut first = None;
    let mut records = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if first.is_none() {
            first = Some(start.elapsed().as_nanos() as f64 / 1000.0);
        }
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(v) if v.is_object() => records.push(v),
            _ => eprintln!("[driver stdout, not JSON] {trimmed}"),
        }
    }
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `pid` is our own un-reaped child; status and usage point to live, writable memory.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, usage.as_mut_ptr()) };
    if rc != pid {
        bail!("wait4 failed: {}", std::io::Error::last_os_error());
    }
    // SAFETY: wait4 succeeded and filled `usage` (which was zeroed before anyway).
    let usage = unsafe { usage.assume_init() };
    let wall_seconds = start.elapsed().as_secs_f64();
    std::mem::forget(child); // already reaped by wait4
    let exited_ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    if !exited_ok {
        bail!("driver {launcher:?} {args:?} failed (wait status {status})");
    }
    Ok(DriverRun {
        records,
        spawn_to_first_line_us: first,
        child_maxrss_bytes: usage.ru_maxrss as u64 * 1024,
        child_major_faults: usage.ru_majflt as u64,
        wall_seconds,
    })
}

/// The arguments of a driver's `index` command: `docs` into a new index at `dir` with `threads`
/// indexing threads and `memory_mb` of indexing memory per thread (Rust drivers take it per
/// thread, Lucene's harness as one RAM buffer for all threads).
pub fn index_args(
    launcher: &Launcher,
    docs: &Path,
    dir: &Path,
    threads: usize,
    memory_mb: usize,
) -> Vec<OsString> {
    let mut args = os(&[
        &"index",
        &"--input",
        &docs,
        &"--index",
        &dir,
        &"--threads",
        &threads.to_string(),
    ]);
    match launcher {
        Launcher::SelfExe { .. } => args.extend(os(&[&"--memory-mb", &memory_mb.to_string()])),
        Launcher::Java { .. } => args.extend(os(&[
            &"--ram-buffer-mb",
            &(memory_mb * threads).to_string(),
        ])),
    }
    args
}

pub fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

/// The Java binary: `$JAVA_HOME/bin/java`, else Temurin 25 if installed, else `java` on PATH.
fn java_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("JAVA_HOME") {
        return Some(PathBuf::from(h));
    }
    let temurin = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64");
    temurin.exists().then_some(temurin)
}

/// Lucene version from the driver's pom (`<lucene.version>`).
pub fn lucene_version(repo: &Path) -> Option<String> {
    let pom = std::fs::read_to_string(repo.join("bench/lucene/pom.xml")).ok()?;
    let start = pom.find("<lucene.version>")? + "<lucene.version>".len();
    let end = start + pom[start..].find('<')?;
    Some(format!("Lucene {}", pom[start..end].trim()))
}

fn find_jar(repo: &Path) -> Option<PathBuf> {
    let target = repo.join("bench/lucene/target");
    let mut jars: Vec<PathBuf> = std::fs::read_dir(&target)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".jar") && !name.starts_with("original-") && !name.contains("sources")
        })
        .collect();
    // Prefer the shaded (largest) jar.
    jars.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)));
    jars.into_iter().next()
}

/// Whether the jar is older than a source file of the driver (then it is rebuilt).
fn stale(repo: &Path, jar: &Path) -> bool {
    fn newest(p: &Path) -> Option<std::time::SystemTime> {
        let m = std::fs::metadata(p).ok()?;
        if !m.is_dir() {
            return m.modified().ok();
        }
        std::fs::read_dir(p)
            .ok()?
            .flatten()
            .filter_map(|e| newest(&e.path()))
            .max()
    }
    let built = std::fs::metadata(jar).and_then(|m| m.modified()).ok();
    let lucene = repo.join("bench/lucene");
    let sources = [newest(&lucene.join("src")), newest(&lucene.join("pom.xml"))];
    match built {
        Some(b) => sources.into_iter().flatten().any(|s| s > b),
        None => true,
    }
}

/// What `--require-lucene` adds to the error when Lucene cannot run: what to do about it.
pub const LUCENE_REQUIRED: &str = "Lucene is required (--require-lucene) but cannot run here; \
     install a JDK 21+ and Maven (as root on Debian/Ubuntu: `bash scripts/ensure-java.sh`), or \
     point JAVA_HOME at a JDK 21+ with `mvn` on PATH";

/// The major version `java -version` reports (`openjdk version "21.0.2"` -> 21, `"1.8.0"` -> 8).
fn parse_java_major(version_output: &str) -> Option<u32> {
    let start = version_output.find("version \"")? + "version \"".len();
    let v = &version_output[start..];
    let mut parts = v.split(['.', '"', '-', '+', '_']);
    match parts.next()?.parse().ok()? {
        1 => parts.next()?.parse().ok(),
        major => Some(major),
    }
}

/// Checks that `java` starts and is 21 or newer (Lucene 10 needs 21); its major version.
fn check_java(java: &Path) -> Result<u32> {
    let out = Command::new(java)
        .arg("-version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| {
            format!(
                "cannot start Java ({}): no JDK found; install a JDK 21+ or set JAVA_HOME to one",
                java.display()
            )
        })?;
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "`{} -version` failed ({}): {}",
            java.display(),
            out.status,
            text.trim()
        );
    }
    let major = parse_java_major(&text).with_context(|| {
        format!(
            "no version in the output of `{} -version`: {}",
            java.display(),
            text.trim()
        )
    })?;
    if major < 21 {
        bail!(
            "Java {major} at {} is too old: the Lucene driver needs a JDK 21+ (set JAVA_HOME to one)",
            java.display()
        );
    }
    Ok(major)
}

pub fn lucene_launcher(repo: &Path, explicit: Option<PathBuf>) -> Result<Launcher> {
    let java = java_home()
        .map(|h| h.join("bin/java"))
        .unwrap_or_else(|| PathBuf::from("java"));
    check_java(&java)?;
    let jar = match explicit.or_else(|| find_jar(repo).filter(|j| !stale(repo, j))) {
        Some(j) => j,
        None => {
            let pom = repo.join("bench/lucene/pom.xml");
            if !pom.exists() {
                bail!("no Lucene driver: {} is missing", pom.display());
            }
            eprintln!(
                "[lucene] no jar under bench/lucene/target, or older than its sources; building it: mvn -q -f {} package",
                pom.display()
            );
            let mut mvn = Command::new("mvn");
            mvn.args(["-q", "-f"]).arg(&pom).arg("package");
            if let Some(h) = java_home() {
                mvn.env("JAVA_HOME", h);
            }
            let st = mvn
                .status()
                .context("cannot run `mvn` (Maven) to build the Lucene driver: install Maven")?;
            if !st.success() {
                bail!("mvn package failed ({st}); the Lucene driver is not available");
            }
            find_jar(repo)
                .context("mvn package succeeded but no jar appeared under bench/lucene/target")?
        }
    };
    let opts = match std::env::var("QUARRY_BENCH_JAVA_OPTS") {
        Ok(o) => o.split_whitespace().map(String::from).collect(),
        Err(_) => jvm_options(repo)?,
    };
    Ok(Launcher::Java { java, opts, jar })
}

/// The harness's documented JVM flags, `bench/lucene/jvm.options` (also read by
/// `lucene-bench.sh`): one file, so the flags the docs state are the flags every run uses.
pub fn jvm_options(repo: &Path) -> Result<Vec<String>> {
    let path = repo.join("bench/lucene/jvm.options");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the Lucene JVM flags {}", path.display()))?;
    Ok(parse_jvm_options(&text))
}

fn parse_jvm_options(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jvm_options_skip_comments_and_blank_lines() {
        let text = "# comment\n--add-modules jdk.incubator.vector\n\n-Xmx1g # trailing\n";
        assert_eq!(
            parse_jvm_options(text),
            ["--add-modules", "jdk.incubator.vector", "-Xmx1g"]
        );
    }

    #[test]
    fn the_committed_jvm_options_are_read() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let opts = jvm_options(&repo).unwrap();
        assert!(
            opts.contains(&"jdk.incubator.vector".to_string()),
            "{opts:?}"
        );
    }

    #[test]
    fn java_major_versions() {
        let v = |s| parse_java_major(s);
        assert_eq!(v("openjdk version \"21.0.2\" 2024-01-16"), Some(21));
        assert_eq!(v("openjdk version \"25\" 2025-09-16"), Some(25));
        assert_eq!(v("java version \"1.8.0_381\""), Some(8));
        assert_eq!(v("openjdk version \"17.0.15\" 2025-04-15"), Some(17));
        assert_eq!(v("no java here"), None);
    }

    #[test]
    fn a_missing_java_is_a_clear_error() {
        let e = check_java(Path::new("/nonexistent/bin/java")).unwrap_err();
        assert!(format!("{e:#}").contains("install a JDK 21+"), "{e:#}");
    }
}
