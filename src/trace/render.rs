//! A trace tree as text (`├──` / `└──`, one line per node and item) and as JSON (nodes nested
//! under `children`). A node's and an item's words are [`crate::describe`]'s, as `huddle run`
//! and the TUI say them; everything a model, a tool or a file wrote is made safe to print
//! ([`sanitize::display`], [`sanitize::json_line`]) and cut to one line.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::tree::{NodeId, RunState, RunSummary, Trace, TraceItem, TraceNode};
use crate::describe::{self, duration};
use crate::text::{cap_chars, first_line, sanitize};

/// The most characters of a result, task or message on a node's line.
const TEXT_MAX: usize = 100;
/// How deep JSON nests before it lists the rest of a branch flat (a damaged file could chain
/// executions deeper than a serializer's stack allows).
const JSON_DEPTH_MAX: usize = 32;
/// How deep the text indents.
const TEXT_DEPTH_MAX: usize = 32;

/// One line of untrusted text, safe to print.
fn clean(text: &str, max: usize) -> String {
    first_line(&sanitize::display(text), max)
}

/// The run's line: group, run id, mode, state or outcome, duration, tokens.
fn run_line(run: &RunSummary) -> String {
    let mut parts = vec![clean(&run.group, TEXT_MAX)];
    if let Some(id) = &run.run_id {
        parts.push(format!("run {}", clean(id, TEXT_MAX)));
    }
    if let Some(mode) = run.mode {
        parts.push(mode.to_string());
    }
    parts.push(match (run.state, run.outcome) {
        (RunState::Running, _) => "in progress".to_string(),
        (RunState::Interrupted, _) => "interrupted (no end recorded)".to_string(),
        (RunState::Ended, Some(outcome)) => outcome.as_str().to_string(),
        (RunState::Ended, None) => "ended".to_string(),
    });
    if let Some(ms) = run.duration_ms {
        parts.push(duration(ms));
    }
    if run.paused_ms > 0 {
        parts.push(format!("paused {}", duration(run.paused_ms)));
    }
    parts.push(format!("{} tokens", run.tokens));
    // As its end recorded it (unknown included); a file that recorded no end of it, or one
    // written before costs were, says a cost only where one was priced.
    let cost = crate::describe::cost::short(&run.cost).filter(|_| run.cost_recorded || run.cost.priced > 0);
    if let Some(cost) = cost {
        parts.push(cost);
    }
    parts.join(" · ")
}

/// A node's line: its execution's (id, member, kind, status, duration, tokens, calls, then its
/// error or result, or its task).
/// Its line; a turn a resumed run took from disk says so after its member.
fn node_line(node: &TraceNode) -> String {
    let line = node.exec.line(None);
    if !node.from_disk {
        return line;
    }
    let who = crate::text::sanitize::display(&format!("{} {}", node.exec.id, node.exec.member)).into_owned();
    match line.strip_prefix(&who) {
        Some(rest) => format!("{who} (from disk){rest}"),
        None => format!("{line} (from disk)"),
    }
}

fn item_line(item: &TraceItem, names: &describe::Names) -> String {
    match item {
        TraceItem::ToolCall {
            name,
            ok,
            duration_ms,
            first_line,
            ..
        } => describe::tools::result(name, *ok, *duration_ms, first_line.as_deref()).text,
        TraceItem::Broadcast {
            from,
            kind,
            message,
            turn,
            last,
            supervisor,
            ..
        } => {
            let b = describe::team::Broadcast {
                from,
                kind: *kind,
                message,
                turn: *turn,
                last: *last,
                supervisor: *supervisor,
            };
            describe::team::broadcast(&b).text
        }
        TraceItem::Event { event, .. } => describe::describe_as(event, None, names)
            .map(|l| l.text)
            .unwrap_or_else(|| event.name().to_string()),
    }
}

fn item_at(item: &TraceItem) -> DateTime<Utc> {
    match item {
        TraceItem::ToolCall { at, .. } | TraceItem::Broadcast { at, .. } | TraceItem::Event { at, .. } => *at,
    }
}

/// A call of a mode's tool that went through (a broadcast, a dispatch, a flow's handoff): its
/// own event's line says it all, as in `huddle run` and the TUI (the JSON keeps both). A failed
/// one has no other line: it shows.
fn said_by_its_own_event(item: &TraceItem) -> bool {
    matches!(item, TraceItem::ToolCall { name, ok: Some(true), .. } if describe::tools::said_by_its_own_event(name))
}

