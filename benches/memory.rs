//! Peak memory of `huddle` (issue 28 item 6): the peak resident set (`VmHWM` in
//! `/proc/<pid>/status`, what `/usr/bin/time -v` calls "Maximum resident set size") for
//!
//! - `huddle presets list` (start-up and the preset catalog alone);
//! - a 198-message run: an `orchestrator_reflect` team of 4 workers for 33 iterations (a plan,
//!   4 answers and a synthesis each) against a streaming OpenAI-compatible server on loopback;
//! - a 6,000-message run: the same with 58 workers for 100 iterations.
//!
//! A run goes on in the data dir's host (`huddle host`, issue 23): the host holds the engine,
//! the organization and the run, `huddle run` only prints what it is sent. The benchmark starts
//! the host itself (as `huddle run` would, `huddle --repo DIR host`) so that it can read the
//! host's `/proc` entry too; the goal is for the host's peak, the front end's is reported.
//!
//! The server is the tests' fake LLM server (tests/suite/fake_llm_server.rs), in this process;
//! every answer is different (no stall ends a run early) and streamed in pieces of a few words.
//! The goal is ≤ 20 MiB for each run (and ≤ 30 MiB for an idle host, issue 23 item 7). Each
//! line also says the most threads the process had and its CPU time (user + system, all
//! threads) per agent message. huddle uses the system allocator unless built with the
//! `mimalloc` feature (`cargo bench --features mimalloc --bench memory`); `MIMALLOC_*` variables
//! are passed on to such a build, so its options can be compared.
//!
//! `cargo bench --bench memory` (the release binary); `HUDDLE_BENCH_MEMORY=small` runs all
//! but the 6,000-message run (`presets list`, the idle host, the 198-message run).

#[path = "../tests/suite/fake_llm_server.rs"]
mod fake_llm_server;
#[path = "support/host_process.rs"]
mod host_process;
mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fake_llm_server::{FakeLlm, Reply};
use host_process::{HostProcess, mib};

/// A process's exit code and peak resident set.
struct Measured {
    code: Option<i32>,
    /// Its peak, the most of its resident set that was anonymous (heap, stacks) and
    /// file-backed (the binary's code and data), sampled every millisecond or two, and its CPU
    /// time.
    sampled: Sampled,
    took: Duration,
    stderr: String,
}

/// The most of a process's resident set, sampled every millisecond or two from `/proc` until
/// it is a zombie or gone: (peak `VmHWM`, anonymous, file-backed), in KiB.
fn sample(pid: u32) -> std::thread::JoinHandle<Sampled> {
    std::thread::spawn(move || {
        let (mut peak, mut anon, mut file, mut threads, mut cpu) = (0i64, 0i64, 0i64, 0i64, 0u64);
        let field = |status: &str, name: &str| -> i64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        // Until the process is reaped (a zombie has no memory left to report, but its CPU
        // time, all threads', is final).
        while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            if let Some(ticks) = cpu_ticks(pid) {
                cpu = ticks;
            }
            if status.contains("State:\tZ") {
                break;
            }
            peak = peak.max(field(&status, "VmHWM:"));
            anon = anon.max(field(&status, "RssAnon:"));
            file = file.max(field(&status, "RssFile:"));
            threads = threads.max(field(&status, "Threads:"));
            std::thread::sleep(Duration::from_millis(1));
        }
        Sampled {
            peak_kib: peak,
            anon_kib: anon,
            file_kib: file,
            threads,
            cpu: Duration::from_millis(cpu * 1000 / ticks_per_second()),
        }
    })
}

/// What [`sample`] found.
#[derive(Default)]
struct Sampled {
    peak_kib: i64,
    anon_kib: i64,
    file_kib: i64,
    /// The most threads it had at once.
    threads: i64,
    /// User + system time of all its threads.
    cpu: Duration,
}

/// A process's user + system time so far (all threads), in clock ticks, from `/proc/<pid>/stat`.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's name in parentheses (which may hold spaces): state is field 3,
    // utime and stime fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).unwrap_or(100).max(1)
}

