//! The prompt-cache benchmark (issue 25 item 6): the built-in Code Review Team (orchestrator,
//! three reviewers, evaluator) runs a reflect cycle of 10 iterations against a fake Anthropic
//! server that counts the prompt cache as the API does (`FakeLlm::emulate_prompt_cache`: a
//! prefix up to a `cache_control` mark is written once and read by later requests that send it
//! again byte for byte; prefixes under 1,024 tokens are not cached). Once with prompt caching
//! (the default), once with `prompt_caching: false`. Billed input is counted in input-token
//! equivalents: uncached input at 1, cache writes at 1.25, cache reads at 0.1 (Anthropic's
//! 5-minute cache).
//!
//! Goal (issue 25): at least 60 % less with caching. Since issue 29 a reflect run says each
//! thing once and sends a member's recent exchanges only (at most 12, the oldest dropped 8 at
//! a time): a third of the tokens of the whole histories sent before, so less of each request
//! repeats, and each move of the window writes the kept history to the cache again. With the
//! window moving every 4 exchanges (8 kept at most) caching saved 51.6 %; moving every 8, it
//! saves about 62 % (see docs/benchmarks.md). What every request marks, the member's next
//! request sends again byte for byte (unless the window moved):
//! [`marked_prefixes_are_sent_again`].
//!
//! `cargo test --test all suite::cost_caching -- --nocapture` prints the figures
//! (docs/benchmarks.md has them).

use std::path::Path;
use std::time::Duration;

use huddle::config::Config;
use huddle::engine::events::{EventKind, RunTotals};
use huddle::engine::{Engine, EngineOptions, EventSink, RunOverrides};
use huddle::model::{CycleOutcome, Organization, Role, Usage, reconcile};
use huddle::store::{OrgHandle, OrganizationFile, Transcripts};

use super::engine_fixture::fast_providers;
use super::fake_llm_server::{FakeLlm, Reply};

const ITERATIONS: u32 = 10;
const REVIEWERS: [&str; 3] = ["correctness", "security", "maintainability"];

/// What a user asks the team: a change to review (about 1.6 KB).
fn the_change() -> String {
    let mut code = String::from("Review this change to the payments service.\n\n```rust\n");
    for k in 0..24 {
        code.push_str(&format!(
            "fn settle_{k}(ledger: &mut Ledger, id: u64, amount: i64) -> Result<(), Error> {{ ledger.apply(id, amount)?; Ok(()) }}\n"
        ));
    }
    code.push_str("```\n");
    code
}

/// `n` bytes of text with words of its own (answers differ from round to round, as real ones
/// do, so no stall ends the cycle early).
fn prose(tag: &str, n: usize) -> String {
    let mut text = String::new();
    let mut k = 0;
    while text.len() < n {
        text.push_str(&format!("{tag}w{k} "));
        k += 1;
    }
    text
}

fn script(server: &FakeLlm) {
    let mut orchestrator = Vec::new();
    for round in 1..=ITERATIONS {
        let mut plan = format!("Round {round}: each reviewer takes their angle again.\n");
        for r in REVIEWERS {
            plan.push_str(&format!(
                "@worker:{r}\nReview the change for {r}, round {round}. {}\n@end\n",
                prose(&format!("p{round}{r}"), 120)
            ));
        }
        orchestrator.push(Reply::text(&plan));
        orchestrator.push(Reply::text(&format!(
            "Synthesis {round}: {}",
            prose(&format!("s{round}"), 3000)
        )));
    }
    server.script("orch", orchestrator);
    for r in REVIEWERS {
        server.script(
            &format!("w-{r}"),
            (1..=ITERATIONS)
                .map(|round| {
                    Reply::text(&format!(
                        "Findings {round}: {}",
                        prose(&format!("{r}{round}"), 2000)
                    ))
                })
                .collect(),
        );
    }
    server.script(
        "eval",
        (1..=ITERATIONS)
            .map(|round| {
                Reply::text(&format!(
                    "SCORE: 0.{}\nRATIONALE: Round {round} misses {}.\n[[NEEDS_ITERATION]]",
                    40 + round,
                    prose(&format!("e{round}"), 200)
                ))
            })
            .collect(),
    );
}

/// A request's blocks in render order (tools, system, messages), each written out without its
/// `cache_control`, and the index of the last block that carried one.
fn blocks(body: &serde_json::Value) -> (Vec<String>, Option<usize>) {
    let mut out = Vec::new();
    let mut last_mark = None;
    let mut push = |block: &serde_json::Value, out: &mut Vec<String>| {
        let mut plain = block.clone();
        if let Some(map) = plain.as_object_mut()
            && map.remove("cache_control").is_some()
        {
            last_mark = Some(out.len());
        }
        out.push(plain.to_string());
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool, &mut out);
    }
    for block in body["system"].as_array().into_iter().flatten() {
        push(block, &mut out);
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        for block in m["content"].as_array().into_iter().flatten() {
            push(block, &mut out);
        }
    }
    (out, last_mark)
}

