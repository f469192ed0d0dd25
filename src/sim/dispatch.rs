//! How the sim plays a dispatching orchestrator (mode `dispatch`), deterministically from the
//! conversation: it dispatches two sub-agents, waits, reacts to the first result with a
//! follow-up and a broad sweep, cancels the sweep once the follow-up is under way, waits for
//! the rest, then answers with what came back. A request saying "all hands" dispatches every sub-agent at once (the
//! benchmark's fan-out).

use super::prompt::stable_hash;
use crate::engine::protocol::dispatch::{
    CANCEL_TOOL, CANCELLED, DISPATCH_TOOL, DispatchCall, cancel_arguments, dispatch_arguments, dispatchable,
    parse_call, parse_dispatch_result, parse_pushed_result,
};
use crate::model::{ToolCall, ToolChoice};
use crate::providers::{ChatRole, TurnRequest};

/// The task of the broad sweep the sim's orchestrator dispatches and then cancels.
const SWEEP_TASK: &str = "Sweep everything else around:";

/// How much longer than its model's latency a sim answer takes: a sweep is slow (four times),
/// so the orchestrator's cancel reaches it while it runs.
pub fn latency_factor(req: &TurnRequest) -> u32 {
    if req.last_user_text().contains(SWEEP_TASK) {
        4
    } else {
        1
    }
}

/// The sim's move: calls, or words without a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Play {
    Calls(Vec<ToolCall>),
    Say(String),
}

/// What the orchestrator's conversation says since the request.
#[derive(Debug, Default)]
struct Seen {
    request: String,
    /// Names dispatched, in order, with the execution id the tool gave back (once it did).
    dispatched: Vec<(String, Option<String>)>,
    /// `(name, first line)` of every pushed result.
    results: Vec<(String, String)>,
    /// Execution ids whose result arrived.
    finished: Vec<String>,
    /// Execution ids cancelled (the tool said `cancelled`).
    cancelled: Vec<String>,
    cancel_asked: bool,
}

/// Whether a user message is huddle's (pushed results and huddle's notes open with `[`), not
/// the user's request.
fn is_pushed(text: &str) -> bool {
    text.starts_with('[')
}

fn read(req: &TurnRequest) -> Seen {
    let start = req
        .messages
        .iter()
        .rposition(|m| m.role == ChatRole::User && !is_pushed(&m.content))
        .unwrap_or(0);
    let mut seen = Seen {
        request: req
            .messages
            .get(start)
            .map(|m| m.content.to_string())
            .unwrap_or_default(),
        ..Seen::default()
    };
    // Call ids of dispatches, to read their results.
    let mut calls: Vec<(String, String)> = Vec::new();
    // Call ids of cancels, with the execution id each named.
    let mut cancels: Vec<(String, String)> = Vec::new();
    for m in &req.messages[start.min(req.messages.len())..] {
        match m.role {
            ChatRole::Assistant => {
                for call in &m.tool_calls {
                    match parse_call(&call.name, &call.arguments) {
                        Ok(DispatchCall::Dispatch { name, .. }) => {
                            calls.push((call.id.clone(), name.clone()));
                            seen.dispatched.push((name, None));
                        }
                        Ok(DispatchCall::Cancel { execution_id }) => {
                            seen.cancel_asked = true;
                            cancels.push((call.id.clone(), execution_id));
                        }
                        _ => {}
                    }
                }
            }
            ChatRole::Tool => {
                let Some(of) = &m.result_of else { continue };
                if of.name == DISPATCH_TOOL
                    && let Some(i) = calls.iter().position(|(id, _)| *id == of.call_id)
                    && let Some(slot) = seen.dispatched.get_mut(i)
                {
                    slot.1 = parse_dispatch_result(&m.content);
                } else if of.name == CANCEL_TOOL
                    && m.content.trim() == CANCELLED
                    && let Some((_, id)) = cancels.iter().find(|(call, _)| *call == of.call_id)
                {
                    seen.cancelled.push(id.clone());
                }
            }
            ChatRole::User => {
                for pushed in m.content.split("\n\n").filter_map(parse_pushed_result) {
                    seen.finished.push(pushed.execution_id);
                    seen.results
                        .push((pushed.name, crate::text::first_line(&pushed.text, 100)));
                }
            }
        }
    }
    seen
}

fn dispatch(name: &str, task: String, n: usize) -> ToolCall {
    ToolCall {
        id: format!("sim_dispatch_{:08x}_{n}", stable_hash(&[name, &task]) as u32),
        name: DISPATCH_TOOL.to_string(),
        arguments: dispatch_arguments(name, &task),
    }
}

