//! Relays end to end over real HTTP (issue 14): a driver drafts, a counterpart answers, drafts
//! approved as the approval mode says; limits, pause / resume / stop, failures, hops, audit.

use std::path::Path;
use std::time::Duration;

use huddle::config::Config;
use huddle::engine::events::{EngineEvent, EventKind, RunKey};
use huddle::engine::{Engine, EngineError, EngineOptions, EventSink, RunOverrides};
use huddle::model::relay::ReviewRules;
use huddle::model::{
    ApprovalMode, CycleOutcome, DraftAnswer, Group, GroupKind, Mode, RelayPhase, RelaySettings, Role, SentAs,
    Session,
};

use super::engine_fixture::{Fixture, HANG_GUARD, fast_providers, team};
use super::fake_llm_server::Reply;

const ME: &str = "w-me";
const THEM: &str = "w-them";
const KEY: &str = "sk-live-abcdefghijklmnop1234";

/// A relay team `t`: driver `t-me` (model `w-me`), counterpart `t-them` (model `w-them`).
async fn relay(configure: impl FnOnce(&mut RelaySettings)) -> Fixture {
    let f = team(Mode::Relay, &["me", "them"], false, 1).await;
    let mut settings = RelaySettings::new("me", "them");
    settings.approval = ApprovalMode::FullAuto;
    configure(&mut settings);
    let gid = f.group_id.clone();
    f.org
        .update(|o| o.group_mut(&gid).expect("group").settings.relay = Some(settings));
    f
}

fn sent(events: &[EngineEvent]) -> Vec<(SentAs, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::RelaySent { sent_as, text, .. } => Some((*sent_as, text.clone())),
            _ => None,
        })
        .collect()
}

fn final_state(events: &[EngineEvent]) -> Option<(RelayPhase, String)> {
    events.iter().rev().find_map(|e| match &e.kind {
        EventKind::RelayState { state, reason, .. } if state.is_final() => {
            Some((*state, reason.clone().unwrap_or_default()))
        }
        _ => None,
    })
}

fn audits(events: &[EngineEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RelayAudit { .. }))
        .map(EngineEvent::to_ndjson)
        .collect()
}

