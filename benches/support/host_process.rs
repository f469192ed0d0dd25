//! A real `huddle host` process for the benchmarks that measure one (`host`, `memory`): started
//! as `huddle` starts it (`huddle --repo REPO host`, "ready" on its standard output), a child
//! of the benchmark so that its `/proc` entry can be read, stopped with SIGTERM.

// Each benchmark that includes this file uses a part of it.
#![allow(dead_code)]

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The release `huddle` binary (or `HUDDLE_BENCH_BIN`, another build to compare).
pub fn binary() -> std::ffi::OsString {
    std::env::var_os("HUDDLE_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_huddle").into())
}

/// `huddle` with `home` as its data dir, working in `repo`, without provider keys.
pub fn command(home: &Path, repo: &Path) -> Command {
    let mut cmd = Command::new(binary());
    cmd.env("HUDDLE_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(repo);
    cmd
}

/// A host started by the benchmark.
pub struct HostProcess {
    child: Child,
}

impl HostProcess {
    /// Starts the data dir's host and waits until it says it is ready. `idle_ms`: how long it
    /// stays once nobody is attached and nothing runs.
    pub fn start(home: &Path, repo: &Path, idle_ms: u64) -> HostProcess {
        let mut child = command(home, repo)
            .arg("--repo")
            .arg(repo)
            .arg("host")
            .env("HUDDLE_HOST_IDLE_MS", idle_ms.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            // The allocator's statistics at its exit (`MIMALLOC_SHOW_STATS=1`) on ours.
            .stderr(if std::env::var_os("MIMALLOC_SHOW_STATS").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("the host starts");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("the host's standard output");
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the host says whether it is ready");
        assert_eq!(line.trim(), "ready", "the host did not start");
        HostProcess { child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A field of its `/proc/<pid>/status` in KiB (`VmRSS:`, `VmHWM:`, `RssAnon:`, ...); 0 once
    /// it is gone.
    pub fn status_kib(&self, field: &str) -> i64 {
        status_kib(self.pid(), field)
    }

    /// Stops it as a signal does (its runs stop, it saves) and waits for its exit code.
    pub fn stop(mut self) -> Option<i32> {
        self.signal(libc::SIGTERM);
        self.child.wait().ok().and_then(|s| s.code())
    }

    /// Waits for it to exit by itself (idle); its exit code.
    pub fn wait(mut self) -> Option<i32> {
        self.child.wait().ok().and_then(|s| s.code())
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on our own child; once it is reaped `try_wait` says so and no signal
        // is sent.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, signal);
        }
    }
}

impl Drop for HostProcess {
    /// A benchmark that panicked leaves no host behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.signal(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// A field of `/proc/<pid>/status` in KiB; 0 when the process or the field is gone.
pub fn status_kib(pid: u32, field: &str) -> i64 {
    status_field(pid, field)
}

/// A number field of `/proc/<pid>/status` (`Threads:`, or one in KiB without its unit); 0 when
/// the process or the field is gone.
pub fn status_field(pid: u32, field: &str) -> i64 {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

pub fn mib(kib: i64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
