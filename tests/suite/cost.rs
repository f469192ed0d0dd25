//! What a team costs (issue 25): each turn's tokens at the configured prices, the same in
//! `huddle run`'s summary, NDJSON, the transcript and `huddle trace`; Anthropic requests marked
//! for the prompt cache with the stable prefix byte for byte the same; a cost budget that stops
//! a run, and one refused over models without a price; `huddle run --dry-run`'s forecast.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::{EngineError, EngineOptions, RunOverrides};
use huddle::model::{CycleOutcome, Mode, Price, PriceBook, RunBudget};

use super::engine_fixture::{ORCH, team, team_with};
use super::fake_llm_server::{Api, FakeLlm, Reply};
use super::headless::{huddle, ndjson, team_made_by_run, text};

/// $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens.
const PRICE: &str = "{ input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 }";

/// 2,000 plain input tokens, 10,000 read from the cache, 800 written, 200 out: at [`PRICE`]
/// $0.006 + $0.003 + $0.003 + $0.003.
const TURN_USD: f64 = 0.015;

fn priced_reply(answer: &str) -> Reply {
    Reply::text(answer).usage(2000, 200).cache(10_000, 800)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// A data dir whose config points providers `oa` (OpenAI) and `an` (Anthropic) at the fake
/// server, with model `m` priced by slug on the first and by bare name on the second.
fn home_for(llm: &FakeLlm, api: Api) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let key = match api {
        Api::OpenAi => "\"oa/m\"",
        _ => "m",
    };
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "providers:\n  - {{ name: oa, kind: openai, base_url: \"{}\" }}\n  - {{ name: an, kind: anthropic, base_url: \"{}\" }}\nprices:\n  {key}: {PRICE}\n",
            llm.openai_base(),
            llm.anthropic_base()
        ),
    )
    .unwrap();
    home
}

/// `huddle run` with `args`, off the runtime's threads (the fake server keeps serving).
async fn run_huddle(home: &Path, args: &[&str]) -> Output {
    let (home, args): (std::path::PathBuf, Vec<String>) =
        (home.to_path_buf(), args.iter().map(|a| a.to_string()).collect());
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        huddle(&home, &args)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_runs_cost_is_its_tokens_at_the_configured_prices_in_every_front_end() {
    for (api, slug) in [(Api::OpenAi, "oa/m"), (Api::Anthropic, "an/m")] {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            (0..6).map(|k| priced_reply(&format!("answer {k}"))).collect(),
        );
        let home = home_for(&llm, api);
        let out = run_huddle(
            home.path(),
            &[
                "run",
                "--preset",
                "Research Panel",
                "--model",
                slug,
                "--events",
                "Compare",
            ],
        )
        .await;
        assert_eq!(out.status.code(), Some(0), "{api:?}: {}", text(&out.stderr));
        let events = ndjson(&out);
        let turns: Vec<&Value> = events.iter().filter(|e| e["event"] == "turn_finished").collect();
        assert_eq!(turns.len(), 3, "{api:?}");
        for t in &turns {
            assert!(close(t["cost_usd"].as_f64().unwrap(), TURN_USD), "{api:?}: {t}");
            assert_eq!(t["usage"]["input_tokens"], 12_800, "{api:?}: {t}");
            assert_eq!(t["usage"]["cache_read_tokens"], 10_000, "{api:?}: {t}");
            assert_eq!(t["usage"]["cache_write_tokens"], 800, "{api:?}: {t}");
        }
        let end = events
            .iter()
            .find(|e| e["event"] == "run_ended")
            .expect("run_ended");
        assert!(
            close(end["cost_usd"].as_f64().unwrap(), 3.0 * TURN_USD),
            "{api:?}: {end}"
        );
        assert_eq!(end["usage"]["cache_read_tokens"], 30_000, "{api:?}: {end}");
        assert!(end.get("unpriced_turns").is_none(), "{end}");

        // The transcript keeps each answer's cost.
        let team = team_made_by_run(home.path(), "Research Panel");
        let mut answers = 0;
        for entry in std::fs::read_dir(home.path().join("sessions")).unwrap() {
            let body = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in body.lines() {
                let m: Value = serde_json::from_str(line).unwrap();
                if m["role"] == "Assistant" || m["role"] == "assistant" {
                    assert!(close(m["cost_usd"].as_f64().unwrap(), TURN_USD), "{line}");
                    assert_eq!(m["usage"]["cache_read_tokens"], 10_000, "{line}");
                    answers += 1;
                }
            }
        }
        assert_eq!(answers, 3, "{api:?}");

        // `huddle trace`: per node and in total.
        let out = run_huddle(home.path(), &["trace", "--group", &team, "--json"]).await;
        let trace: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            close(trace["run"]["cost_usd"].as_f64().unwrap(), 3.0 * TURN_USD),
            "{trace}"
        );
        let nodes = trace["children"].as_array().unwrap();
        assert_eq!(nodes.len(), 3, "{trace}");
        for n in nodes {
            assert!(close(n["cost_usd"].as_f64().unwrap(), TURN_USD), "{n}");
        }
        let out = run_huddle(home.path(), &["trace", "--group", &team]).await;
        let tree = text(&out.stdout);
        assert!(
            tree.lines().next().unwrap().ends_with("39000 tokens · $0.045"),
            "{tree}"
        );
        assert!(tree.contains("13,000 tok · $0.015"), "{tree}");

        // `huddle run`'s summary says what the run spent.
        let out = run_huddle(home.path(), &["run", "--group", &team, "--model", slug, "Again"]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let said = text(&out.stderr);
        assert!(
            said.contains(
                "── spent $0.045 · 39,000 tokens (30,000 read from the cache, 2,400 written to it) ·"
            ),
            "{api:?}: {said}"
        );
    }
}