async fn answer(f: &Fixture, a: DraftAnswer) {
    // The relay installs its waiter before it announces the draft; this only rides out the
    // hand-over of the event.
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while !f.engine.answer_relay(&f.group_id, a.clone()) {
        assert!(tokio::time::Instant::now() < deadline, "the relay never waited");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Waits for the next draft waiting for the user; the events until then go to `seen`.
async fn next_draft(f: &mut Fixture, seen: &mut Vec<EngineEvent>) -> (String, Option<String>) {
    let events = f
        .events_until("a waiting draft", |e| {
            matches!(e.kind, EventKind::RelayDraft { waiting: true, .. })
        })
        .await;
    let draft = match &events.last().expect("the draft").kind {
        EventKind::RelayDraft { text, review, .. } => (text.clone(), review.clone()),
        _ => unreachable!(),
    };
    seen.extend(events);
    draft
}

#[tokio::test]
async fn full_auto_runs_until_the_driver_completes() {
    let mut f = relay(|_| {}).await;
    f.server.script(
        ME,
        vec![
            Reply::text("Offer 400"),
            Reply::text("Offer 420"),
            Reply::text("We agreed on 450.\n[[RELAY_COMPLETE]]"),
        ],
    );
    f.server.script(
        THEM,
        vec![Reply::text("No, 500"), Reply::text("450 and it is yours")],
    );
    let report = f.run("Buy the bike for at most 450").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert!(report.failed.is_none());
    assert_eq!(report.iterations, 2);
    assert_eq!(report.final_text, "We agreed on 450.");
    assert_eq!(
        f.prompts(THEM),
        vec!["Offer 400".to_string(), "Offer 420".to_string()]
    );
    let driver = f.prompts(ME);
    assert!(
        driver[0].contains("## Relay objective\nBuy the bike for at most 450"),
        "{}",
        driver[0]
    );
    assert!(
        driver[1].contains("## Latest counterpart message\nNo, 500"),
        "{}",
        driver[1]
    );
    assert!(driver[2].contains("450 and it is yours"), "{}", driver[2]);
    // Each driver turn is fresh: the history is in the prompt, not re-sent as messages.
    let messages = f.server.requests_for(ME)[2].messages();
    assert_eq!(
        messages.iter().filter(|m| m["role"] == "user").count(),
        1,
        "{messages:?}"
    );
    let events = f.drain();
    assert!(sent(&events).iter().all(|(how, _)| *how == SentAs::AutoSent));
    let run_id = events.iter().find_map(|e| e.run_id.clone()).expect("run id");
    for e in &events {
        if let EventKind::RelaySent { trace_id, hop, .. } = &e.kind {
            assert_eq!((trace_id.as_str(), *hop), (&*run_id, 1));
        }
    }
    assert_eq!(final_state(&events).map(|s| s.0), Some(RelayPhase::Completed));
    assert_eq!(audits(&events).len(), 2);
    // The state is kept with the group (shown after a restart).
    let saved = f
        .org
        .read(|o| o.group(&f.group_id).and_then(|g| g.state.relay.clone()))
        .expect("relay state saved");
    assert_eq!((saved.state, saved.turn), (RelayPhase::Completed, 2));
    // The relayed message carries its metadata on the stored message, not in its text.
    let them = f.session_id("t-them");
    let stored = f.engine.load_transcript(&them).expect("transcript").messages;
    let first = stored.iter().find(|m| m.text == "Offer 400").expect("stored");
    let meta = first.relay.as_ref().expect("relay metadata");
    assert_eq!((meta.trace_id.as_str(), meta.hop, meta.turn), (&*run_id, 1, 1));
}

#[tokio::test]
async fn max_turns_stops_the_relay_and_says_so() {
    let mut f = relay(|s| s.max_turns = 2).await;
    f.server.set_default(Reply::text("and more"));
    let report = f.run("Talk forever").await;
    assert_eq!(report.outcome, CycleOutcome::MaxIterations);
    assert_eq!(f.server.requests_for(THEM).len(), 2);
    let (state, reason) = final_state(&f.drain()).expect("final state");
    assert_eq!(state, RelayPhase::Stopped);
    assert!(reason.contains("max_turns (2)"), "{reason}");
    assert!(report.summary.contains("max_turns (2)"), "{}", report.summary);
}

#[tokio::test]
async fn semi_auto_holds_a_draft_with_a_secret_and_a_rejection_redrafts() {
    let mut f = relay(|s| {
        s.approval = ApprovalMode::SemiAuto;
        s.review = ReviewRules {
            patterns: vec![r"(?i)\bwe accept\b".into()],
            max_length: None,
        };
    })
    .await;
    f.server.script(
        ME,
        vec![
            Reply::text(&format!("Use my key {KEY} to log in")),
            Reply::text("A clean offer"),
            Reply::text("We accept"),
            Reply::text("done\n[[RELAY_COMPLETE]]"),
        ],
    );
    f.server.script(
        THEM,
        vec![
            Reply::text("ok"),
            // A server that echoes a key in its error: the audit must not carry it.
            Reply::status(400).body(&format!(r#"{{"error":{{"message":"bad key {KEY}"}}}}"#)),
        ],
    );
    let mut seen = Vec::new();
    let run = f.spawn_run("Get access");
    let (text, review) = next_draft(&mut f, &mut seen).await;
    assert!(text.contains(KEY));
    assert!(review.unwrap_or_default().contains("API key"));
    assert!(f.server.requests_for(THEM).is_empty(), "a held draft is not sent");
    answer(&f, DraftAnswer::Reject("never send keys".into())).await;
    // The clean one goes out unasked; the commitment waits.
    let (text, review) = next_draft(&mut f, &mut seen).await;
    assert_eq!(text, "We accept");
    assert!(review.unwrap_or_default().contains("review pattern"));
    answer(&f, DraftAnswer::Approve).await;
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("ends")
        .expect("joins");
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert!(f.prompts(ME)[1].contains("## The user rejected your last draft\nnever send keys"));
    assert_eq!(
        f.prompts(THEM),
        vec!["A clean offer".to_string(), "We accept".to_string()]
    );
    let mut events = seen;
    events.extend(f.drain());
    let how: Vec<SentAs> = sent(&events).into_iter().map(|(h, _)| h).collect();
    assert_eq!(how, vec![SentAs::AutoSent, SentAs::Approved]);
    let lines = audits(&events);
    assert!(lines.len() >= 3, "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains(r#""status":"rejected""#)),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("[redacted]")), "{lines:?}");
    for line in &lines {
        assert!(!line.contains(KEY), "{line}");
        assert!(
            !line.contains("clean offer"),
            "no message text in the audit: {line}"
        );
    }
}

#[tokio::test]
async fn manual_approve_edit_take_over_and_hand_back() {
    let mut f = relay(|s| s.approval = ApprovalMode::Manual).await;
    f.server.script(
        ME,
        vec![
            Reply::text("draft one"),
            Reply::text("draft two"),
            Reply::text("draft three"),
            Reply::text("draft four"),
            Reply::text("all done\n[[RELAY_COMPLETE]]"),
        ],
    );
    f.server.set_default(Reply::text("noted"));
    let mut seen = Vec::new();
    let run = f.spawn_run("Sort it out");
    assert_eq!(next_draft(&mut f, &mut seen).await.0, "draft one");
    answer(&f, DraftAnswer::Approve).await;
    assert_eq!(next_draft(&mut f, &mut seen).await.0, "draft two");
    answer(&f, DraftAnswer::Edit("draft two, edited".into())).await;
    assert_eq!(next_draft(&mut f, &mut seen).await.0, "draft three");
    answer(&f, DraftAnswer::TakeOver).await;
    answer(&f, DraftAnswer::Yours("my own words".into())).await;
    answer(&f, DraftAnswer::HandBack).await;
    assert_eq!(next_draft(&mut f, &mut seen).await.0, "draft four");
    answer(&f, DraftAnswer::Approve).await;
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("ends")
        .expect("joins");
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    let mut events = seen;
    events.extend(f.drain());
    assert_eq!(
        sent(&events),
        vec![
            (SentAs::Approved, "draft one".to_string()),
            (SentAs::Edited, "draft two, edited".to_string()),
            (SentAs::Yours, "my own words".to_string()),
            (SentAs::Approved, "draft four".to_string()),
        ]
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::RelayTakeOver { active: true, .. }))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::RelayTakeOver { active: false, .. }))
    );
}

#[tokio::test]
async fn consecutive_failures_end_the_relay_in_error() {
    let mut f = relay(|s| s.max_failures = 3).await;
    f.server.set_default(Reply::text("try this"));
    f.server.script(
        THEM,
        vec![Reply::status(500), Reply::status(500), Reply::status(500)],
    );
    let report = f.run("Reach them").await;
    assert_eq!(report.outcome, CycleOutcome::ErrorBudget);
    assert_eq!(f.server.requests_for(THEM).len(), 3);
    let (state, reason) = final_state(&f.drain()).expect("final state");
    assert_eq!(state, RelayPhase::Error);
    assert!(reason.contains("max_failures (3"), "{reason}");
}

#[tokio::test]
async fn pause_holds_the_next_send_resume_continues_stop_keeps_everything() {
    let mut f = relay(|s| s.approval = ApprovalMode::Manual).await;
    f.server.set_default(Reply::text("a message"));
    let mut seen = Vec::new();
    let run = f.spawn_run("Slowly");
    next_draft(&mut f, &mut seen).await;
    let key = RunKey::team(f.group_id.clone());
    assert!(f.engine.pause(&key));
    // The pause shows at once, while the draft waits.
    f.events_until("the pause", |e| {
        matches!(
            e.kind,
            EventKind::RelayState {
                state: RelayPhase::Paused,
                ..
            }
        )
    })
    .await;
    answer(&f, DraftAnswer::Approve).await;
    // Time for a wrong send to happen (this decides nothing by itself: the assert below does).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        f.server.requests_for(THEM).is_empty(),
        "nothing is sent while paused"
    );
    assert!(f.engine.resume(&key));
    f.events_until("the send", |e| matches!(e.kind, EventKind::RelayReply { .. }))
        .await;
    next_draft(&mut f, &mut seen).await;
    assert!(f.engine.stop(&key));
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("ends")
        .expect("joins");
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert_eq!(report.iterations, 1);
    let (state, reason) = final_state(&f.drain()).expect("final state");
    assert_eq!((state, reason.as_str()), (RelayPhase::Stopped, "stopped by you"));
    let them = f.session_id("t-them");
    let kept = f.engine.load_transcript(&them).expect("transcript").messages;
    assert_eq!(kept.len(), 2, "the exchange is kept: {kept:?}");
}

