//! OpenTelemetry export through `huddle run`, the real binary: a reflect run's spans reach an
//! OTLP/HTTP receiver that decodes them with the reference classes (`opentelemetry-proto`
//! 1.45.2 from PyPI, `tests/fixtures/otlp/receiver.py`) with their parents, GenAI attributes,
//! the evaluator's scores as `gen_ai.evaluation.result` events, the configured header and no
//! prompt text; a collector that is not there changes nothing of the run.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::providers_acp::test_python;

const TEAM: &str = "name: Crew\nmode: orchestrator_reflect\nmax_iterations: 2\norchestrator: {}\nevaluator: {}\nworkers:\n  - { name: implementer }\n  - { name: tester }\n";

/// The receiver, and the port it listens on.
struct Receiver(Child);

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn receiver(python: &Path, out: &Path) -> (Receiver, u16) {
    let mut child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otlp/receiver.py"))
        .arg(out)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the receiver");
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    let port = line.trim().parse().expect("the receiver's port");
    (Receiver(child), port)
}

fn home(endpoint: &str, protocol: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "default_model: sim/default\ntelemetry:\n  otlp_endpoint: \"{endpoint}\"\n  protocol: {protocol}\n  headers_env: {{ Authorization: HUDDLE_TEST_OTLP_AUTH }}\n"
        ),
    )
    .expect("config");
    std::fs::create_dir_all(home.path().join("presets")).expect("presets");
    std::fs::write(home.path().join("presets/crew.yaml"), TEAM).expect("preset");
    home
}

fn run(home: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args([
            "run",
            "--preset",
            "Crew",
            "Write the notes; password=hunter2secret",
        ])
        .env("HUDDLE_HOME", home)
        .env("HUDDLE_TEST_OTLP_AUTH", "Bearer t0ken-for-tests")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(home)
        .output()
        .expect("run huddle")
}

#[test]
fn a_reflect_runs_spans_reach_the_collector_nested_and_without_content() {
    spans_reach_the_collector("http/protobuf", "application/x-protobuf");
}

#[test]
fn the_same_spans_reach_the_collector_in_otlp_json() {
    spans_reach_the_collector("http/json", "application/json");
}

/// A reflect run's export: the receiver (alive for `huddle doctor` too), the home, and the
/// file of the spans received.
struct Exported {
    _receiver: Receiver,
    home: tempfile::TempDir,
    _dir: tempfile::TempDir,
    out: std::path::PathBuf,
}

/// A reflect run through `huddle run` with telemetry to a receiver (`protocol`, and `extra`
/// lines in the telemetry block). `None` without the reference classes.
fn exported(protocol: &str, extra: &str) -> Option<Exported> {
    let python = test_python("opentelemetry.proto")?;
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("spans.jsonl");
    let (receiver, port) = receiver(&python, &out);
    let home = home(&format!("http://127.0.0.1:{port}"), protocol);
    let config = home.path().join("config.yaml");
    let yaml = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, yaml + extra).expect("config");
    let result = run(home.path());
    // Two iterations, the goal not met: exit 3 (max iterations), as without telemetry.
    assert_eq!(
        result.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    Some(Exported {
        _receiver: receiver,
        home,
        _dir: dir,
        out,
    })
}

