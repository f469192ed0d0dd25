//! A run's events folded into OpenTelemetry spans after the GenAI semantic conventions. Pure:
//! every event comes with its time.
//!
//! - the run: `invoke_workflow {team}` (the root), its evaluator's scores as
//!   `gen_ai.evaluation.result` events;
//! - an execution (modes `dispatch` and `team`): `invoke_agent {member}` under its parent
//!   execution's span (else the run's);
//! - a member's turn: `invoke_agent {session}` under its execution (else the run), and under it
//!   `chat {model}` with the provider, the model and the token usage (one per turn: a turn's
//!   model requests are not told apart in the events);
//! - a tool call: `execute_tool {tool}` under the turn that made it.
//!
//! Ids are derived from the run's id (the trace) and each span's key, so exporting a run again
//! gives the same ids. Prompts, answers, tool arguments and the evaluator's rationale are only
//! included with `content: on`; every text that is exported has what looks like a secret
//! replaced by `[redacted]`.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::engine::events::{EngineEvent, EventKind};
use crate::model::CycleOutcome;

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    Strs(Vec<String>),
}

pub type Attr = (String, Value);

/// `SpanKind`: internal work, or a call out (a model request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Client = 3,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub time_ns: u64,
    pub name: String,
    pub attributes: Vec<Attr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: String,
    pub kind: Kind,
    pub start_ns: u64,
    /// 0 while open.
    pub end_ns: u64,
    pub attributes: Vec<Attr>,
    pub events: Vec<SpanEvent>,
    /// Set for an error status, with its message.
    pub error: Option<String>,
}

impl Span {
    fn attr(&mut self, key: &str, value: Value) {
        self.attributes.push((key.to_string(), value));
    }
    fn text(&mut self, key: &str, text: &str) {
        self.attr(key, Value::Str(safe(text)));
    }
}

/// The text with what looks like a secret replaced.
fn safe(text: &str) -> String {
    crate::text::secrets::redact_secrets(text)
}

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

fn trace_id(run_id: &str) -> [u8; 16] {
    let d = digest(&["huddle/trace", run_id]);
    let mut id = [0u8; 16];
    id.copy_from_slice(&d[..16]);
    id[0] |= 1; // never all zero
    id
}

fn span_id(run_id: &str, key: &str) -> [u8; 8] {
    let d = digest(&["huddle/span", run_id, key]);
    let mut id = [0u8; 8];
    id.copy_from_slice(&d[..8]);
    id[0] |= 1;
    id
}

/// One run's spans as its events arrive.
pub struct RunSpans {
    run_id: String,
    content: bool,
    spans: Vec<Span>,
    /// Span index by key: `run`, `exec/<id>`, `turn/<session>/<generation>`,
    /// `tool/<session>/<call>`.
    by_key: HashMap<String, usize>,
    ended: bool,
}

impl RunSpans {
    pub fn new(run_id: &str, content: bool) -> RunSpans {
        RunSpans {
            run_id: run_id.to_string(),
            content,
            spans: Vec::new(),
            by_key: HashMap::new(),
            ended: false,
        }
    }

    pub fn ended(&self) -> bool {
        self.ended
    }

    fn open(&mut self, key: String, parent: Option<usize>, name: String, kind: Kind, at: u64) -> usize {
        if let Some(&i) = self.by_key.get(&key) {
            return i;
        }
        let span = Span {
            trace_id: trace_id(&self.run_id),
            span_id: span_id(&self.run_id, &key),
            parent: parent.map(|p| self.spans[p].span_id),
            name,
            kind,
            start_ns: at,
            end_ns: 0,
            attributes: Vec::new(),
            events: Vec::new(),
            error: None,
        };
        self.spans.push(span);
        let i = self.spans.len() - 1;
        self.by_key.insert(key, i);
        i
    }