/// The default 600 s budget of a relay, on tokio's paused clock against a slow counterpart.
#[tokio::test(start_paused = true)]
async fn a_slow_counterpart_runs_into_the_relays_time_limit() {
    let mut f = relay(|_| {}).await;
    f.org.update(|o| {
        for s in &mut o.sessions {
            s.model = if s.name == "t-them" {
                "sim/slow-900s".into()
            } else {
                "sim/default".into()
            };
        }
    });
    let started = tokio::time::Instant::now();
    let report = f.run("Wait for them").await;
    assert_eq!(report.outcome, CycleOutcome::BudgetExhausted);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(600) && took < Duration::from_secs(700),
        "{took:?}"
    );
    let (state, reason) = final_state(&f.drain()).expect("final state");
    assert_eq!(state, RelayPhase::Stopped);
    assert!(reason.contains("time limit of 600s"), "{reason}");
}

#[tokio::test]
async fn a_driver_killed_mid_turn_ends_in_error_with_the_reason() {
    let mut f = relay(|s| s.max_failures = 1).await;
    let dir = tempfile::tempdir().expect("dir");
    let script = dir.path().join("agent.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > /dev/null\nprintf 'half a dra'\nkill -9 $$\n",
    )
    .expect("script");
    let config = Config::parse(
        &format!(
            "providers:\n  - {{ name: openai, kind: openai, base_url: \"{}\" }}\n  - {{ name: agent, kind: command, command: [\"sh\", \"{}\"] }}\n",
            f.server.openai_base(),
            script.display()
        ),
        Path::new("test-config.yaml"),
    )
    .expect("config");
    let (sink, events) = EventSink::channel();
    f.engine = Engine::new(
        fast_providers(&config),
        f.org.clone(),
        f.transcripts.clone(),
        sink,
        EngineOptions::default(),
    );
    f.events = events;
    f.org.update(|o| {
        if let Some(s) = o.sessions.iter_mut().find(|s| s.name == "t-me") {
            s.model = "agent/x".into();
        }
    });
    let report = f.run("Draft something").await;
    assert_eq!(report.outcome, CycleOutcome::ErrorBudget);
    assert!(f.server.requests_for(THEM).is_empty());
    let events = f.drain();
    let (state, reason) = final_state(&events).expect("final state");
    assert_eq!(state, RelayPhase::Error);
    assert!(reason.contains("max_failures (1"), "{reason}");
    assert!(
        reason.contains("signal") || reason.contains("exit"),
        "the agent's end is named: {reason}"
    );
    let audit = audits(&events);
    assert!(audit.iter().any(|l| l.contains("driver_failed")), "{audit:?}");
}