/// What goes under a node: its items and children, merged by time (items first on a tie).
enum Entry<'a> {
    Item(&'a TraceItem),
    Node(NodeId),
}

fn entries<'a>(trace: &'a Trace, items: &'a [TraceItem], children: &[NodeId]) -> Vec<Entry<'a>> {
    let mut out = Vec::with_capacity(items.len() + children.len());
    let (mut i, mut c) = (0, 0);
    while i < items.len() || c < children.len() {
        let child_start = children
            .get(c)
            .and_then(|&n| trace.node(n))
            .and_then(|n| n.started);
        let take_item = match (items.get(i), child_start) {
            (Some(item), Some(start)) => item_at(item) <= start,
            (Some(_), None) => c >= children.len(),
            (None, _) => false,
        };
        if take_item {
            if !said_by_its_own_event(&items[i]) {
                out.push(Entry::Item(&items[i]));
            }
            i += 1;
        } else {
            out.push(Entry::Node(children[c]));
            c += 1;
        }
    }
    out
}

/// An entry still to print: its depth, the prefix of its line, whether it is its level's last.
type Pending<'a> = (usize, String, Entry<'a>, bool);

/// Puts a level's entries on the stack so that the first is popped first.
fn push_level<'a>(stack: &mut Vec<Pending<'a>>, depth: usize, prefix: &str, level: Vec<Entry<'a>>) {
    let n = level.len();
    for (k, e) in level.into_iter().enumerate().rev() {
        stack.push((depth, prefix.to_string(), e, k + 1 == n));
    }
}

/// The tree as text: the run's line, then every node and item under it.
pub fn text(trace: &Trace) -> String {
    let mut out = run_line(&trace.run);
    out.push('\n');
    if let (Some(resumes), Some(i)) = (&trace.run.resumes, &trace.run.interruption) {
        let line =
            describe::cycle::run_resumed(resumes, i.interrupted_at, i.reason.as_deref(), i.finished_turns);
        let _ = writeln!(out, "  {}", clean(&line.text, 2 * TEXT_MAX));
    }
    if let Some(result) = &trace.run.result {
        let _ = writeln!(out, "  result: {}", clean(result, TEXT_MAX));
    }
    if let Some(failed) = &trace.run.failed {
        let _ = writeln!(out, "  failed: {}", clean(failed, TEXT_MAX));
    }
    if trace.skipped_lines > 0 {
        let _ = writeln!(
            out,
            "  ({} unreadable line{} of the run file skipped)",
            trace.skipped_lines,
            if trace.skipped_lines == 1 { "" } else { "s" }
        );
    }
    if trace.nodes.is_empty() && trace.run.items.is_empty() {
        out.push_str("  (no executions or member turns recorded)\n");
        return out;
    }
    // Depth-first with an explicit stack: (depth, prefix of this entry, entry, is it the last).
    // Past TEXT_DEPTH_MAX the indentation stops growing (a damaged file could chain thousands).
    let mut stack: Vec<Pending<'_>> = Vec::new();
    let roots: Vec<NodeId> = trace.roots.iter().copied().collect();
    push_level(&mut stack, 0, "", entries(trace, &trace.run.items, &roots));
    while let Some((depth, prefix, entry, last)) = stack.pop() {
        let branch = if last { "└── " } else { "├── " };
        match entry {
            Entry::Item(item) => {
                let line = item_line(item, &trace.names);
                let _ = writeln!(out, "{prefix}{branch}{}", cap_chars(&line, describe::LINE_MAX));
            }
            Entry::Node(id) => {
                let Some(node) = trace.node(id) else { continue };
                let line = node_line(node);
                let _ = writeln!(out, "{prefix}{branch}{}", cap_chars(&line, describe::LINE_MAX));
                let below = if depth + 1 < TEXT_DEPTH_MAX {
                    format!("{prefix}{}", if last { "    " } else { "│   " })
                } else {
                    prefix
                };
                push_level(
                    &mut stack,
                    depth + 1,
                    &below,
                    entries(trace, &node.items, &node.children),
                );
            }
        }
    }
    out
}

#[derive(Serialize)]
struct JsonTrace<'a> {
    run: &'a RunSummary,
    skipped_lines: usize,
    children: Vec<JsonNode<'a>>,
}

