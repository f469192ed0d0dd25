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

/// The text of a message's content: a string, or its text blocks.
fn content_texts(content: &serde_json::Value) -> Vec<String> {
    match content {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// The lines of a request that huddle wrote (its system prompt and user messages) and that
/// stand more than once in it: an instruction said twice. Also a line of the model's own
/// answers (assistant messages) that huddle's text says again, within a line or as one (an
/// evaluation's reasons repeated after the answer that gave them). Blank lines, short ones (a
/// marker, a bullet of two words) and sentinels are left out.
pub fn repeated_lines(request: &RecordedRequest) -> Vec<String> {
    let json = request.json();
    let mut texts: Vec<String> = Vec::new();
    let mut answers: Vec<String> = Vec::new();
    match &json["system"] {
        serde_json::Value::String(s) => texts.push(s.clone()),
        serde_json::Value::Array(blocks) => texts.extend(
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string)),
        ),
        _ => {}
    }
    for m in json["messages"].as_array().into_iter().flatten() {
        match m["role"].as_str() {
            Some("system" | "user") => texts.extend(content_texts(&m["content"])),
            Some("assistant") => answers.extend(content_texts(&m["content"])),
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
    let said = texts.join("\n");
    for line in answers
        .iter()
        .flat_map(|a| a.lines())
        .map(str::trim)
        // A sentinel is the model answering in the words the brief gave it.
        .filter(|l| l.len() >= 16 && !(l.starts_with("[[") && l.ends_with("]]")))
    {
        let n = said.matches(line).count();
        if n > 0 {
            out.push(format!("answered, then {n}× again: {line}"));
        }
    }
    out.sort();
    out.dedup();
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
            .map(|(role, b)| format!("{role} {} ({}, max {})", b.count, kib(b.mean), kib(b.max as f64)))
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
        text.push_str(&format!(
            "@worker:t-{w}\n{}\n@end\n",
            words(&format!("task {w}"), n)
        ));
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

/// Gives the team a shared context (said to every member that gets one).
fn share(f: &Fixture, context: &str) {
    f.org.update(|o| {
        if let Some(g) = o.group_mut(&f.group_id) {
            g.shared_context = Some(context.to_string());
        }
    });
}

/// The `n`th request of a run of several.
fn request_of(n: u32) -> String {
    format!("Question {n}: how do we move the wiki, part {n}?")
}

/// `orchestrator_reflect` with an evaluator that never passes: `workers` workers,
/// `iterations` iterations.
pub async fn reflect_judged(workers: usize, iterations: u32) -> Fixture {
    let names: Vec<String> = (0..workers).map(|k| format!("w{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = team(Mode::OrchestratorReflect, &names, true, iterations).await;
    share(&f, "We host on our own servers.");
    let mut orchestrator = Vec::new();
    let mut evaluator = Vec::new();
    for n in 1..=iterations {
        orchestrator.push(plan(&names, n));
        orchestrator.push(Reply::text(&words("synthesis", n)));
        evaluator.push(Reply::text(&format!(
            "SCORE: 0.5\nRATIONALE: {}\n[[NEEDS_ITERATION]]",
            words("missing", n)
        )));
    }
    f.server.script(ORCH, orchestrator);
    f.server.script(EVAL, evaluator);
    for w in &names {
        let answers = (1..=iterations)
            .map(|n| Reply::text(&words(&format!("answer {w}"), n)))
            .collect();
        f.server.script(&format!("w-{w}"), answers);
    }
    let report = f.run(REQUEST).await;
    assert_eq!(report.iterations, iterations, "{report:?}");
    f
}

/// `orchestrator_reflect`, self-evaluated, `iterations` iterations per run, one run per
/// request in one conversation (`memory: conversation`).
pub async fn reflect_asked(workers: usize, iterations: u32, requests: &[String]) -> Fixture {
    reflect_conversation(workers, iterations, requests, false).await
}

/// [`reflect_asked`], or with an evaluator that never passes (`judged`).
pub async fn reflect_conversation(
    workers: usize,
    iterations: u32,
    requests: &[String],
    judged: bool,
) -> Fixture {
    let names: Vec<String> = (0..workers).map(|k| format!("w{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = team(Mode::OrchestratorReflect, &names, judged, iterations).await;
    remember(&f, Memory::Conversation);
    let steps = iterations * requests.len() as u32;
    let mut orchestrator = Vec::new();
    let mut evaluator = Vec::new();
    for n in 1..=steps {
        orchestrator.push(plan(&names, n));
        if judged {
            orchestrator.push(Reply::text(&words("synthesis", n)));
            evaluator.push(Reply::text(&format!(
                "SCORE: 0.5\nRATIONALE: {}\n[[NEEDS_ITERATION]]",
                words("missing", n)
            )));
        } else {
            orchestrator.push(unfinished_synthesis(n));
        }
    }
    f.server.script(ORCH, orchestrator);
    if judged {
        f.server.script(EVAL, evaluator);
    }
    for w in &names {
        let answers = (1..=steps)
            .map(|n| Reply::text(&words(&format!("answer {w}"), n)))
            .collect();
        f.server.script(&format!("w-{w}"), answers);
    }
    for request in requests {
        let report = f.run(request).await;
        assert_eq!(report.iterations, iterations, "{report:?}");
    }
    f
}

/// `orchestrator` (one pass), `runs` runs in one conversation (`memory: conversation`).
pub async fn orchestrator(workers: usize, runs: u32) -> Fixture {
    let requests: Vec<String> = (1..=runs).map(request_of).collect();
    orchestrator_asked(workers, &requests).await
}

/// `orchestrator` (one pass), one run per request in one conversation (`memory: conversation`).
pub async fn orchestrator_asked(workers: usize, requests: &[String]) -> Fixture {
    let runs = requests.len() as u32;
    let names: Vec<String> = (0..workers).map(|k| format!("w{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = team(Mode::Orchestrator, &names, false, 1).await;
    remember(&f, Memory::Conversation);
    share(&f, "We host on our own servers.");
    let mut orchestrator = Vec::new();
    for n in 1..=runs {
        orchestrator.push(plan(&names, n));
        orchestrator.push(Reply::text(&words("synthesis", n)));
    }
    f.server.script(ORCH, orchestrator);
    for w in &names {
        let answers = (1..=runs)
            .map(|n| Reply::text(&words(&format!("answer {w}"), n)))
            .collect();
        f.server.script(&format!("w-{w}"), answers);
    }
    for request in requests {
        f.run(request).await;
    }
    f
}

/// `broadcast` or `sequential`: `members` members, `runs` runs in one conversation.
pub async fn round(mode: Mode, members: usize, runs: u32) -> Fixture {
    let names: Vec<String> = (0..members).map(|k| format!("m{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = team(mode, &names, false, 1).await;
    remember(&f, Memory::Conversation);
    for m in &names {
        let answers = (1..=runs)
            .map(|n| Reply::text(&words(&format!("answer {m}"), n)))
            .collect();
        f.server.script(&format!("w-{m}"), answers);
    }
    for n in 1..=runs {
        f.run(&request_of(n)).await;
    }
    f
}

/// `flow`: a router before two members, each with an advisor; `runs` runs in one conversation.
pub async fn flow(runs: u32) -> Fixture {
    use huddle::model::{FlowLinks, RouterSpec};
    let f = team(Mode::Flow, &["router", "a", "b", "adv"], false, 1).await;
    remember(&f, Memory::Conversation);
    let id = |name: &str| f.session_id(&format!("t-{name}"));
    let (router, a, b, adv) = (id("router"), id("a"), id("b"), id("adv"));
    f.org.update(|o| {
        if let Some(g) = o.group_mut(&f.group_id) {
            g.settings.flow.entry = Some(router.clone());
        }
        if let Some(s) = o.session_mut(&router) {
            s.flow = FlowLinks {
                router: Some(RouterSpec {
                    destinations: vec![a.clone(), b.clone()],
                }),
                ..FlowLinks::default()
            };
        }
        for member in [&a, &b] {
            if let Some(s) = o.session_mut(member) {
                s.flow = FlowLinks {
                    advisors: vec![adv.clone()],
                    ..FlowLinks::default()
                };
            }
        }
    });
    let mut routes = Vec::new();
    for n in 1..=runs {
        let to = if n % 2 == 1 { "a" } else { "b" };
        let args = serde_json::json!({ "agent": to, "message": words("note", n) });
        routes.push(Reply::tool_call(
            &format!("r{n}"),
            "handoff_to",
            &args.to_string(),
        ));
    }
    f.server.script("w-router", routes);
    for m in ["a", "b", "adv"] {
        let answers = (1..=runs)
            .map(|n| Reply::text(&words(&format!("answer {m}"), n)))
            .collect();
        f.server.script(&format!("w-{m}"), answers);
    }
    for n in 1..=runs {
        f.run(&request_of(n)).await;
    }
    f
}

/// `pipeline`: triage hands the conversation to the handler, who keeps it for the later
/// messages; a supervisor looks after every turn. `messages` user messages.
pub async fn pipeline(messages: u32) -> Fixture {
    use huddle::model::{PipelineSpec, PipelineStage, Supervise};
    let f = team(
        Mode::Pipeline,
        &["triage", "handler", "reviewer", "boss"],
        false,
        1,
    )
    .await;
    let id = |name: &str| f.session_id(&format!("t-{name}"));
    let stage = |phase: &str, member: &str, next: Option<&str>| PipelineStage {
        phase: phase.into(),
        member: id(member),
        next: next.map(str::to_string),
        can_return_to: Vec::new(),
    };
    let spec = PipelineSpec {
        stages: vec![
            stage("intake", "triage", Some("handling")),
            stage("handling", "handler", Some("review")),
            stage("review", "reviewer", None),
        ],
        supervisor: Some(id("boss")),
        supervise: Supervise::EveryTurn,
        ..PipelineSpec::default()
    };
    f.org.update(|o| {
        if let Some(g) = o.group_mut(&f.group_id) {
            g.settings.pipeline = Some(spec);
        }
    });
    let args =
        serde_json::json!({ "target": "handler", "reason": "billing", "summary": words("summary", 1) });
    f.server.script(
        "w-triage",
        vec![Reply::tool_call("h1", "handoff_conversation", &args.to_string())],
    );
    let answers = (1..=messages)
        .map(|n| Reply::text(&words("handled", n)))
        .collect();
    f.server.script("w-handler", answers);
    f.server.set_default(Reply::text("OK"));
    for n in 1..=messages {
        f.run(&request_of(n)).await;
    }
    f
}

/// `dispatch`: the orchestrator dispatches two sub-agents twice each, then answers.
pub async fn dispatch() -> Fixture {
    let f = team(Mode::Dispatch, &["logs", "metrics"], false, 20).await;
    share(&f, "The service is service-X.");
    let call = |id: &str, name: &str, task: &str| {
        (
            id.to_string(),
            "dispatch_agent".to_string(),
            serde_json::json!({ "name": name, "task": task }).to_string(),
        )
    };
    let calls = |list: &[(String, String, String)]| {
        let refs: Vec<(&str, &str, &str)> = list
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
            .collect();
        Reply::tool_calls(&refs)
    };
    f.server.script(
        ORCH,
        vec![
            calls(&[
                call("c1", "logs", &words("find", 1)),
                call("c2", "metrics", &words("check", 1)),
            ]),
            Reply::text("Waiting for both."),
            calls(&[
                call("c3", "logs", &words("find", 2)),
                call("c4", "metrics", &words("check", 2)),
            ]),
            Reply::text("Waiting again."),
            Reply::text("Still waiting."),
            Reply::text(&words("root cause", 1)),
        ],
    );
    f.server.set_default(Reply::text(&words("final", 1)));
    for m in ["logs", "metrics"] {
        f.server.script(
            &format!("w-{m}"),
            vec![
                Reply::text(&words(&format!("found {m}"), 1)),
                Reply::text(&words(&format!("found {m}"), 2)),
            ],
        );
    }
    f.run("Alert: service-X answers 5xx.").await;
    f
}

/// `team`: three members and the supervisor deliberate for three cycles.
pub async fn deliberation() -> Fixture {
    use huddle::model::TeamLimits;
    let f = team(Mode::Team, &["a", "b", "c"], false, 1).await;
    f.org.update(|o| {
        if let Some(g) = o.group_mut(&f.group_id) {
            g.settings.team = TeamLimits {
                member_max_turns: Some(4),
                supervisor_max_turns: Some(4),
            };
        }
    });
    let says = |message: String, last: bool| {
        let args = serde_json::json!({ "message": message, "final": last });
        Reply::tool_call("b1", "team_broadcast", &args.to_string())
    };
    for m in ["a", "b", "c"] {
        f.server.script(
            &format!("w-{m}"),
            (1..=4)
                .map(|n| says(words(&format!("view {m}"), n), n == 4))
                .collect(),
        );
    }
    let guides = |n: u32| {
        let args = serde_json::json!({ "message": words("guidance", n) });
        Reply::tool_call("s1", "team_broadcast", &args.to_string())
    };
    f.server.script(
        ORCH,
        vec![guides(1), guides(2), guides(3), Reply::text(&words("final", 1))],
    );
    f.server.set_default(Reply::text(&words("final", 2)));
    f.run("Should we move the wiki this quarter?").await;
    f
}

/// `relay`: the driver and the counterpart exchange `turns` messages.
pub async fn relay(turns: u32) -> Fixture {
    use huddle::model::{ApprovalMode, RelaySettings};
    let f = team(Mode::Relay, &["me", "them"], false, 1).await;
    let mut settings = RelaySettings::new("me", "them");
    settings.approval = ApprovalMode::FullAuto;
    settings.max_turns = turns + 1;
    f.org.update(|o| {
        if let Some(g) = o.group_mut(&f.group_id) {
            g.settings.relay = Some(settings);
        }
    });
    let mut driver: Vec<Reply> = (1..=turns).map(|n| Reply::text(&words("offer", n))).collect();
    driver.push(Reply::text("We agreed.\n[[RELAY_COMPLETE]]"));
    f.server.script("w-me", driver);
    f.server.script(
        "w-them",
        (1..=turns).map(|n| Reply::text(&words("counter", n))).collect(),
    );
    f.run("Buy the old server for at most 400.").await;
    f
}

/// A single session's reflection with an evaluator that fails it `iterations - 1` times.
pub async fn single_reflection(iterations: u32) -> Fixture {
    let f = team(Mode::Broadcast, &["solo"], false, 1).await;
    f.server.script(
        "w-solo",
        (1..=iterations)
            .map(|n| Reply::text(&words("answer", n)))
            .collect(),
    );
    let mut verdicts: Vec<Reply> = (1..iterations)
        .map(|n| Reply::text(&format!("FAIL: {}", words("missing", n))))
        .collect();
    verdicts.push(Reply::text("PASS"));
    f.server.script(EVAL, verdicts);
    let id = f.session_id("t-solo");
    let report = f
        .engine
        .reflect_session(
            &id,
            huddle::engine::ReflectionRequest {
                goal: REQUEST.into(),
                max_iterations: iterations,
                evaluator_model: Some(format!("anthropic/{EVAL}")),
                model_override: None,
            },
        )
        .await
        .expect("the reflection runs");
    assert_eq!(report.iterations, iterations, "{report:?}");
    f
}

/// Every measured run whose name contains `filter` (all without one), each handed to `report`
/// as it ends.
pub async fn all(filter: Option<&str>, mut report: impl FnMut(&Figures)) {
    let wanted = |name: &str| filter.is_none_or(|f| name.contains(f));
    let mut measured = |name: &str, f: Fixture| report(&figures(name, &measure(&f)));
    let name = "orchestrator_reflect: 4 workers × 33 iterations, self-evaluated (the reference run)";
    if wanted(name) {
        measured(name, Box::pin(reflect(4, 33)).await);
    }
    let name = "orchestrator_reflect: 3 workers × 10 iterations, an evaluator";
    if wanted(name) {
        measured(name, Box::pin(reflect_judged(3, 10)).await);
    }
    let name = "orchestrator_reflect: 2 workers, 3 runs × 6 iterations in one conversation, self-evaluated";
    if wanted(name) {
        let requests: Vec<String> = (1..=3).map(request_of).collect();
        measured(name, Box::pin(reflect_asked(2, 6, &requests)).await);
    }
    let name = "orchestrator: 3 workers, 5 runs in one conversation";
    if wanted(name) {
        measured(name, Box::pin(orchestrator(3, 5)).await);
    }
    let name = "broadcast: 3 members, 5 runs in one conversation";
    if wanted(name) {
        measured(name, Box::pin(round(Mode::Broadcast, 3, 5)).await);
    }
    let name = "sequential: 3 members, 5 runs in one conversation";
    if wanted(name) {
        measured(name, Box::pin(round(Mode::Sequential, 3, 5)).await);
    }
    let name = "flow: a router, two members with an advisor, 6 runs in one conversation";
    if wanted(name) {
        measured(name, Box::pin(flow(6)).await);
    }
    let name = "pipeline: 3 stages and a supervisor, 8 messages";
    if wanted(name) {
        measured(name, Box::pin(pipeline(8)).await);
    }
    let name = "dispatch: 2 sub-agents, 2 tasks each";
    if wanted(name) {
        measured(name, Box::pin(dispatch()).await);
    }
    let name = "team: 3 members and the supervisor, 4 turns each";
    if wanted(name) {
        measured(name, Box::pin(deliberation()).await);
    }
    let name = "relay: 10 turns";
    if wanted(name) {
        measured(name, Box::pin(relay(10)).await);
    }
    let name = "single-session reflection: 10 iterations, an evaluator";
    if wanted(name) {
        measured(name, Box::pin(single_reflection(10)).await);
    }
}