#[tokio::test]
async fn a_relay_to_itself_is_refused_and_hops_are_limited() {
    let f = relay(|s| s.counterpart = "t".into()).await;
    let refused = f
        .engine
        .run_group(&f.group_id, "loop".into(), RunOverrides::default())
        .await;
    match refused {
        Err(EngineError::NotRunnable { reason, .. }) => assert!(reason.contains("itself"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(f.server.requests().is_empty());

    // t relays to group u, itself a relay: u's messages are at hop 2, beyond u's max_hops 1.
    let mut f = relay(|s| {
        s.counterpart = "u".into();
        s.max_failures = 1;
    })
    .await;
    f.org.update(|o| {
        let mut u = Group::new("u", GroupKind::Team);
        u.mode = Mode::Relay;
        let mut settings = RelaySettings::new("u-me", "u-them");
        settings.approval = ApprovalMode::FullAuto;
        settings.max_hops = 1;
        u.settings.relay = Some(settings);
        for (i, name) in ["u-me", "u-them"].into_iter().enumerate() {
            let mut s = Session::new(name, &u.id, format!("openai/w-{name}"));
            s.role = Role::Worker;
            s.team = true;
            s.order = i as i64;
            o.sessions.push(s);
        }
        o.groups.push(u);
    });
    f.server.script(ME, vec![Reply::text("hello u")]);
    let report = f.run("Chain").await;
    assert!(
        f.server.requests_for("w-u-me").is_empty(),
        "u refused before drafting"
    );
    assert_eq!(report.outcome, CycleOutcome::ErrorBudget);
    let events = f.drain();
    let (_, reason) = final_state(&events).expect("final state");
    assert!(reason.contains("hop limit"), "{reason}");
    let u_state = events.iter().find_map(|e| match &e.kind {
        EventKind::RelayState {
            state: RelayPhase::Error,
            reason,
            ..
        } if &*e.group == "u" => reason.clone(),
        _ => None,
    });
    assert!(u_state.unwrap_or_default().contains("max_hops 1"));
}

#[tokio::test]
async fn oversized_history_is_folded_before_each_driver_turn() {
    let f = relay(|s| {
        s.max_history_turns = 1;
        s.max_turns = 4;
    })
    .await;
    f.server.set_default(Reply::text("reply"));
    f.server.script(
        ME,
        vec![
            Reply::text("first"),
            Reply::text("second"),
            Reply::text("third"),
            Reply::text("end\n[[RELAY_COMPLETE]]"),
        ],
    );
    f.run("Fold it").await;
    let last = f.prompts(ME).pop().expect("driver prompts");
    assert!(
        last.contains("## History summary\n- turn 1 (auto-sent): sent \"first\"; reply \"reply\""),
        "{last}"
    );
    assert!(last.contains("### You (turn 3, auto-sent)\nthird"), "{last}");
    assert!(!last.contains("### You (turn 1"), "{last}");
}

#[tokio::test]
async fn a_group_counterpart_answers_in_its_own_mode() {
    let f = relay(|s| s.counterpart = "panel".into()).await;
    f.org.update(|o| {
        let mut g = Group::new("panel", GroupKind::Team);
        g.mode = Mode::Broadcast;
        let mut s = Session::new("panel-expert", &g.id, "openai/w-expert");
        s.team = true;
        o.sessions.push(s);
        o.groups.push(g);
    });
    f.server.script(
        ME,
        vec![
            Reply::text("What do you think?"),
            Reply::text("thanks\n[[RELAY_COMPLETE]]"),
        ],
    );
    f.server.script("w-expert", vec![Reply::text("I think yes")]);
    let report = f.run("Ask the panel").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(f.prompts("w-expert"), vec!["What do you think?".to_string()]);
    assert!(f.prompts(ME)[1].contains("I think yes"), "{}", f.prompts(ME)[1]);
}

/// A team made from a repository's `.squad/` relays to its own members only: pointed at one of
/// the user's groups (an edited record, a member gone), it is refused before anything is sent.
#[tokio::test]
async fn a_team_from_a_repository_never_relays_to_another_group() {
    let f = relay(|s| s.counterpart = "panel".into()).await;
    let gid = f.group_id.clone();
    f.org.update(|o| {
        o.group_mut(&gid).expect("group").source_preset = Some("repo:Pushy".into());
        let mut g = Group::new("panel", GroupKind::Team);
        g.mode = Mode::Broadcast;
        let mut s = Session::new("panel-expert", &g.id, "openai/w-expert");
        s.team = true;
        o.sessions.push(s);
        o.groups.push(g);
    });
    let refused = f
        .engine
        .run_group(&f.group_id, "Ask the panel".into(), RunOverrides::default())
        .await;
    match refused {
        Err(EngineError::NotRunnable { reason, .. }) => assert!(
            reason.contains("a team from a repository's .squad/ may only relay to its own members"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(f.server.requests().is_empty(), "nothing was sent");
}
