//! What a team sends per model request (issue 29): runs of each mode against the fake server on
//! loopback, with short scripted answers (so almost everything sent is huddle's own text), and
//! the figures of their recorded request bodies. Used by the tests in `engine_economy.rs` and by
//! `cargo bench --bench prompt_bytes`, which prints the table in docs/benchmarks.md.



use std::collections::HashMap;

use huddle::model::{Memory, Mode};

use super::engine_fixture::{EVAL, Fixture, ORCH, team};
use super::fake_llm_server::{RecordedRequest, Reply};

/// The request of the reference run.
pub const REQUEST: &str = "Write a short plan for moving the team wiki to a new host.";

/// Eight words, different for every `(who, n)`: the answers of the runs, short so that what a
/// request carries is huddle's text, distinct so no stall is detected and no line repeats.
pub fn words(who: &str, n: u32) -> String {
    format!("{who} {n} notes alpha{n} beta{n} gamma{n} delta{n} epsilon{n}.")
}

/// Who sent a request: the orchestrator, the evaluator, or a worker/member (by its model).
pub fn role_of(request: &RecordedRequest) -> &'static str {
    match request.model().as_str() {
        ORCH => "orchestrator",
        EVAL => "evaluator",
        _ => "worker",
    }
}

/// One request as measured: who sent it, its body's size, and its lines of instructions said
/// more than once.
#[derive(Debug, Clone)]
pub struct Sent {
    pub role: &'static str,
    pub model: String,
    pub bytes: usize,
    pub repeated_lines: Vec<String>,
    pub request: RecordedRequest,
}

/// The lines of a request that huddle wrote (its system prompt and user messages, not the
/// model's answers) and that stand more than once in it: an instruction said twice. Blank lines
/// and short ones (a marker, a bullet of two words) are left out.
pub fn repeated_lines(request: &RecordedRequest) -> Vec<String> {
    let json = request.json();
    let mut texts: Vec<String> = Vec::new();
    match &json["system"] {
        serde_json::Value::String(s) => texts.push(s.clone()),
        serde_json::Value::Array(blocks) => {
            texts.extend(blocks.iter().filter_map(|b| b["text"].as_str().map(str::to_string)))
        }
        _ => {}
    }
    for m in json["messages"].as_array().into_iter().flatten() {
        if m["role"] != "system" && m["role"] != "user" {
            continue;
        }
        match &m["content"] {
            serde_json::Value::String(s) => texts.push(s.clone()),
            serde_json::Value::Array(blocks) => texts.extend(
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str().map(str::to_string)),
            ),
            _ => {}
        }
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for text in &texts {
        for line in text.lines().map(str::trim).filter(|l| l.len() >= 16) {
            *counts.entry(line.to_string()).or_default() += 1;
        }
    }
    let mut out: Vec<String> = counts
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(line, n)| format!("{n}× {line}"))
        .collect();
    out.sort();
    out
}

/// Every request a run made, measured, in the order they arrived.
pub fn measure(f: &Fixture) -> Vec<Sent> {
    f.server
        .requests()
        .into_iter()
        .filter(|r| r.body.contains("\"messages\""))
        .map(|r| Sent {
            role: role_of(&r),
            model: r.model(),
            bytes: r.body.len(),
            repeated_lines: repeated_lines(&r),
            request: r,
        })
        .collect()
}

/// Mean, max and total bytes of some requests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bytes {
    pub count: usize,
    pub mean: f64,
    pub max: usize,
    pub total: usize,
}

impl Bytes {
    pub fn of<'a>(sent: impl IntoIterator<Item = &'a Sent>) -> Bytes {
        let sizes: Vec<usize> = sent.into_iter().map(|s| s.bytes).collect();
        let total: usize = sizes.iter().sum();
        Bytes {
            count: sizes.len(),
            mean: if sizes.is_empty() {
                0.0
            } else {
                total as f64 / sizes.len() as f64
            },
            max: sizes.iter().copied().max().unwrap_or(0),
            total,
        }
    }
}