    /// The run's span, opened at the first event seen.
    fn run(&mut self, event: &EngineEvent, at: u64) -> usize {
        if let Some(&i) = self.by_key.get("run") {
            return i;
        }
        let group = safe(&event.group);
        let i = self.open(
            "run".into(),
            None,
            format!("invoke_workflow {group}"),
            Kind::Internal,
            at,
        );
        let run_id = self.run_id.clone();
        let s = &mut self.spans[i];
        s.attr("gen_ai.operation.name", Value::Str("invoke_workflow".into()));
        s.attr("gen_ai.agent.name", Value::Str(group.clone()));
        s.attr("gen_ai.workflow.name", Value::Str(group.clone()));
        s.attr("huddle.team", Value::Str(group));
        s.attr("huddle.run.id", Value::Str(run_id));
        i
    }

    /// The span events of `event` belong under: its execution's, else the run's.
    fn parent_of(&mut self, event: &EngineEvent, at: u64) -> usize {
        let run = self.run(event, at);
        let Some(tag) = &event.execution else {
            return run;
        };
        self.execution(&tag.execution_id, tag.parent_execution_id.as_deref(), run, at)
    }

    fn execution(&mut self, id: &str, parent: Option<&str>, run: usize, at: u64) -> usize {
        let key = format!("exec/{id}");
        if let Some(&i) = self.by_key.get(&key) {
            return i;
        }
        let parent = match parent {
            Some(p) => self.execution(p, None, run, at),
            None => run,
        };
        let i = self.open(key, Some(parent), "invoke_agent".into(), Kind::Internal, at);
        let s = &mut self.spans[i];
        s.attr("gen_ai.operation.name", Value::Str("invoke_agent".into()));
        s.attr("gen_ai.agent.id", Value::Str(safe(id)));
        i
    }

    fn end(&mut self, key: &str, at: u64) -> Option<usize> {
        let i = *self.by_key.get(key)?;
        if self.spans[i].end_ns == 0 {
            self.spans[i].end_ns = at;
        }
        Some(i)
    }

