//! Mode `flow` end to end over real HTTP: handoffs, routers (tool and text form), advisors
//! (success, failure, timeout), their compositions and the token roll-up.

use std::time::Duration;

use huddle::attachments::Attachment;
use huddle::engine::events::{EngineEvent, EventKind, HopKind};
use huddle::engine::{EngineError, RunOverrides};
use huddle::model::{CycleOutcome, FlowLinks, Memory, Mode, RouterSpec, RunBudget};

use super::engine_fixture::{Fixture, team};
use super::fake_llm_server::Reply;

/// A flow team of `members` (sessions `t-<name>` on models `w-<name>`) entered at `entry`,
/// with `links` given by member name.
async fn flow(members: &[&str], entry: &str, links: &[(&str, FlowLinks)]) -> Fixture {
    let f = team(Mode::Flow, members, false, 1).await;
    let id = |name: &str| f.session_id(&format!("t-{name}"));
    let entry_id = id(entry);
    let links: Vec<(String, FlowLinks)> = links
        .iter()
        .map(|(name, l)| {
            let by_id = FlowLinks {
                handoff: l.handoff.as_deref().map(id),
                router: l.router.as_ref().map(|r| RouterSpec {
                    destinations: r.destinations.iter().map(|d| id(d)).collect(),
                }),
                advisors: l.advisors.iter().map(|a| id(a)).collect(),
            };
            (id(name), by_id)
        })
        .collect();
    f.org.update(|o| {
        o.group_mut(&f.group_id).unwrap().settings.flow.entry = Some(entry_id);
        for (sid, l) in links {
            o.session_mut(&sid).unwrap().flow = l;
        }
    });
    f
}

fn handoff(to: &str) -> FlowLinks {
    FlowLinks {
        handoff: Some(to.into()),
        ..FlowLinks::default()
    }
}

fn router(to: &[&str]) -> FlowLinks {
    FlowLinks {
        router: Some(RouterSpec {
            destinations: to.iter().map(|s| s.to_string()).collect(),
        }),
        ..FlowLinks::default()
    }
}

fn advisors(of: &[&str]) -> FlowLinks {
    FlowLinks {
        advisors: of.iter().map(|s| s.to_string()).collect(),
        ..FlowLinks::default()
    }
}

/// `(from, to, kind, success)` of every hop, in order.
fn hops(events: &[EngineEvent]) -> Vec<(String, Option<String>, HopKind, bool)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FlowHop {
                from,
                to,
                kind,
                success,
                ..
            } => Some((from.clone(), to.clone(), *kind, *success)),
            _ => None,
        })
        .collect()
}

fn hop(from: &str, to: Option<&str>, kind: HopKind) -> (String, Option<String>, HopKind, bool) {
    (from.into(), to.map(str::to_string), kind, true)
}

#[tokio::test]
async fn a_handoff_passes_the_answer_body_alone_and_the_last_member_owns_the_answer() {
    let mut f = flow(&["a", "b"], "a", &[("a", handoff("b"))]).await;
    f.server.script("w-a", vec![Reply::text("  A BODY\n")]);
    f.server.script("w-b", vec![Reply::text("B FINAL")]);
    let report = f.run("Start here").await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert!(report.failed.is_none());
    assert_eq!(report.final_text, "B FINAL");
    assert_eq!(f.prompts("w-a"), ["Start here"]);
    assert_eq!(f.prompts("w-b"), ["A BODY"], "no headers, only the answer");
    let events = f.drain();
    assert_eq!(
        hops(&events),
        [
            hop("a", Some("b"), HopKind::Handoff),
            hop("b", None, HopKind::Answer)
        ]
    );
    assert!(
        events
            .iter()
            .any(|e| e.to_ndjson().contains("\"event\":\"flow_hop\"")),
        "hops are in NDJSON"
    );
}

#[tokio::test]
async fn a_handoff_chain_runs_to_its_end() {
    let f = flow(&["a", "b", "c"], "a", &[("a", handoff("b")), ("b", handoff("c"))]).await;
    f.server.script("w-a", vec![Reply::text("one")]);
    f.server.script("w-b", vec![Reply::text("two")]);
    f.server.script("w-c", vec![Reply::text("three")]);
    let report = f.run("go").await;
    assert_eq!(report.final_text, "three");
    assert_eq!(f.prompts("w-b"), ["one"]);
    assert_eq!(f.prompts("w-c"), ["two"]);
}