/// The orchestrator's move, when the dispatch tools are offered.
pub fn play(req: &TurnRequest) -> Option<Play> {
    let spec = req.tools.iter().find(|t| t.name == DISPATCH_TOOL)?;
    let names = dispatchable(spec);
    let seen = read(req);
    let words: Vec<&str> = seen.request.split_whitespace().take(12).collect();
    let about = words.join(" ");
    let pending = seen
        .dispatched
        .iter()
        .filter(|(_, id)| {
            id.as_ref()
                .is_none_or(|id| !seen.finished.contains(id) && !seen.cancelled.contains(id))
        })
        .count();
    let may_call = req.tool_choice != ToolChoice::None && !names.is_empty();
    if may_call && seen.dispatched.is_empty() {
        let fan_out = seen.request.to_lowercase().contains("all hands");
        let picked: Vec<&String> = if fan_out {
            names.iter().collect()
        } else {
            names.iter().take(2).collect()
        };
        let calls = picked
            .iter()
            .enumerate()
            .map(|(i, name)| dispatch(name, format!("From your angle ({name}), look into: {about}"), i))
            .collect();
        return Some(Play::Calls(calls));
    }
    let follow_up_due = seen.dispatched.len() == 2 && !seen.results.is_empty();
    if may_call && follow_up_due {
        let pick = |i: usize| &names[i % names.len()];
        let (first, said) = &seen.results[0];
        return Some(Play::Calls(vec![
            dispatch(pick(2), format!("Follow up on what {first} found: {said}"), 2),
            dispatch(pick(3), format!("{SWEEP_TASK} {about}"), 3),
        ]));
    }
    // The follow-up makes the sweep unnecessary: cancel it while it runs.
    let sweep = seen.dispatched.get(3).and_then(|d| d.1.clone());
    if may_call
        && !seen.cancel_asked
        && let Some(id) = sweep.filter(|id| !seen.finished.contains(id))
    {
        return Some(Play::Calls(vec![ToolCall {
            id: format!("sim_cancel_{id}"),
            name: CANCEL_TOOL.to_string(),
            arguments: cancel_arguments(&id),
        }]));
    }
    if pending > 0 && req.tool_choice != ToolChoice::None {
        return Some(Play::Say(format!(
            "Waiting for {pending} sub-agent{} to report.",
            if pending == 1 { "" } else { "s" }
        )));
    }
    let mut answer = String::from("## Findings\n\n");
    if seen.results.is_empty() {
        answer.push_str("No sub-agent reported back.\n");
    }
    for (name, said) in &seen.results {
        answer.push_str(&format!("- **{name}**: {said}\n"));
    }
    answer.push_str(&format!(
        "\n## Conclusion\n\nFrom {} report{} on \"{about}\": the findings above point to one cause; act on the first one.",
        seen.results.len(),
        if seen.results.len() == 1 { "" } else { "s" }
    ));
    Some(Play::Say(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::protocol::dispatch::tool_specs;
    use crate::providers::ChatMessage;

    fn request(messages: Vec<ChatMessage>, names: &[&str]) -> TurnRequest {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        TurnRequest {
            messages,
            tools: tool_specs(&names),
            ..TurnRequest::default()
        }
    }

    fn calls(play: Option<Play>) -> Vec<ToolCall> {
        match play {
            Some(Play::Calls(c)) => c,
            other => panic!("expected calls, got {other:?}"),
        }
    }

    #[test]
    fn it_dispatches_two_waits_follows_up_and_cancels_then_concludes() {
        let names = ["logs", "metrics", "k8s"];
        let mut messages = vec![ChatMessage::user("service X is failing")];
        let first = calls(play(&request(messages.clone(), &names)));
        assert_eq!(first.len(), 2);
        assert!(first[0].arguments.contains("\"logs\""));
        messages.push(ChatMessage::assistant_calls(String::new(), first.clone()));
        for (call, id) in first.iter().zip(["exec-2", "exec-3"]) {
            messages.push(ChatMessage::tool_result(
                &call.id,
                DISPATCH_TOOL,
                false,
                format!("{{\"execution_id\": \"{id}\", \"status\": \"accepted\"}}"),
            ));
        }
        let wait = play(&request(messages.clone(), &names));
        assert_eq!(
            wait,
            Some(Play::Say("Waiting for 2 sub-agents to report.".into()))
        );
        messages.push(ChatMessage::assistant("Waiting"));
        messages.push(ChatMessage::user(
            "[Sub-agent completed] logs (exec-2):\n> 2,847 errors",
        ));
        let react = calls(play(&request(messages.clone(), &names)));
        assert_eq!(react.len(), 2);
        assert!(react[0].arguments.contains("\"k8s\""), "the follow-up");
        assert!(
            react[1].arguments.contains("\"logs\""),
            "the sweep (names wrap around)"
        );
        messages.push(ChatMessage::assistant_calls(String::new(), react.clone()));
        messages.push(ChatMessage::tool_result(
            &react[0].id,
            DISPATCH_TOOL,
            false,
            "{\"execution_id\": \"exec-4\"}".to_string(),
        ));
        messages.push(ChatMessage::tool_result(
            &react[1].id,
            DISPATCH_TOOL,
            false,
            "{\"execution_id\": \"exec-5\"}".to_string(),
        ));
        let cancel = calls(play(&request(messages.clone(), &names)));
        assert_eq!(cancel.len(), 1);
        assert_eq!(cancel[0].name, CANCEL_TOOL);
        assert!(cancel[0].arguments.contains("exec-5"));
        messages.push(ChatMessage::assistant_calls(String::new(), cancel.clone()));
        messages.push(ChatMessage::tool_result(
            &cancel[0].id,
            CANCEL_TOOL,
            false,
            "cancelled".to_string(),
        ));
        messages.push(ChatMessage::user(
            "[Sub-agent completed] metrics (exec-3):\n> p99 up",
        ));
        assert!(
            matches!(play(&request(messages.clone(), &names)), Some(Play::Say(s)) if s.starts_with("Waiting for 1 "))
        );
        messages.push(ChatMessage::user(
            "[Sub-agent completed] k8s (exec-4):\n> OOMKilled",
        ));
        let Some(Play::Say(answer)) = play(&request(messages, &names)) else {
            panic!("expected the final answer");
        };
        assert!(answer.contains("- **logs**: 2,847 errors"));
        assert!(answer.contains("- **k8s**: OOMKilled"));
    }

    #[test]
    fn all_hands_dispatches_everyone_and_no_tools_means_no_play() {
        let names = ["a", "b", "c", "d"];
        let fan = calls(play(&request(
            vec![ChatMessage::user("All hands: check")],
            &names,
        )));
        assert_eq!(fan.len(), 4);
        let plain = TurnRequest {
            messages: vec![ChatMessage::user("x")],
            ..TurnRequest::default()
        };
        assert_eq!(play(&plain), None);
    }
}