fn spans_reach_the_collector(protocol: &str, content_type: &str) {
    let Some(exported) = exported(protocol, "") else {
        return;
    };
    let (home, out) = (&exported.home, &exported.out);

    let spans: Vec<Value> = std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("span"))
        .collect();
    let root: Vec<&Value> = spans.iter().filter(|s| s["parent_span_id"] == "").collect();
    assert_eq!(root.len(), 1, "one root: {spans:#?}");
    let root = root[0];
    // `huddle run --preset` names its team after the preset and the time.
    assert!(
        root["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("invoke_workflow Crew")),
        "{root}"
    );
    assert_eq!(root["attributes"]["gen_ai.operation.name"], "invoke_workflow");
    assert_eq!(root["attributes"]["huddle.mode"], "orchestrator_reflect");
    assert_eq!(root["resource"]["service.name"], "huddle");
    assert_eq!(root["authorization"], "Bearer t0ken-for-tests");
    assert!(spans.iter().all(|s| s["content_type"] == content_type));
    // `huddle doctor` posts an empty export the same way, and the collector takes it.
    let doctor = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .arg("doctor")
        .env("HUDDLE_HOME", home.path())
        .env("HUDDLE_TEST_OTLP_AUTH", "Bearer t0ken-for-tests")
        .current_dir(home.path())
        .output()
        .expect("run huddle doctor");
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        said.contains(&format!("({protocol}), content off"))
            && said.contains("  ok the collector accepts spans (200 OK)"),
        "{said}"
    );
    // Every span in the run's trace, every parent a span of it.
    let ids: Vec<&Value> = spans.iter().map(|s| &s["span_id"]).collect();
    for s in &spans {
        assert_eq!(s["trace_id"], root["trace_id"]);
        assert!(
            s["parent_span_id"] == "" || ids.contains(&&s["parent_span_id"]),
            "{s}"
        );
        assert!(s["end"].as_u64() >= s["start"].as_u64(), "{s}");
    }
    // Member turns under the run, each with a chat span (CLIENT) of the sim's model under it.
    let agents: Vec<&Value> = spans
        .iter()
        .filter(|s| s["attributes"]["gen_ai.operation.name"] == "invoke_agent")
        .collect();
    assert!(agents.len() >= 3, "{agents:#?}");
    assert!(agents.iter().all(|a| a["parent_span_id"] == root["span_id"]));
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| s["attributes"]["gen_ai.operation.name"] == "chat")
        .collect();
    assert_eq!(chats.len(), agents.len());
    for c in &chats {
        assert_eq!(c["kind"], 3, "CLIENT");
        assert_eq!(c["attributes"]["gen_ai.provider.name"], "sim");
        assert_eq!(c["attributes"]["gen_ai.request.model"], "default");
        assert!(
            c["attributes"]["gen_ai.usage.output_tokens"].as_i64() > Some(0),
            "{c}"
        );
        assert!(agents.iter().any(|a| a["span_id"] == c["parent_span_id"]));
    }
    // The evaluator's scores.
    let evaluations: Vec<&Value> = root["events"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter(|e| e["name"] == "gen_ai.evaluation.result")
                .collect()
        })
        .unwrap_or_default();
    assert!(!evaluations.is_empty(), "{root}");
    assert!(evaluations[0]["attributes"]["gen_ai.evaluation.score.value"].is_f64());
    // No prompt or answer without `content: on`, and so not the password either.
    let all = std::fs::read_to_string(out).unwrap_or_default();
    assert!(!all.contains("hunter2secret") && !all.contains("gen_ai.input.messages"));
}

/// With `content: on` the prompts and answers go to the collector too (as GenAI messages),
/// with what looks like a secret (here `password=...` in the task) redacted.
#[test]
fn with_content_on_prompts_and_answers_are_exported_redacted() {
    let Some(exported) = exported("http/json", "  content: on\n") else {
        return;
    };
    let out = &exported.out;
    let all = std::fs::read_to_string(out).unwrap_or_default();
    let spans: Vec<Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).expect("span"))
        .collect();
    let texts = |attribute: &str| -> Vec<String> {
        spans
            .iter()
            .filter_map(|s| s["attributes"][attribute].as_str().map(str::to_string))
            .collect()
    };
    let asked = texts("gen_ai.input.messages");
    let answered = texts("gen_ai.output.messages");
    assert!(!asked.is_empty() && !answered.is_empty(), "{spans:#?}");
    // The task reached a member's prompt, its password redacted.
    assert!(
        asked
            .iter()
            .any(|m| m.contains("Write the notes") && m.contains("[redacted]")),
        "{asked:#?}"
    );
    // Every message is JSON of the conventions' shape, the redaction inside its text.
    for m in asked.iter().chain(&answered) {
        let parsed: Value = serde_json::from_str(m).unwrap_or_else(|e| panic!("{e}: {m}"));
        assert!(parsed[0]["parts"][0]["content"].is_string(), "{parsed}");
    }
    let message: Value = serde_json::from_str(&answered[0]).expect("JSON");
    assert_eq!(message[0]["role"], "assistant", "{message}");
    assert!(!all.contains("hunter2secret"), "the password never leaves");
}

#[test]
fn a_collector_that_is_not_there_changes_nothing_of_the_run() {
    // A port nobody listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let home = home(&format!("http://127.0.0.1:{port}"), "http/protobuf");
    let started = std::time::Instant::now();
    let result = run(home.path());
    assert_eq!(
        result.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(!stdout.trim().is_empty(), "the run's answer is printed");
    // The same as a run without telemetry.
    std::fs::write(home.path().join("config.yaml"), "default_model: sim/default\n").expect("config");
    let without = run(home.path());
    assert_eq!(without.status.code(), result.status.code());
}