    /// Folds one event of the run in (`at`: nanoseconds since the Unix epoch).
    pub fn apply(&mut self, event: &EngineEvent, at: u64) {
        let content = self.content;
        match &event.kind {
            EventKind::CycleStarted { mode, .. } => {
                let run = self.run(event, at);
                self.spans[run].attr("huddle.mode", Value::Str(mode.as_str().into()));
            }
            EventKind::ExecutionStarted { member, task, .. } => {
                let parent = self.parent_of(event, at);
                let s = &mut self.spans[parent];
                s.name = format!("invoke_agent {}", safe(member));
                s.text("gen_ai.agent.name", member);
                if content {
                    s.text("huddle.task", task);
                }
            }
            EventKind::ExecutionFinished {
                status,
                error,
                cost_usd,
                ..
            } => {
                let i = self.parent_of(event, at);
                let s = &mut self.spans[i];
                s.end_ns = at;
                s.attr("huddle.status", Value::Str(status.as_str().into()));
                if let Some(cost) = cost_usd {
                    s.attr("huddle.cost_usd", Value::Double(*cost));
                }
                if let Some(e) = error {
                    s.error = Some(safe(e));
                    s.attr("error.type", Value::Str("execution_failed".into()));
                }
            }
            EventKind::TurnStarted {
                session_id,
                session,
                generation,
                prompt,
            } => {
                let parent = self.parent_of(event, at);
                let i = self.open(
                    format!("turn/{session_id}/{generation}"),
                    Some(parent),
                    format!("invoke_agent {}", safe(session)),
                    Kind::Internal,
                    at,
                );
                let s = &mut self.spans[i];
                s.attr("gen_ai.operation.name", Value::Str("invoke_agent".into()));
                s.text("gen_ai.agent.name", session);
                s.text("gen_ai.conversation.id", session_id);
                s.text("huddle.session", session);
                if let Some(p) = prompt.as_ref().filter(|_| content) {
                    s.attr("gen_ai.input.messages", messages_json("user", &p.text));
                }
            }
            EventKind::TurnFinished {
                session_id,
                generation,
                success,
                interrupted,
                usage,
                cost_usd,
                error,
                message,
                ..
            } => {
                let key = format!("turn/{session_id}/{generation}");
                let Some(turn) = self.end(&key, at) else {
                    return;
                };
                let start = self.spans[turn].start_ns;
                let slug = message.as_ref().and_then(|m| m.model.clone()).unwrap_or_default();
                let (provider, model) = slug.split_once('/').unwrap_or(("", slug.as_str()));
                let chat = self.open(
                    format!("chat/{session_id}/{generation}"),
                    Some(turn),
                    format!("chat {}", safe(model)),
                    Kind::Client,
                    start,
                );
                let s = &mut self.spans[chat];
                s.end_ns = at;
                s.attr("gen_ai.operation.name", Value::Str("chat".into()));
                s.text("gen_ai.provider.name", provider);
                s.text("gen_ai.request.model", model);
                if let Some(u) = usage {
                    s.attr("gen_ai.usage.input_tokens", Value::Int(u.input_tokens as i64));
                    s.attr("gen_ai.usage.output_tokens", Value::Int(u.output_tokens as i64));
                    if u.cache_read_tokens > 0 {
                        let n = Value::Int(u.cache_read_tokens as i64);
                        s.attr("gen_ai.usage.cache_read.input_tokens", n);
                    }
                    if u.cache_write_tokens > 0 {
                        let n = Value::Int(u.cache_write_tokens as i64);
                        s.attr("gen_ai.usage.cache_creation.input_tokens", n);
                    }
                }
                if let Some(cost) = cost_usd {
                    s.attr("huddle.cost_usd", Value::Double(*cost));
                }
                if let Some(m) = message.as_ref().filter(|_| content) {
                    s.attr("gen_ai.output.messages", messages_json("assistant", &m.text));
                }
                let failure = match (success, interrupted, error) {
                    (_, _, Some(e)) => Some((e.clone(), "turn_failed")),
                    (_, true, None) => Some(("interrupted".to_string(), "interrupted")),
                    (false, _, None) => Some(("failed".to_string(), "turn_failed")),
                    _ => None,
                };
                if let Some((message, kind)) = failure {
                    for i in [chat, turn] {
                        self.spans[i].error = Some(safe(&message));
                        self.spans[i].attr("error.type", Value::Str(kind.into()));
                    }
                }
            }
            EventKind::ToolCall {
                session_id,
                generation,
                call_id,
                name,
                arguments,
                ..
            } => {
                let parent = match self.by_key.get(&format!("turn/{session_id}/{generation}")) {
                    Some(&t) => t,
                    None => self.parent_of(event, at),
                };
                let i = self.open(
                    format!("tool/{session_id}/{call_id}"),
                    Some(parent),
                    format!("execute_tool {}", safe(name)),
                    Kind::Internal,
                    at,
                );
                let s = &mut self.spans[i];
                s.attr("gen_ai.operation.name", Value::Str("execute_tool".into()));
                s.text("gen_ai.tool.name", name);
                s.text("gen_ai.tool.call.id", call_id);
                s.attr("gen_ai.tool.type", Value::Str("extension".into()));
                if content {
                    s.text("gen_ai.tool.call.arguments", arguments);
                }
            }
            EventKind::ToolResult {
                session_id,
                call_id,
                ok,
                first_line,
                ..
            } => {
                let Some(i) = self.end(&format!("tool/{session_id}/{call_id}"), at) else {
                    return;
                };
                let s = &mut self.spans[i];
                if content {
                    s.text("gen_ai.tool.call.result", first_line);
                }
                if !ok {
                    s.error = Some(if content {
                        safe(first_line)
                    } else {
                        "the tool call failed".into()
                    });
                    s.attr("error.type", Value::Str("tool_error".into()));
                }
            }
            EventKind::Evaluation {
                iteration,
                score,
                rationale,
                ..
            } => {
                let run = self.run(event, at);
                let mut attributes = vec![
                    (
                        "gen_ai.evaluation.name".to_string(),
                        Value::Str("huddle.reflect".into()),
                    ),
                    ("gen_ai.evaluation.score.value".to_string(), Value::Double(*score)),
                    ("huddle.iteration".to_string(), Value::Int(i64::from(*iteration))),
                ];
                if content {
                    attributes.push((
                        "gen_ai.evaluation.explanation".to_string(),
                        Value::Str(safe(rationale)),
                    ));
                }
                self.spans[run].events.push(SpanEvent {
                    time_ns: at,
                    name: "gen_ai.evaluation.result".into(),
                    attributes,
                });
            }
            EventKind::RunEnded {
                outcome,
                iterations,
                failed,
                totals,
                ..
            } => {
                let run = self.run(event, at);
                let s = &mut self.spans[run];
                s.end_ns = at;
                if let Some(cost) = totals.as_ref().and_then(|t| t.cost_usd) {
                    s.attr("huddle.cost_usd", Value::Double(cost));
                }
                if let Some(o) = outcome {
                    s.attr("huddle.outcome", Value::Str(o.as_str().into()));
                    if *o == CycleOutcome::Failed {
                        s.error.get_or_insert_with(|| "the run failed".into());
                    }
                }
                if *iterations > 0 {
                    s.attr("huddle.iterations", Value::Int(i64::from(*iterations)));
                }
                if let Some(f) = failed {
                    s.error = Some(safe(f));
                    s.attr("error.type", Value::Str("run_failed".into()));
                }
                self.ended = true;
            }
            _ => {
                self.parent_of(event, at);
            }
        }
    }