/// A run's figures: all requests, per role, and the most lines said twice in one request.
#[derive(Debug, Clone)]
pub struct Figures {
    pub name: String,
    pub all: Bytes,
    pub roles: Vec<(&'static str, Bytes)>,
    pub max_repeated: usize,
    /// An example of a repeated line, from the request that had most.
    pub worst: Option<String>,
}

pub fn figures(name: &str, sent: &[Sent]) -> Figures {
    let mut roles: Vec<(&'static str, Bytes)> = Vec::new();
    for role in ["orchestrator", "worker", "evaluator"] {
        let of_role: Vec<&Sent> = sent.iter().filter(|s| s.role == role).collect();
        if !of_role.is_empty() {
            roles.push((role, Bytes::of(of_role)));
        }
    }
    let worst = sent.iter().max_by_key(|s| s.repeated_lines.len());
    Figures {
        name: name.to_string(),
        all: Bytes::of(sent),
        roles,
        max_repeated: worst.map_or(0, |s| s.repeated_lines.len()),
        worst: worst.and_then(|s| s.repeated_lines.first().cloned()),
    }
}

pub fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

impl Figures {
    /// One row of the table in docs/benchmarks.md.
    pub fn row(&self) -> String {
        let roles: Vec<String> = self
            .roles
            .iter()
            .map(|(role, b)| {
                format!(
                    "{role} {} ({}, max {})",
                    b.count,
                    kib(b.mean),
                    kib(b.max as f64)
                )
            })
            .collect();
        format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            self.name,
            self.all.count,
            kib(self.all.mean),
            kib(self.all.max as f64),
            if self.all.total >= 1 << 20 {
                format!("{:.2} MiB", self.all.total as f64 / f64::from(1 << 20))
            } else {
                kib(self.all.total as f64)
            },
            roles.join("; "),
            self.max_repeated,
        )
    }
}

/// A plan giving each worker an eight-word task.
fn plan(workers: &[&str], n: u32) -> Reply {
    let mut text = format!("Plan {n}.\n");
    for w in workers {
        text.push_str(&format!("@worker:t-{w}\n{}\n@end\n", words(&format!("task {w}"), n)));
    }
    Reply::text(&text)
}

/// A synthesis that judges itself not done yet, with a line of feedback.
fn unfinished_synthesis(n: u32) -> Reply {
    Reply::text(&format!(
        "{}\n[[NEEDS_ITERATION]]\n{}",
        words("synthesis", n),
        words("missing", n)
    ))
}

/// The reference run of issue 29: `orchestrator_reflect`, `workers` workers, `iterations`
/// iterations, no evaluator (the orchestrator evaluates itself and never finishes early), answers
/// of eight words. Returns the fixture (its server holds every request).
pub async fn reflect(workers: usize, iterations: u32) -> Fixture {
    let names: Vec<String> = (0..workers).map(|k| format!("w{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = team(Mode::OrchestratorReflect, &names, false, iterations).await;
    let mut orchestrator = Vec::new();
    for n in 1..=iterations {
        orchestrator.push(plan(&names, n));
        orchestrator.push(unfinished_synthesis(n));
    }
    f.server.script(ORCH, orchestrator);
    for w in &names {
        let answers = (1..=iterations)
            .map(|n| Reply::text(&words(&format!("answer {w}"), n)))
            .collect();
        f.server.script(&format!("w-{w}"), answers);
    }
    let report = f.run(REQUEST).await;
    assert_eq!(
        report.iterations, iterations,
        "the reference run goes the whole way: {report:?}"
    );
    f
}

/// Sets a team's memory.
pub fn remember(f: &Fixture, memory: Memory) {
    f.org.update(|o| {
        if let Some(g) = o.group_mut(&f.group_id) {
            g.memory = memory;
        }
    });
}

/// Every measured run whose name contains `filter` (all without one), each handed to `report`
/// as it ends.
pub async fn all(filter: Option<&str>, mut report: impl FnMut(&Figures)) {
    let wanted = |name: &str| filter.is_none_or(|f| name.contains(f));
    let name = "orchestrator_reflect: 4 workers × 33 iterations";
    if wanted(name) {
        let f = reflect(4, 33).await;
        report(&figures(name, &measure(&f)));
    }
}