/// What a request marks for the cache, the next request of the same member sends again byte
/// for byte, unless that one's history starts later (a window moved on): no mark sits on a
/// block that changes (a prompt later sent in its compact form).
fn marked_prefixes_are_sent_again(server: &FakeLlm) {
    let models: std::collections::BTreeSet<String> = server.requests().iter().map(|r| r.model()).collect();
    let mut checked = 0;
    for model in models {
        let requests: Vec<_> = server
            .requests_for(&model)
            .iter()
            .map(|r| blocks(&r.json()))
            .collect();
        for pair in requests.windows(2) {
            let ((before, mark), (after, _)) = (&pair[0], &pair[1]);
            let Some(mark) = *mark else { continue };
            // The system prompt is block 0; block 1 is the history's first message.
            if before.get(1) != after.get(1) {
                continue;
            }
            let changed = (0..=mark).find(|&i| before.get(i) != after.get(i));
            assert_eq!(
                changed, None,
                "{model}: the next request changes block {changed:?} of what this one marked"
            );
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked} requests checked");
}

/// One reflect run of the Code Review Team; what it used in all, and how many requests.
async fn reflect_run(caching: bool) -> (RunTotals, usize) {
    let server = FakeLlm::start().await;
    server.emulate_prompt_cache(1024);
    script(&server);
    let switch = if caching { "" } else { ", prompt_caching: false" };
    let config = Config::parse(
        &format!(
            "default_model: anthropic/orch\nproviders:\n  - {{ name: anthropic, kind: anthropic, base_url: \"{}\"{switch} }}\n",
            server.anthropic_base()
        ),
        Path::new("bench.yaml"),
    )
    .expect("config");
    let (builtins, _) = huddle::presets::builtin::load_builtins(&config);
    let preset = builtins
        .iter()
        .find(|p| p.name == "Code Review Team")
        .expect("the built-in Code Review Team");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group_id = huddle::presets::create_team_group(&mut org, preset, &config, None);
    let group = org.group_mut(&group_id).expect("team");
    group.max_iterations = ITERATIONS;
    group.worker_timeout_secs = 60;
    for s in org.sessions.iter_mut().filter(|s| s.group_id == group_id) {
        s.model = match s.role {
            Role::Orchestrator => "anthropic/orch".into(),
            Role::Evaluator => "anthropic/eval".into(),
            _ => format!("anthropic/w-{}", s.handle.as_deref().unwrap_or("")),
        };
    }
    let org = OrgHandle::persistent_with_debounce(
        org,
        OrganizationFile::new(dir.path().join("organization.json")),
        Duration::from_millis(5),
    );
    let (sink, mut events) = EventSink::channel();
    let engine = Engine::new(
        fast_providers(&config),
        org,
        Transcripts::new(dir.path().join("sessions")),
        sink,
        EngineOptions::default(),
    );
    let report = engine
        .run_group(&group_id, the_change(), RunOverrides::default())
        .await
        .expect("the run starts");
    assert_eq!(report.outcome, CycleOutcome::MaxIterations, "{}", report.summary);
    assert_eq!(report.iterations, ITERATIONS);
    if caching {
        marked_prefixes_are_sent_again(&server);
    }
    let mut totals = None;
    while let Ok(e) = events.try_recv() {
        if let EventKind::RunEnded { totals: Some(t), .. } = e.kind {
            totals = Some(t);
        }
    }
    (totals.expect("run_ended with totals"), server.requests().len())
}

/// Input in uncached-token equivalents: writes at 1.25, reads at 0.1.
fn billed(u: &Usage) -> f64 {
    u.uncached_input() as f64 + 1.25 * u.cache_write_tokens as f64 + 0.1 * u.cache_read_tokens as f64
}

/// Dollars at Claude Sonnet 4.5's list prices ($3 in, $15 out, $0.30 read, $3.75 write).
fn sonnet_usd(u: &Usage) -> f64 {
    let price = huddle::model::cost::known_rate("claude-sonnet-4-5", "2026-11-27").expect("priced");
    price.cost(u)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn prompt_caching_cuts_a_reflect_runs_billed_input_by_at_least_60_percent() {
    let (cached, requests) = reflect_run(true).await;
    let (plain, plain_requests) = reflect_run(false).await;
    assert_eq!(requests, plain_requests, "the same run both times");
    assert_eq!(plain.usage.cache_read_tokens + plain.usage.cache_write_tokens, 0);
    // The same prompts, give or take the marks: the same input either way.
    let (a, b) = (cached.usage.input_tokens as f64, plain.usage.input_tokens as f64);
    assert!((a - b).abs() / b < 0.02, "{a} vs {b}");
    let (with, without) = (billed(&cached.usage), billed(&plain.usage));
    let saved = 1.0 - with / without;
    println!(
        "reflect run, Code Review Team, {ITERATIONS} iterations, {requests} requests\n\
         without caching: {} input tokens billed as {:.0} ({} out); ${:.4} at Sonnet 4.5 prices\n\
         with caching:    {} input tokens: {} read from the cache, {} written, {} uncached; billed as {:.0}; ${:.4}\n\
         billed input {:.1}% lower",
        plain.usage.input_tokens,
        without,
        plain.usage.output_tokens,
        sonnet_usd(&plain.usage),
        cached.usage.input_tokens,
        cached.usage.cache_read_tokens,
        cached.usage.cache_write_tokens,
        cached.usage.uncached_input(),
        with,
        sonnet_usd(&cached.usage),
        100.0 * saved,
    );
    assert!(saved >= 0.60, "only {:.1}% lower with caching", 100.0 * saved);
}