#[tokio::test]
async fn a_cycle_or_a_missing_entry_is_refused_before_anything_runs() {
    let f = flow(&["a", "b"], "a", &[("a", handoff("b")), ("b", handoff("a"))]).await;
    let err = f
        .engine
        .run_group(&f.group_id, "go".into(), Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::NotRunnable { .. }), "{err}");
    assert!(err.to_string().contains("t-a → t-b → t-a is a cycle"), "{err}");
    assert!(f.server.requests().is_empty());
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().settings.flow.entry = None);
    let err = f
        .engine
        .run_group(&f.group_id, "go".into(), Default::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("entry"), "{err}");
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().settings.flow.entry = Some("gone-id".into()));
    let err = f
        .engine
        .run_group(&f.group_id, "go".into(), Default::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("(removed session gone-id)"), "{err}");
}

#[tokio::test]
async fn a_router_calls_handoff_to_and_the_destination_gets_the_request_and_the_message() {
    let mut f = flow(&["r", "x", "y"], "r", &[("r", router(&["x", "y"]))]).await;
    f.server.script(
        "w-r",
        vec![Reply::tool_call(
            "c1",
            "handoff_to",
            r#"{"agent":"y","message":"Check the disk first."}"#,
        )],
    );
    f.server.script("w-y", vec![Reply::text("Y ANSWER")]);
    let report = f.run("My disk is full").await;
    assert_eq!(report.final_text, "Y ANSWER");
    let sent = &f.server.requests_for("w-r")[0];
    assert!(sent.tool_names().contains(&"handoff_to".to_string()));
    let schema = sent.json()["tools"][0]["function"]["parameters"]["properties"]["agent"]["enum"].clone();
    assert_eq!(
        schema,
        serde_json::json!(["x", "y"]),
        "agent is an enum of the destinations"
    );
    assert_eq!(
        f.server.requests_for("w-r").len(),
        1,
        "the call ends the router's turn"
    );
    assert_eq!(
        f.prompts("w-y"),
        [
            "## ORIGINAL USER REQUEST\n\nMy disk is full\n\n## MESSAGE FROM AGENT `r` WHO ROUTED THIS REQUEST TO YOU\n\nCheck the disk first.\n"
        ]
    );
    assert!(f.prompts("w-x").is_empty());
    let events = f.drain();
    assert_eq!(
        hops(&events),
        [
            hop("r", Some("y"), HopKind::Route),
            hop("y", None, HopKind::Answer)
        ]
    );
    let message = events.iter().find_map(|e| match &e.kind {
        EventKind::FlowHop { message, .. } => message.clone(),
        _ => None,
    });
    assert_eq!(message.as_deref(), Some("Check the disk first."));
    // The router's call is answered, and its answer says where the request went.
    let said = |name: &str| {
        events.iter().find_map(|e| match &e.kind {
            EventKind::Message { session, text, .. } if &**session == name => Some(text.clone()),
            _ => None,
        })
    };
    assert_eq!(
        said("t-r").as_deref(),
        Some("[handed off to `y`: Check the disk first.]")
    );
    let result = events.iter().find_map(|e| match &e.kind {
        EventKind::ToolResult {
            name, ok, first_line, ..
        } if name == "handoff_to" => Some((*ok, first_line.clone())),
        _ => None,
    });
    assert_eq!(result, Some((true, "Handed off.".to_string())));
}

#[tokio::test]
async fn a_router_that_answers_itself_owns_the_answer() {
    let f = flow(&["r", "x"], "r", &[("r", router(&["x"]))]).await;
    f.server
        .script("w-r", vec![Reply::text("Hello! Nothing to route.")]);
    let report = f.run("hi").await;
    assert_eq!(report.final_text, "Hello! Nothing to route.");
    assert!(f.prompts("w-x").is_empty());
}