/// Runs `huddle args` with `home` as its data dir and measures its peak resident set. Not from
/// `wait4`: a child's `ru_maxrss` starts from the high-water mark of the process that spawned
/// it (Linux keeps it across `exec`), here this one, which holds every scripted answer. The
/// child's own `VmHWM` is read until it exits instead (the mark only grows).
// Reaped with `waitpid` below, not `Child::wait`: the sampler must see the zombie first.
#[allow(clippy::zombie_processes)]
fn measure(home: &Path, args: &[&str]) -> Measured {
    let started = Instant::now();
    let child = host_process::command(home, home)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("huddle starts");
    let pid = child.id();
    let sampler = sample(pid);
    let mut stderr = child.stderr.expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let sampled = sampler.join().unwrap_or_default();
    let mut status = 0;
    // SAFETY: `status` outlives the call; `pid` is our child, not yet reaped (the sampler saw
    // it become a zombie and stopped).
    let reaped = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
    assert_eq!(reaped, pid as libc::pid_t, "waitpid");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Measured {
        code,
        sampled,
        took: started.elapsed(),
        stderr: reader.join().unwrap_or_default(),
    }
}

/// `n` words, different for every `seed`.
fn words(seed: usize, n: usize) -> String {
    (0..n)
        .map(|k| format!("w{seed}x{k}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A run of an `orchestrator_reflect` team of `workers` for `iterations` iterations: the
/// preset, the scripted answers, the run; returns the measurement and the messages answered.
fn team_run(llm: &FakeLlm, workers: usize, iterations: usize) -> (Measured, Measured, usize) {
    let dir = support::bench_dir();
    let home = dir.path();
    std::fs::write(
        home.join("config.yaml"),
        format!(
            "default_model: openai/orch\nmax_concurrency: 8\nproviders:\n  - {{ name: openai, kind: openai, base_url: \"{}\" }}\n",
            llm.openai_base()
        ),
    )
    .expect("config");
    std::fs::create_dir_all(home.join("presets")).expect("presets dir");
    let mut preset = format!(
        "name: Memory {workers}\nmode: orchestrator_reflect\nmax_iterations: {iterations}\norchestrator: {{ model: openai/orch }}\nworkers:\n"
    );
    for w in 0..workers {
        preset.push_str(&format!("  - {{ name: w{w}, model: openai/w{w} }}\n"));
    }
    std::fs::write(home.join("presets/memory.yaml"), preset).expect("preset");

    // Each model's answers, in order (a unique model per worker, so they can be scripted).
    let tag = format!("m{workers}");
    let plan: String = (0..workers)
        .map(|w| format!("@worker:w{w}\nPart {w}: look at it from side {w}.\n@end\n"))
        .collect();
    let mut orchestrator = Vec::with_capacity(iterations * 2);
    for i in 0..iterations {
        orchestrator.push(Reply::text(&plan));
        let synthesis = format!(
            "Synthesis {i}: {}\nWe still lack part {i}.\n[[NEEDS_ITERATION]]\n",
            words(i * 7919, 120)
        );
        orchestrator.push(Reply::text(&synthesis));
    }
    llm.script("orch", orchestrator);
    for w in 0..workers {
        let answers = (0..iterations)
            .map(|i| Reply::text(&format!("{tag} answer {i} of w{w}: {}", words(i * 131 + w, 150))))
            .collect();
        llm.script(&format!("w{w}"), answers);
    }
    // The host exits once the run is over and `huddle run` went (no grace).
    let started = Instant::now();
    let host = HostProcess::start(home, home, 0);
    let host_sampler = sample(host.pid());
    let front = measure(
        home,
        &[
            "run",
            "--preset",
            &format!("Memory {workers}"),
            "Write the report",
        ],
    );
    let sampled = host_sampler.join().unwrap_or_default();
    let code = host.wait();
    let host = Measured {
        code,
        sampled,
        took: started.elapsed(),
        stderr: String::new(),
    };
    if std::env::var_os("HUDDLE_BENCH_KEEP").is_some() {
        println!("    data kept in {}", dir.keep().display());
    }
    (host, front, iterations * (workers + 2))
}

/// A host with no runs (issue 23 item 7: ≤ 30 MiB): its peak once ready and a second later.
fn idle_host() {
    let dir = support::bench_dir();
    let host = HostProcess::start(dir.path(), dir.path(), 60_000);
    let ready = host.status_kib("VmHWM:");
    std::thread::sleep(Duration::from_secs(1));
    let later = host.status_kib("VmHWM:");
    let (anon, file) = (host.status_kib("RssAnon:"), host.status_kib("RssFile:"));
    let threads = host_process::status_field(host.pid(), "Threads:");
    let _ = host.stop();
    let verdict = if later <= 30 * 1024 { "met" } else { "NOT met" };
    println!(
        "  idle host: peak RSS {} once ready, {} a second later (goal ≤ 30 MiB: {verdict}; {} anonymous, {} file-backed, {threads} threads)",
        mib(ready),
        mib(later),
        mib(anon),
        mib(file)
    );
}

/// `expected`: the exit code the run ends with (3: it ran all its iterations); `messages`: how
/// many agent messages it made (its CPU time per message is printed).
fn report(what: &str, m: &Measured, goal_mib: Option<f64>, expected: i32, messages: Option<usize>) {
    let s = &m.sampled;
    let verdict = match goal_mib {
        Some(goal) if (s.peak_kib as f64 / 1024.0) <= goal => format!(" (goal ≤ {goal} MiB: met)"),
        Some(goal) => format!(" (goal ≤ {goal} MiB: NOT met)"),
        None => String::new(),
    };
    let per_message = messages
        .filter(|n| *n > 0)
        .map(|n| format!(", {:.0} µs CPU per message", s.cpu.as_secs_f64() * 1e6 / n as f64))
        .unwrap_or_default();
    println!(
        "  {what}: peak RSS {}{verdict} (at most {} anonymous, {} file-backed, {} threads), {:.2?}, CPU {:.2?}{per_message}, exit {:?}",
        mib(s.peak_kib),
        mib(s.anon_kib),
        mib(s.file_kib),
        s.threads,
        m.took,
        s.cpu,
        m.code
    );
    if std::env::var_os("MIMALLOC_SHOW_STATS").is_some() {
        let stats: Vec<&str> = m
            .stderr
            .lines()
            .filter(|l| !l.starts_with("huddle") && !l.starts_with("  ") || l.contains(':'))
            .collect();
        println!("{}", stats[stats.len().saturating_sub(40)..].join("\n"));
    }
    if m.code != Some(expected) {
        let lines: Vec<&str> = m.stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(5)..].join("\n    ");
        println!("    unexpected exit; stderr ends:\n    {tail}");
    }
}

fn main() {
    // `cargo test --benches` runs benches with `--bench`-less arguments: only measure when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let options: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("MIMALLOC_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    println!(
        "peak resident set of `huddle` ({})",
        if options.is_empty() {
            "allocator options as built".to_string()
        } else {
            options.join(" ")
        }
    );
    let dir = support::bench_dir();
    report(
        "presets list",
        &measure(dir.path(), &["presets", "list"]),
        None,
        0,
        None,
    );
    idle_host();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let llm = rt.block_on(FakeLlm::start());
    let _guard = rt.enter();
    let mut sizes = vec![(4, 33)];
    if std::env::var("HUDDLE_BENCH_MEMORY").as_deref() != Ok("small") {
        sizes.push((58, 100));
    }
    for (workers, iterations) in sizes {
        let (host, front, messages) = team_run(&llm, workers, iterations);
        let what = format!("{messages}-message run ({workers} workers × {iterations} iterations)");
        report(&format!("{what}, the host"), &host, Some(20.0), 0, Some(messages));
        report(&format!("{what}, `huddle run`"), &front, None, 3, None);
    }
}