/// An execution (mode `dispatch`) says what its turns cost.
#[tokio::test]
async fn an_executions_end_says_what_its_turn_cost() {
    let mut options = EngineOptions::default();
    let mut prices = std::collections::BTreeMap::new();
    prices.insert(
        "openai/*".to_string(),
        Price::new(3.0, 15.0, Some(0.3), Some(3.75)),
    );
    options.prices = PriceBook::new(prices, vec!["sim".into()]);
    let mut f = team_with(Mode::Dispatch, &["logs"], false, 3, options).await;
    f.server.script(
        ORCH,
        vec![
            Reply::tool_call(
                "c1",
                "dispatch_agent",
                r#"{"name": "logs", "task": "Look at the logs"}"#,
            )
            .usage(2000, 200)
            .cache(10_000, 800),
            priced_reply("The logs say the pool is exhausted."),
        ],
    );
    f.server
        .script("w-logs", vec![priced_reply("Pool exhausted at 09:12.")]);
    let report = f.run("Why did it fail?").await;
    assert_eq!(report.outcome, CycleOutcome::Completed, "{}", report.summary);
    let events = f.drain();
    let sub_agent = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ExecutionFinished { member, cost_usd, .. } if member == "logs" => Some(*cost_usd),
            _ => None,
        })
        .expect("the sub-agent's end");
    assert!(sub_agent.is_some_and(|c| close(c, TURN_USD)), "{sub_agent:?}");
    // The orchestrator's two requests and the sub-agent's, and whatever the orchestrator said
    // after the result came back (priced too).
    assert!(report.cost.usd >= 3.0 * TURN_USD - 1e-9, "{:?}", report.cost);
    assert_eq!(report.cost.unpriced, 0);
}

/// A session's second turn sends what its first sent, byte for byte (less the cache marks),
/// and every Anthropic request carries 1 to 4 breakpoints.
#[tokio::test]
async fn anthropic_requests_mark_a_stable_prefix_for_the_cache() {
    let f = team(Mode::Broadcast, &["solo"], false, 1).await;
    let id = f.session_id("t-solo");
    f.org
        .update(|o| o.session_mut(&id).unwrap().model = "anthropic/claude-x".into());
    f.server.script(
        "claude-x",
        vec![Reply::text("first answer"), Reply::text("second answer")],
    );
    for prompt in ["first question", "second question"] {
        let r = f.engine.ask(&id, prompt.into(), None).await.unwrap();
        assert!(r.success, "{:?}", r.error);
    }
    let requests = f.server.requests_for("claude-x");
    assert_eq!(requests.len(), 2);
    let marks = |body: &str| body.matches("\"cache_control\"").count();
    for r in &requests {
        assert!((1..=4).contains(&marks(&r.body)), "{}", r.body);
    }
    let (a, b) = (requests[0].json(), requests[1].json());
    let unmarked = |v: &Value| strip_marks(v).to_string();
    assert_eq!(unmarked(&a["system"]), unmarked(&b["system"]));
    let first = a["messages"].as_array().unwrap();
    let second = b["messages"].as_array().unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(second.len(), 3);
    assert_eq!(unmarked(&first[0]), unmarked(&second[0]), "the prefix changed");
    // The end of what the first request sent is where the second reads the cache from.
    assert!(second[1].to_string().contains("cache_control"), "{}", b);
}