#[tokio::test]
async fn an_invalid_destination_is_a_tool_error_and_the_router_retries() {
    let f = flow(&["r", "x"], "r", &[("r", router(&["x"]))]).await;
    f.server.script(
        "w-r",
        vec![
            Reply::tool_call("c1", "handoff_to", r#"{"agent":"legal"}"#),
            Reply::tool_call("c2", "handoff_to", r#"{"agent":"x"}"#),
        ],
    );
    f.server.script("w-x", vec![Reply::text("X ANSWER")]);
    let report = f.run("question").await;
    assert_eq!(report.final_text, "X ANSWER");
    let second = &f.server.requests_for("w-r")[1];
    let results = second.tool_results();
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .content
            .contains("`legal` is not a destination; choose one of: x"),
        "{:?}",
        results[0]
    );
    assert_eq!(
        f.prompts("w-x"),
        ["## ORIGINAL USER REQUEST\n\nquestion\n"],
        "no message, no section"
    );
}

#[tokio::test]
async fn the_text_form_routes_with_a_handoff_line_and_its_message() {
    let mut f = flow(&["r", "x", "y"], "r", &[("r", router(&["x", "y"]))]).await;
    f.server.script(
        "w-r",
        vec![
            Reply::text("Not mine.\n@handoff:nobody\n"),
            Reply::text("Sorry.\n@handoff:X\nThe user is in a hurry."),
        ],
    );
    f.server.script("w-x", vec![Reply::text("X DONE")]);
    let report = f.run("urgent thing").await;
    assert_eq!(report.final_text, "X DONE");
    // How to route is in the router's system prompt; its message is the request.
    assert!(
        f.sent("w-r")[0].contains("@handoff:<agent>"),
        "the router is told the text form"
    );
    assert_eq!(f.prompts("w-r")[0], "urgent thing");
    assert!(
        f.prompts("w-r")[1].contains("`nobody` is not a destination"),
        "{:?}",
        f.prompts("w-r")
    );
    let x = &f.prompts("w-x")[0];
    assert!(
        x.contains("urgent thing") && x.contains("The user is in a hurry."),
        "{x}"
    );
    assert_eq!(
        hops(&f.drain()),
        [
            ("r".to_string(), None, HopKind::Route, false),
            hop("r", Some("x"), HopKind::Route),
            hop("x", None, HopKind::Answer),
        ],
        "the miss is a failed hop, then the route"
    );
}

#[tokio::test]
async fn advisors_run_in_parallel_and_their_reports_reach_the_member_raw() {
    let mut f = flow(&["m", "a1", "a2"], "m", &[("m", advisors(&["a1", "a2"]))]).await;
    f.server.script("w-a1", vec![Reply::text("risk: low")]);
    f.server.script("w-a2", vec![Reply::text("cost: high")]);
    f.server.script("w-m", vec![Reply::text("DECISION")]);
    let report = f.run("Should we ship?").await;
    assert_eq!(report.final_text, "DECISION");
    assert_eq!(f.prompts("w-a1"), ["Should we ship?"]);
    assert_eq!(f.prompts("w-a2"), ["Should we ship?"]);
    assert_eq!(
        f.prompts("w-m"),
        [
            "## ORIGINAL USER REQUEST\n\nShould we ship?\n\n## ANALYSIS GATHERED\n\n### From a1\n\nrisk: low\n\n### From a2\n\ncost: high\n"
        ]
    );
    let events = f.drain();
    let advisor_hops: Vec<_> = hops(&events)
        .into_iter()
        .filter(|h| h.2 == HopKind::Advisor)
        .collect();
    assert_eq!(advisor_hops.len(), 2);
    assert!(advisor_hops.iter().all(|h| h.1.as_deref() == Some("m") && h.3));
}

#[tokio::test]
async fn a_failed_advisor_leaves_a_failure_report_and_is_not_retried() {
    let f = flow(&["m", "a1", "a2"], "m", &[("m", advisors(&["a1", "a2"]))]).await;
    f.server.script("w-a1", vec![Reply::text("risk: low")]);
    f.server.script("w-a2", vec![Reply::status(500)]);
    f.server.script("w-m", vec![Reply::text("DECISION")]);
    let report = f.run("Ship?").await;
    assert_eq!(report.final_text, "DECISION");
    assert!(report.failed.is_none());
    assert_eq!(f.server.requests_for("w-a2").len(), 1, "no retry");
    let m = &f.prompts("w-m")[0];
    assert!(m.contains("### From a1\n\nrisk: low"), "{m}");
    assert!(m.contains("### From a2\n\n[advisor `a2` failed:"), "{m}");
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_advisor_is_reported_as_failed_and_the_member_goes_on() {
    let mut f = flow(&["m", "a1", "slow"], "m", &[("m", advisors(&["a1", "slow"]))]).await;
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().worker_timeout_secs = 5);
    f.server.script("w-a1", vec![Reply::text("fine")]);
    f.server.script(
        "w-slow",
        vec![Reply::chunks(["never ", "finishes"]).chunk_delay(Duration::from_secs(3600))],
    );
    f.server.script("w-m", vec![Reply::text("DECISION")]);
    let report = f.run("Ship?").await;
    assert_eq!(report.final_text, "DECISION");
    let m = &f.prompts("w-m")[0];
    assert!(m.contains("[advisor `slow` failed: timed out after 5s"), "{m}");
    let failed: Vec<_> = hops(&f.drain()).into_iter().filter(|h| !h.3).collect();
    assert_eq!(
        failed,
        [("slow".to_string(), Some("m".to_string()), HopKind::Advisor, false)]
    );
}

#[tokio::test]
async fn a_router_to_a_member_with_advisors_and_a_handoff_composes_and_rolls_up_tokens() {
    let mut f = flow(
        &["r", "billing", "eng", "sec", "approver"],
        "r",
        &[
            ("r", router(&["billing", "eng"])),
            (
                "eng",
                FlowLinks {
                    handoff: Some("approver".into()),
                    ..advisors(&["sec"])
                },
            ),
        ],
    )
    .await;
    f.server.script(
        "w-r",
        vec![Reply::tool_call("c1", "handoff_to", r#"{"agent":"eng","message":"bug"}"#).usage(10, 1)],
    );
    f.server
        .script("w-sec", vec![Reply::text("no secrets involved").usage(20, 2)]);
    f.server
        .script("w-eng", vec![Reply::text("FIX: restart").usage(30, 3)]);
    f.server
        .script("w-approver", vec![Reply::text("APPROVED: restart").usage(40, 4)]);
    let report = f.run("500 errors").await;
    assert_eq!(report.final_text, "APPROVED: restart");
    let sec = &f.prompts("w-sec")[0];
    assert!(
        sec.starts_with("## ORIGINAL USER REQUEST\n\n500 errors"),
        "advisors see the routed input: {sec}"
    );
    let eng = &f.prompts("w-eng")[0];
    assert!(
        eng.contains("## ANALYSIS GATHERED") && eng.contains("no secrets involved"),
        "{eng}"
    );
    assert!(eng.contains("MESSAGE FROM AGENT `r`"), "{eng}");
    assert_eq!(f.prompts("w-approver"), ["FIX: restart"]);
    assert_eq!(report.usage.input_tokens, 100);
    assert_eq!(report.usage.output_tokens, 10);
    let events = f.drain();
    assert_eq!(
        hops(&events),
        [
            hop("r", Some("eng"), HopKind::Route),
            hop("sec", Some("eng"), HopKind::Advisor),
            hop("eng", Some("approver"), HopKind::Handoff),
            hop("approver", None, HopKind::Answer),
        ]
    );
    let tokens: u64 = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FlowHop { tokens, .. } => Some(*tokens),
            _ => None,
        })
        .sum();
    assert_eq!(tokens, 110, "every hop's tokens, and nothing twice");
}

#[tokio::test]
async fn a_failing_member_fails_the_run_with_its_error() {
    let f = flow(&["a", "b"], "a", &[("a", handoff("b"))]).await;
    f.server.script("w-a", vec![Reply::status(400)]);
    let report = f.run("go").await;
    assert!(report.failed.is_some(), "{report:?}");
    assert!(f.prompts("w-b").is_empty(), "nothing is handed on");
}

#[tokio::test]
async fn a_router_on_the_anthropic_api_gets_the_tool_and_its_error_too() {
    let f = flow(&["r", "x"], "r", &[("r", router(&["x"]))]).await;
    let router_id = f.session_id("t-r");
    f.org
        .update(|o| o.session_mut(&router_id).unwrap().model = "anthropic/w-r".into());
    f.server.script(
        "w-r",
        vec![
            Reply::tool_call("toolu_1", "handoff_to", r#"{"agent":"nobody"}"#),
            Reply::tool_call(
                "toolu_2",
                "handoff_to",
                r#"{"agent":"x","message":"over to you"}"#,
            ),
        ],
    );
    f.server.script("w-x", vec![Reply::text("X ANSWER")]);
    let report = f.run("question").await;
    assert_eq!(report.final_text, "X ANSWER");
    let requests = f.server.requests_for("w-r");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].json()["tools"][0]["name"], "handoff_to");
    assert!(
        requests[1].tool_results()[0]
            .content
            .contains("`nobody` is not a destination")
    );
    assert!(f.prompts("w-x")[0].contains("over to you"));
}