#[derive(Serialize)]
struct JsonNode<'a> {
    #[serde(flatten)]
    node: &'a TraceNode,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    children: Vec<JsonNode<'a>>,
}

fn json_node(trace: &Trace, id: NodeId, depth: usize) -> Option<JsonNode<'_>> {
    let node = trace.node(id)?;
    let children = if depth + 1 < JSON_DEPTH_MAX {
        node.children
            .iter()
            .filter_map(|&c| json_node(trace, c, depth + 1))
            .collect()
    } else {
        // The rest of the branch, flat, in display order.
        let mut flat = Vec::new();
        let mut stack: Vec<NodeId> = node.children.iter().rev().copied().collect();
        while let Some(c) = stack.pop() {
            if let Some(n) = trace.node(c) {
                flat.push(JsonNode {
                    node: n,
                    children: Vec::new(),
                });
                stack.extend(n.children.iter().rev());
            }
        }
        flat
    };
    Some(JsonNode { node, children })
}

/// The tree as JSON: `{"run": …, "skipped_lines": n, "children": [node…]}`, each node with
/// its own `children`; strings cleaned as `--events` lines are.
pub fn json(trace: &Trace) -> String {
    let doc = JsonTrace {
        run: &trace.run,
        skipped_lines: trace.skipped_lines,
        children: trace
            .roots
            .iter()
            .filter_map(|&r| json_node(trace, r, 0))
            .collect(),
    };
    // Plain structs of strings and numbers: serialising cannot fail; say so if it ever did.
    let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot serialise the trace: {e}") }).to_string()
    });
    sanitize::json_line(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::super::tree::TraceBuilder;
    use super::super::tree::tests::{
        chain, dispatch_records, ev, finished, started, supervisor_and_member, t,
    };
    use super::*;
    use crate::engine::events::RunRecord;
    use crate::engine::protocol::team_talk::BROADCAST_TOOL;
    use crate::model::{ExecutionKind, ExecutionStatus};

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(3240), "3.2s");
        assert_eq!(duration(125_000), "2m05s");
        assert_eq!(duration(3_720_000), "1h02m");
    }

    #[test]
    fn the_text_tree_nests_nodes_and_items_with_branches() {
        let trace = TraceBuilder::from_records(&dispatch_records(true));
        let text = text(&trace);
        let expected = "\
Incidents · run run-1 · dispatch · completed · 9.0s · 360 tokens
  result: Root cause: pool
└── exec-1 lead (orchestrator) · ✓ completed 8.0s · 200 tok — Root cause: pool
    ├── exec-2 logs · ✓ completed 3.0s · 120 tok — DB pool exhausted
    │   ├── ✓ grep 12ms: found 3 errors
    │   └── exec-5 logs (clarification) · ✓ completed 1.0s · 10 tok — the orders pool
    ├── exec-3 metrics · ⊘ cancelled 4.0s · 30 tok
    └── exec-4 deploys · interrupted — task: List deploys
";
        assert_eq!(text, expected, "\n{text}");
    }

    #[test]
    fn untrusted_text_is_cleaned_and_cut_to_one_line() {
        let mut records = dispatch_records(false);
        records.push(RunRecord {
            at: t(7),
            event: ev(
                finished(
                    ExecutionStatus::Failed,
                    10,
                    0,
                    "\u{1b}]0;pwned\u{7}\u{1b}[31mred\u{1b}[0m answer\nsecond line",
                ),
                Some(("exec-5", Some("exec-2"))),
            ),
        });
        records.push(RunRecord {
            at: t(8),
            event: ev(
                started(ExecutionKind::SubAgent, "evil\u{1b}[2J\u{202e}", "x", false),
                Some(("exec-6", Some("exec-1"))),
            ),
        });
        let trace = TraceBuilder::from_records(&records);
        let text = text(&trace);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}'), "{text:?}");
        assert!(text.contains("· ✗ failed 10ms — red answer\n"), "{text}");
        assert!(!text.contains("second line"), "{text}");
        assert!(text.contains("exec-6 evil · interrupted"), "{text}");
        assert!(
            text.starts_with(
                "Incidents · run run-1 · dispatch · interrupted (no end recorded) · 150 tokens\n"
            ),
            "{text}"
        );
        let json = json(&trace);
        assert!(!json.contains("\\u001b") && !json.contains('\u{1b}'), "{json}");
    }

    #[test]
    fn json_nests_children_and_keeps_statuses() {
        let trace = TraceBuilder::from_records(&dispatch_records(true));
        let v: serde_json::Value = serde_json::from_str(&json(&trace)).unwrap();
        assert_eq!(v["run"]["mode"], "dispatch");
        assert_eq!(v["run"]["state"], "ended");
        assert_eq!(v["run"]["outcome"], "completed");
        assert_eq!(v["run"]["tokens"], 360);
        let orchestrator = &v["children"][0];
        assert_eq!(orchestrator["id"], "exec-1");
        assert_eq!(orchestrator["kind"], "orchestrator");
        let subs = orchestrator["children"].as_array().unwrap();
        let ids: Vec<&str> = subs.iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["exec-2", "exec-3", "exec-4"]);
        assert_eq!(subs[0]["children"][0]["kind"], "clarification");
        assert_eq!(subs[0]["items"][0]["item"], "tool_call");
        assert_eq!(subs[0]["items"][0]["ok"], true);
        assert_eq!(subs[1]["status"], "cancelled");
        assert_eq!(subs[2]["status"], "interrupted");
        assert_eq!(subs[2]["queued"], true);
        assert_eq!(subs[0]["parent"], "exec-1");
    }

    #[test]
    fn a_very_deep_chain_prints_without_overflowing() {
        let mut b = TraceBuilder::new();
        for (at, event) in chain(1..=5000) {
            b.apply(&event, t(at));
        }
        let trace = b.finish();
        let v: serde_json::Value = serde_json::from_str(&json(&trace)).unwrap();
        let mut node = &v["children"][0];
        let mut depth = 1;
        while let Some(c) = node["children"].as_array().filter(|c| c.len() == 1) {
            node = &c[0];
            depth += 1;
        }
        assert_eq!(depth, JSON_DEPTH_MAX);
        assert_eq!(node["children"].as_array().unwrap().len(), 5000 - JSON_DEPTH_MAX);
        let text = text(&trace);
        assert_eq!(text.lines().count(), 5001);
        assert!(
            text.lines().all(|l| l.chars().count() < 4 * TEXT_DEPTH_MAX + 60),
            "indentation is capped"
        );
    }

    #[test]
    fn a_broadcast_shows_once_and_a_failed_broadcast_call_shows() {
        use crate::engine::events::EventKind;
        use crate::model::BroadcastKind;
        let member = Some(("exec-2", Some("exec-1")));
        let call = |id: &str| EventKind::ToolCall {
            session_id: "sid-a".into(),
            session: "a".into(),
            generation: 1,
            call_id: id.into(),
            name: BROADCAST_TOOL.into(),
            arguments: "{}".into(),
            step: None,
        };
        let result = |id: &str, ok: bool| EventKind::ToolResult {
            session_id: "sid-a".into(),
            session: "a".into(),
            generation: 1,
            call_id: id.into(),
            name: BROADCAST_TOOL.into(),
            ok,
            duration_ms: 0,
            size: 1,
            first_line: if ok { "Broadcast sent" } else { "message is empty" }.into(),
            message: None,
        };
        let mut b = supervisor_and_member();
        b.apply(&ev(call("c1"), member), t(1));
        b.apply(&ev(result("c1", false), member), t(1));
        b.apply(&ev(call("c2"), member), t(2));
        b.apply(&ev(result("c2", true), member), t(2));
        let broadcast = EventKind::TeamBroadcast {
            from: "a".into(),
            from_id: "sid-a".into(),
            kind: BroadcastKind::Update,
            message: "found it\nmore".into(),
            turn: 1,
            last: true,
            supervisor: false,
            sent_at: t(2),
        };
        b.apply(&ev(broadcast, member), t(2));
        let text = text(&b.into_trace());
        assert!(
            text.contains("        ├── ✗ team_broadcast 0ms: message is empty\n"),
            "{text}"
        );
        assert!(
            text.contains("        └── 📣 a (turn 1, update, final): found it\n"),
            "{text}"
        );
        assert!(!text.contains("Broadcast sent"), "{text}");
    }

    #[test]
    fn an_empty_run_says_so() {
        let trace = TraceBuilder::from_records(&dispatch_records(true)[..2]);
        assert!(
            text(&trace).ends_with("(no executions or member turns recorded)\n"),
            "{}",
            text(&trace)
        );
    }
}