/// A request part less its `cache_control` marks: what the cache sees.
fn strip_marks(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), strip_marks(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_marks).collect()),
        other => other.clone(),
    }
}

fn cost_budget(usd: f64) -> RunBudget {
    RunBudget {
        max_cost_usd: Some(usd),
        ..RunBudget::default()
    }
}

fn plan(round: u32) -> Reply {
    Reply::text(&format!(
        "Round {round} plan.\n@worker:alpha\nPart {round}.\n@end\n"
    ))
}

/// A reflect cycle stops once its turns' cost reaches the budget, saying which budget.
#[tokio::test]
async fn a_cost_budget_stops_a_run_naming_the_cost_budget() {
    let mut options = EngineOptions::default();
    let mut prices = std::collections::BTreeMap::new();
    prices.insert(
        "openai/*".to_string(),
        Price::new(3.0, 15.0, Some(0.3), Some(3.75)),
    );
    options.prices = PriceBook::new(prices, vec!["sim".into()]);
    let mut f = team_with(Mode::OrchestratorReflect, &["alpha"], false, 5, options).await;
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().budget = cost_budget(0.04));
    let words = |round: u32| {
        (0..30)
            .map(|k| format!("r{round}w{k}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    f.server.script(
        ORCH,
        (1..=5)
            .flat_map(|r| {
                [
                    plan(r).usage(2000, 200).cache(10_000, 800),
                    priced_reply(&format!("Synthesis {r}: {}", words(r))),
                ]
            })
            .collect(),
    );
    f.server.script(
        "w-alpha",
        (1..=5)
            .map(|r| priced_reply(&format!("Alpha {r}: {}", words(r))))
            .collect(),
    );
    let report = f.run("Do it").await;
    assert_eq!(
        report.outcome,
        CycleOutcome::BudgetExhausted,
        "{}",
        report.summary
    );
    // Three turns of $0.015 reach $0.04: the third ends it.
    assert!(close(report.cost.usd, 3.0 * TURN_USD), "{:?}", report.cost);
    assert!(
        report
            .summary
            .contains("the run spent $0.045 of its cost budget of $0.040 (max_cost_usd)"),
        "{}",
        report.summary
    );
    let events: Vec<EngineEvent> = f.drain();
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::Warning { message } if message.contains("cost budget"))));
}

/// A cost budget over a model without a price could never be kept: refused before anything
/// runs, naming the model.
#[tokio::test]
async fn a_cost_budget_over_an_unpriced_model_is_refused_before_it_starts() {
    let f = team(Mode::Broadcast, &["alpha", "beta"], false, 1).await;
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().budget = cost_budget(1.0));
    let err = f
        .engine
        .run_group(&f.group_id, "Go".into(), RunOverrides::default())
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::UnpricedModels { .. }), "{err}");
    let said = err.to_string();
    assert!(
        said.contains("no price is known for models `openai/w-alpha`, `openai/w-beta`")
            && said.contains("prices:"),
        "{said}"
    );
    assert!(f.server.requests().is_empty(), "nothing ran");
    // A priced model (the run's `--model`) runs.
    let report = f
        .engine
        .run_group(
            &f.group_id,
            "Go".into(),
            RunOverrides {
                model: Some("sim/x".into()),
                ..RunOverrides::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::Completed);
}