    /// The spans, every one still open ended at `at` (and marked unfinished).
    pub fn finish(mut self, at: u64) -> Vec<Span> {
        for s in &mut self.spans {
            if s.end_ns == 0 {
                s.end_ns = at.max(s.start_ns);
                s.error
                    .get_or_insert_with(|| "unfinished when the run ended".into());
            }
        }
        self.spans
    }
}

/// A message in the conventions' structured form, as a JSON string, its text redacted before
/// it is put into JSON (redacting the JSON would cut its escapes: `password=x\"` lost the
/// backslash of the quote after it, and the attribute was no JSON).
fn messages_json(role: &str, text: &str) -> Value {
    let text = safe(text);
    Value::Str(serde_json::json!([{"role": role, "parts": [{"type": "text", "content": text}]}]).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::{ExecutionTag, RunKey};
    use crate::model::Usage;

    fn ev(kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "g1".into(),
            group: "Panel".into(),
            run_id: Some("r1".into()),
            execution: None,
            kind,
        }
    }

    #[test]
    fn a_run_nests_turns_chats_and_tools_with_stable_ids_and_no_content_by_default() {
        let mut run = RunSpans::new("r1", false);
        run.apply(
            &ev(EventKind::RunStarted {
                key: RunKey::team("g1"),
            }),
            10,
        );
        run.apply(
            &ev(EventKind::TurnStarted {
                session_id: "s1".into(),
                session: "writer".into(),
                generation: 1,
                prompt: None,
            }),
            20,
        );
        run.apply(
            &ev(EventKind::ToolCall {
                session_id: "s1".into(),
                session: "writer".into(),
                generation: 1,
                call_id: "c1".into(),
                name: "time__now".into(),
                arguments: "{\"password\": \"hunter2-secret\"}".into(),
                step: None,
            }),
            30,
        );
        run.apply(
            &ev(EventKind::TurnFinished {
                session_id: "s1".into(),
                session: "writer".into(),
                generation: 1,
                success: false,
                interrupted: false,
                duration_ms: 5,
                usage: Some(Usage {
                    input_tokens: 7,
                    output_tokens: 3,
                    cache_read_tokens: 4,
                    cache_write_tokens: 0,
                }),
                cost_usd: Some(0.25),
                error: Some("401: check token=sk-abcdefghijklmnopqrstuvwx".into()),
                message: None,
            }),
            40,
        );
        let mut tagged = ev(EventKind::ExecutionRunning);
        tagged.execution = Some(ExecutionTag {
            execution_id: "exec-2".into(),
            parent_execution_id: Some("exec-1".into()),
        });
        run.apply(&tagged, 45);
        run.apply(
            &ev(EventKind::RunEnded {
                key: RunKey::team("g1"),
                outcome: None,
                iterations: 0,
                failed: None,
                totals: None,
            }),
            50,
        );
        assert!(run.ended());
        let spans = run.finish(60);
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "invoke_workflow Panel",
                "invoke_agent writer",
                "execute_tool time__now",
                "chat ",
                "invoke_agent",
                "invoke_agent"
            ]
        );
        let id = |i: usize| Some(spans[i].span_id);
        assert_eq!(spans[0].parent, None);
        assert_eq!(
            (spans[1].parent, spans[2].parent, spans[3].parent),
            (id(0), id(1), id(1))
        );
        // exec-2 under exec-1 under the run.
        assert_eq!((spans[5].parent, spans[4].parent), (id(4), id(0)));
        assert!(spans.iter().all(|s| s.trace_id == spans[0].trace_id));
        assert_eq!(
            RunSpans::new("r1", false).open("run".into(), None, "x".into(), Kind::Internal, 1),
            0
        );
        assert_eq!(spans[0].span_id, span_id("r1", "run"), "ids are stable");
        // The error is kept, its secret is not; the arguments are not exported at all.
        let error = spans[3].error.clone().unwrap_or_default();
        assert!(error.contains("401") && !error.contains("sk-abc"), "{error}");
        assert!(!format!("{spans:?}").contains("hunter2"));
        // The tool never got a result: unfinished.
        assert_eq!(spans[2].end_ns, 60);
        assert!(spans[2].error.is_some());
        // The chat span carries the cached tokens and the turn's cost.
        let attr = |key: &str| spans[3].attributes.iter().find(|(k, _)| k == key);
        assert_eq!(
            attr("gen_ai.usage.cache_read.input_tokens").map(|(_, v)| v),
            Some(&Value::Int(4))
        );
        assert_eq!(
            attr("huddle.cost_usd").map(|(_, v)| v),
            Some(&Value::Double(0.25))
        );
    }

    #[test]
    fn messages_stay_json_when_a_secret_in_them_is_redacted() {
        let Value::Str(json) = messages_json("user", "notes \"password=hunter2secret\" here") else {
            panic!("a string");
        };
        let parsed: serde_json::Value = serde_json::from_str(&json).expect("still JSON");
        assert_eq!(parsed[0]["parts"][0]["content"], "notes \"[redacted]\" here");
    }

    #[test]
    fn statuses_and_outcomes_are_exported_in_their_own_words() {
        let mut run = RunSpans::new("r1", false);
        let mut finished = ev(EventKind::ExecutionFinished {
            kind: crate::model::ExecutionKind::SubAgent,
            member: "scout".into(),
            status: crate::model::ExecutionStatus::TimedOut,
            duration_ms: 5,
            tokens: 0,
            tool_calls: 0,
            result: None,
            error: None,
            cost_usd: None,
        });
        finished.execution = Some(ExecutionTag {
            execution_id: "exec-1".into(),
            parent_execution_id: None,
        });
        run.apply(&finished, 20);
        run.apply(
            &ev(EventKind::RunEnded {
                key: RunKey::team("g1"),
                outcome: Some(CycleOutcome::RateLimited),
                iterations: 1,
                failed: None,
                totals: Some(crate::engine::events::RunTotals {
                    duration_ms: 9,
                    usage: Usage::default(),
                    cost_usd: Some(1.5),
                    unpriced_turns: 0,
                }),
            }),
            30,
        );
        let spans = run.finish(40);
        let value = |key: &str| {
            spans
                .iter()
                .flat_map(|s| &s.attributes)
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(value("huddle.status"), Some(Value::Str("timed_out".into())));
        assert_eq!(value("huddle.outcome"), Some(Value::Str("rate_limited".into())));
        assert_eq!(value("huddle.cost_usd"), Some(Value::Double(1.5)));
    }
}