#[tokio::test]
async fn stopping_a_flow_cancels_it_and_hands_nothing_on() {
    let f = flow(&["a", "b"], "a", &[("a", handoff("b"))]).await;
    f.server.script(
        "w-a",
        vec![Reply::chunks(["partial ", "answer"]).chunk_delay(Duration::from_secs(3600))],
    );
    let run = f.spawn_run("go");
    f.wait_for_requests("w-a", 1).await;
    assert!(
        f.engine
            .stop(&huddle::engine::events::RunKey::team(f.group_id.clone()))
    );
    let report = tokio::time::timeout(super::engine_fixture::HANG_GUARD, run)
        .await
        .expect("the stopped run ends")
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert!(report.failed.is_none(), "a stop is not a failure");
    assert!(f.prompts("w-b").is_empty());
}

#[tokio::test]
async fn a_flow_over_its_token_budget_ends_exhausted_and_hands_nothing_on() {
    let f = flow(&["a", "b"], "a", &[("a", handoff("b"))]).await;
    f.org.update(|o| {
        o.group_mut(&f.group_id).unwrap().budget = RunBudget {
            max_duration_secs: None,
            token_budget: Some(50),
            max_cost_usd: None,
        }
    });
    f.server.script("w-a", vec![Reply::text("A BODY").usage(60, 0)]);
    f.server.script("w-b", vec![Reply::text("B FINAL")]);
    let report = f.run("go").await;
    assert_eq!(report.outcome, CycleOutcome::BudgetExhausted);
    assert!(report.failed.is_none(), "a spent budget is not a failure");
    assert!(report.summary.contains("budget of 50"), "{}", report.summary);
    assert!(
        f.server.requests_for("w-b").is_empty(),
        "the next member is not asked once the budget is spent"
    );
}