#[test]
fn huddle_run_refuses_an_unpriced_cost_budget_and_stops_a_priced_one_with_6() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        "providers:\n  - { name: gw, kind: openai, base_url: \"http://127.0.0.1:9/v1\" }\nprices:\n  sim/pricey: { input: 1000.0, output: 1000.0 }\n",
    )
    .unwrap();
    let refused = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Research Panel",
            "--model",
            "gw/mystery",
            "--max-cost",
            "1",
            "x",
        ],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let said = text(&refused.stderr);
    assert!(
        said.contains("no price is known for model `gw/mystery`"),
        "{said}"
    );
    assert!(
        !home.path().join("organization.json").exists()
            || !std::fs::read_to_string(home.path().join("organization.json"))
                .unwrap()
                .contains("Research Panel ·"),
        "no team was made"
    );
    let stopped = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Draft, Critique, Edit",
            "--model",
            "sim/pricey",
            "--max-cost",
            "0.05",
            "--events",
            "Write a haiku",
        ],
    );
    assert_eq!(stopped.status.code(), Some(6), "{}", text(&stopped.stderr));
    let events = ndjson(&stopped);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "warning" && e["message"].as_str().unwrap_or("").contains("cost budget")),
        "{}",
        text(&stopped.stdout)
    );
}

#[test]
fn a_dry_run_runs_nothing_and_forecasts_from_earlier_runs() {
    let home = tempfile::tempdir().unwrap();
    let dry = |args: &[&str]| {
        let mut all = vec!["run", "--dry-run"];
        all.extend_from_slice(args);
        huddle(home.path(), &all)
    };
    let first = dry(&["--preset", "Research Panel"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let said = text(&first.stdout);
    assert!(said.contains("nothing was run or changed"), "{said}");
    assert!(
        said.contains("forecast: no forecast: no earlier run to go by"),
        "{said}"
    );
    assert!(said.contains("sim/default: $0.00 in"), "{said}");
    assert!(!home.path().join("runs").exists(), "nothing ran");
    for prompt in ["one", "two", "three"] {
        let out = huddle(home.path(), &["run", "--preset", "Research Panel", prompt]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let said = text(&dry(&["--preset", "Research Panel"]).stdout);
    assert!(said.contains("forecast: ≈ $0.00 (90%: $0.00) · "), "{said}");
    assert!(
        said.contains("median and 90th percentile of 3 runs of teams made from preset `Research Panel`"),
        "{said}"
    );
    let team = team_made_by_run(home.path(), "Research Panel");
    let said = text(&dry(&["--group", &team]).stdout);
    assert!(
        said.contains("1 earlier run of this team and 2 runs of teams made from preset `Research Panel`"),
        "{said}"
    );
    let unpriced = dry(&[
        "--preset",
        "Research Panel",
        "--model",
        "nowhere/m",
        "--max-cost",
        "2",
    ]);
    let said = text(&unpriced.stdout);
    assert!(said.contains("nowhere/m: no price"), "{said}");
    assert!(said.contains("the run would be refused"), "{said}");
    let single = dry(&[]);
    assert_eq!(single.status.code(), Some(2));
    assert!(text(&single.stderr).contains("add --preset or --group"));
}

/// A cost budget holds in every mode: a team of a priced model runs each mode (the built-in
/// preset that uses it) and ends with `budget_exhausted`, exit 6, its warning naming the cost
/// budget.
#[test]
fn a_cost_budget_ends_a_run_of_every_mode() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        "prices:\n  sim/pricey: { input: 1000.0, output: 1000.0 }\n",
    )
    .unwrap();
    let presets = [
        (Mode::Broadcast, "Research Panel"),
        (Mode::Sequential, "Draft, Critique, Edit"),
        (Mode::Orchestrator, "Planning Team"),
        (Mode::OrchestratorReflect, "Code Review Team"),
        (Mode::Relay, "Negotiator"),
        (Mode::Flow, "Help Desk Flow"),
        (Mode::Pipeline, "Support Desk"),
        (Mode::Dispatch, "Incident Investigation"),
        (Mode::Team, "Deliberation Panel"),
    ];
    assert_eq!(presets.len(), Mode::ALL.len(), "a preset for every mode");
    let mut failures = Vec::new();
    for (mode, preset) in presets {
        let mut args = vec![
            "run",
            "--preset",
            preset,
            "--model",
            "sim/pricey",
            "--max-cost",
            "0.05",
            "--events",
        ];
        if mode == Mode::Relay {
            // Headless, a relay's drafts go out unasked.
            args.extend(["--approval", "full_auto"]);
        }
        args.push("Look into the login bug");
        let out = huddle(home.path(), &args);
        let events = ndjson(&out);
        let warned = events
            .iter()
            .any(|e| e["event"] == "warning" && e["message"].as_str().unwrap_or("").contains("cost budget"));
        let ended = events
            .iter()
            .any(|e| e["event"] == "run_ended" && e["outcome"] == "budget_exhausted");
        if out.status.code() != Some(6) || !warned || !ended {
            failures.push(format!(
                "{mode} ({preset}): exit {:?}, warned {warned}, ended {ended}\n{}",
                out.status.code(),
                text(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `huddle run` with `args` against a host that stays up once idle (the test stops it).
async fn run_on_a_lasting_host(home: &Path, args: &[&str]) -> Output {
    let (home, args): (std::path::PathBuf, Vec<String>) =
        (home.to_path_buf(), args.iter().map(|a| a.to_string()).collect());
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
            .args(&args)
            .env("HUDDLE_HOME", &home)
            .env(super::headless::HOST_IDLE_VAR, "600000")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(&home)
            .output()
            .expect("run huddle")
    })
    .await
    .unwrap()
}

fn host_pid(home: &Path) -> Option<String> {
    huddle::store::DataDirLock::holder(&home.join("huddle.lock"))
}

fn run_cost(out: &Output) -> f64 {
    let events = ndjson(out);
    let end = events
        .iter()
        .find(|e| e["event"] == "run_ended")
        .unwrap_or_else(|| panic!("run_ended: {}", text(&out.stderr)));
    end["cost_usd"].as_f64().unwrap_or_else(|| panic!("{end}"))
}

/// A host that is still up serves each `huddle run` with the prices (and the cost-budget check)
/// of the config the front end read, not those of the config it started with.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_host_still_up_prices_each_run_with_its_front_ends_config() {
    let llm = FakeLlm::start().await;
    llm.script(
        "m",
        (0..3).map(|k| priced_reply(&format!("answer {k}"))).collect(),
    );
    let home = home_for(&llm, Api::OpenAi);
    let config = home.path().join("config.yaml");
    let args = ["run", "--model", "oa/m", "--events", "hi"];
    let out = run_on_a_lasting_host(home.path(), &args).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(close(run_cost(&out), TURN_USD), "{}", run_cost(&out));
    let host = host_pid(home.path()).expect("the host stays up");

    // Ten times the price: the next run, on the same host, costs ten times as much.
    let body = std::fs::read_to_string(&config).unwrap().replace(
        PRICE,
        "{ input: 30.0, output: 150.0, cache_read: 3.0, cache_write: 37.5 }",
    );
    std::fs::write(&config, body).unwrap();
    let out = run_on_a_lasting_host(home.path(), &args).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(close(run_cost(&out), 10.0 * TURN_USD), "{}", run_cost(&out));

    // No price any more: a cost budget over the model is refused, though the host knew one.
    let body = std::fs::read_to_string(&config).unwrap();
    let body = body.split("prices:").next().unwrap().to_string();
    std::fs::write(&config, body).unwrap();
    let panel_with_budget = |model: &'static str, max_cost: &'static str| {
        let home = home.path().to_path_buf();
        async move {
            let args = [
                "run",
                "--preset",
                "Research Panel",
                "--model",
                model,
                "--max-cost",
                max_cost,
                "hi",
            ];
            run_on_a_lasting_host(&home, &args).await
        }
    };
    let out = panel_with_budget("oa/m", "1").await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no price is known"),
        "{}",
        text(&out.stderr)
    );

    // The other way round: a model the host never had a price for, priced by the front end's
    // config now, takes a cost budget (checked before the team is made).
    llm.script("n", (0..3).map(|k| priced_reply(&format!("panel {k}"))).collect());
    let mut body = std::fs::read_to_string(&config).unwrap();
    body.push_str(&format!("prices:\n  \"oa/n\": {PRICE}\n"));
    std::fs::write(&config, body).unwrap();
    let out = panel_with_budget("oa/n", "100").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        host_pid(home.path()).as_deref(),
        Some(host.as_str()),
        "one host served them all"
    );
    if let Ok(pid) = host.parse::<i32>() {
        // SAFETY: kill(2) on the host this test's runs started.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    super::headless::wait_for_host_exit(home.path());
}