#[tokio::test]
async fn every_member_of_a_flow_gets_the_runs_attachment() {
    let f = flow(&["a", "b"], "a", &[("a", handoff("b"))]).await;
    f.server.script("w-a", vec![Reply::text("A BODY")]);
    f.server.script("w-b", vec![Reply::text("B FINAL")]);
    let overrides = RunOverrides {
        attachments: vec![Attachment::new(
            "src/lib.rs",
            "pub fn ATTACHED_MARKER() {}\n".into(),
        )],
        ..RunOverrides::default()
    };
    let report = f
        .engine
        .run_group(&f.group_id, "review".into(), overrides)
        .await
        .expect("the run");
    assert_eq!(report.final_text, "B FINAL");
    for model in ["w-a", "w-b"] {
        let prompts = f.prompts(model);
        assert!(prompts[0].contains("ATTACHED_MARKER"), "{model}: {}", prompts[0]);
    }
}

/// Messages of the entry member's request in the second of two runs, per team `memory`.
async fn second_flow_request_messages(memory: Memory) -> usize {
    let f = flow(&["a"], "a", &[]).await;
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().memory = memory);
    f.server.script(
        "w-a",
        vec![Reply::text("first answer"), Reply::text("second answer")],
    );
    f.run("first question").await;
    f.run("second question").await;
    let requests = f.server.requests_for("w-a");
    assert_eq!(requests.len(), 2);
    requests[1].messages().len()
}

#[tokio::test]
async fn a_flow_member_remembers_earlier_runs_only_with_memory_conversation() {
    // OpenAI's shape: the system prompt, then the conversation.
    assert_eq!(second_flow_request_messages(Memory::Run).await, 2);
    assert_eq!(second_flow_request_messages(Memory::Conversation).await, 4);
}
