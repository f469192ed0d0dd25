//! A team wired to the fake LLM server: sessions on distinct models so each can be scripted and
//! its prompts inspected.

use std::path::Path;
use std::time::Duration;

use huddle::config::Config;
use huddle::engine::events::EngineEvent;
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::model::{Group, GroupKind, Mode, Organization, Role, Session, reconcile};
use huddle::providers::{ProviderOptions, Providers, RetryPolicy};
use huddle::store::{OrgHandle, OrganizationFile, Transcripts};
use tokio::sync::mpsc::UnboundedReceiver;

use super::fake_llm_server::FakeLlm;

pub const ORCH: &str = "orch";
pub const EVAL: &str = "eval";

/// How long a test waits for something that comes within milliseconds before calling it hung.
/// Far beyond any delay a loaded machine causes: it decides nothing, it only ends a hang.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

pub struct Fixture {
    pub server: FakeLlm,
    pub engine: Engine,
    pub org: OrgHandle,
    pub group_id: String,
    pub events: UnboundedReceiver<EngineEvent>,
    pub transcripts: Transcripts,
    #[allow(dead_code)]
    pub dir: tempfile::TempDir,
}

pub fn config_for(server: &FakeLlm) -> Config {
    Config::parse(
        &format!(
            "providers:\n  - {{ name: openai, kind: openai, base_url: \"{}\" }}\n  - {{ name: anthropic, kind: anthropic, base_url: \"{}\" }}\n",
            server.openai_base(),
            server.anthropic_base()
        ),
        Path::new("test-config.yaml"),
    )
    .expect("test config")
}

pub fn fast_providers(config: &Config) -> Providers {
    huddle::sim::providers_with_options(
        config,
        ProviderOptions {
            read_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(2),
            retry: RetryPolicy {
                max_attempts: 1,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(1),
                max_retry_after: Duration::from_millis(1),
            },
        },
    )
    .expect("providers")
}

/// A team `t` in `mode` with workers on models `w-<name>` (openai), an orchestrator on `orch`
/// (openai) and, if asked, an evaluator on `eval` (anthropic).
pub async fn team(mode: Mode, workers: &[&str], evaluator: bool, max_iterations: u32) -> Fixture {
    let options = EngineOptions {
        max_concurrency: 8,
        error_backoff: Duration::from_millis(10),
        ..EngineOptions::default()
    };
    team_with(mode, workers, evaluator, max_iterations, options).await
}

/// [`team`] with its engine's options (tool servers, defaults) given.
pub async fn team_with(
    mode: Mode,
    workers: &[&str],
    evaluator: bool,
    max_iterations: u32,
    options: EngineOptions,
) -> Fixture {
    let server = FakeLlm::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mut group = Group::new("t", GroupKind::Team);
    group.mode = mode;
    group.max_iterations = max_iterations;
    group.worker_timeout_secs = 20;
    let gid = group.id.clone();
    let mut order = 0;
    let mut add = |org: &mut Organization, name: &str, role: Role, model: &str, prompt: Option<&str>| {
        let mut s = Session::new(name, &gid, model);
        s.role = role;
        s.team = true;
        s.order = order;
        s.system_prompt = prompt.map(str::to_string);
        order += 1;
        org.sessions.push(s);
    };
    if mode.spec().has_orchestrator {
        add(
            &mut org,
            "t-orchestrator",
            Role::Orchestrator,
            &format!("openai/{ORCH}"),
            None,
        );
    }
    for w in workers {
        add(
            &mut org,
            &format!("t-{w}"),
            Role::Worker,
            &format!("openai/w-{w}"),
            Some(&format!("You are the {w} specialist.\nSecond line.")),
        );
    }
    if evaluator {
        add(
            &mut org,
            "t-evaluator",
            Role::Evaluator,
            &format!("anthropic/{EVAL}"),
            None,
        );
        group.evaluator_id = Some(org.session_by_name("t-evaluator").expect("evaluator").id.clone());
    }
    org.groups.push(group);
    let org = OrgHandle::persistent_with_debounce(
        org,
        OrganizationFile::new(dir.path().join("organization.json")),
        Duration::from_millis(5),
    );
    let config = config_for(&server);
    let (sink, events) = EventSink::channel();
    let transcripts = Transcripts::new(dir.path().join("sessions"));
    let engine = Engine::new(
        fast_providers(&config),
        org.clone(),
        transcripts.clone(),
        sink,
        options,
    );
    Fixture {
        server,
        engine,
        org,
        group_id: gid,
        events,
        transcripts,
        dir,
    }
}

impl Fixture {
    /// Runs the team's mode on `prompt` to its end.
    pub async fn run(&self, prompt: &str) -> huddle::engine::RunReport {
        self.engine
            .run_group(
                &self.group_id,
                prompt.into(),
                huddle::engine::RunOverrides::default(),
            )
            .await
            .expect("the run starts")
    }

    /// Starts the team's mode on `prompt` in the background.
    pub fn spawn_run(&self, prompt: &str) -> tokio::task::JoinHandle<huddle::engine::RunReport> {
        let (engine, gid, prompt) = (self.engine.clone(), self.group_id.clone(), prompt.to_string());
        tokio::spawn(async move {
            engine
                .run_group(&gid, prompt, huddle::engine::RunOverrides::default())
                .await
                .expect("the run starts")
        })
    }

    /// Swaps the engine for one that also has a `command` provider per script, named `model`
    /// and running `sh <dir>/<model>.sh` (a CLI agent without native tools).
    pub fn with_cli_agents(&mut self, dir: &Path, scripts: &[(&str, &str)]) {
        let mut providers = String::new();
        for (model, body) in scripts {
            let path = dir.join(format!("{model}.sh"));
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
            providers.push_str(&format!(
                "  - {{ name: {model}, kind: command, command: [\"sh\", \"{}\"] }}\n",
                path.display()
            ));
        }
        let config = Config::parse(
            &format!(
                "providers:\n  - {{ name: openai, kind: openai, base_url: \"{}\" }}\n{providers}",
                self.server.openai_base()
            ),
            Path::new("test-config.yaml"),
        )
        .expect("config");
        let (sink, events) = EventSink::channel();
        // The agents run in their sandbox (the default): what they write for the test to read
        // goes to `dir`, which is let in.
        let sandbox = huddle::sandbox::Baseline {
            config: huddle::sandbox::SandboxSettings {
                allow_write: vec![dir.display().to_string()],
                ..Default::default()
            },
            ..Default::default()
        };
        self.engine = Engine::new(
            fast_providers(&config),
            self.org.clone(),
            self.transcripts.clone(),
            sink,
            EngineOptions {
                sandbox,
                ..EngineOptions::default()
            },
        );
        self.events = events;
    }

    /// Swaps the engine for one that also writes run files (`runs_kept`: `keep`) under
    /// `<dir>/runs`; returns them.
    pub fn with_run_log(&mut self, keep: usize) -> huddle::store::RunFiles {
        let files = huddle::store::RunFiles::new(self.dir.path().join("runs"));
        let (sink, events) = EventSink::channel();
        let sink = sink.with_run_log(huddle::store::RunLog::start(files.clone(), keep));
        self.engine = Engine::new(
            fast_providers(&config_for(&self.server)),
            self.org.clone(),
            self.transcripts.clone(),
            sink,
            EngineOptions {
                error_backoff: Duration::from_millis(10),
                ..EngineOptions::default()
            },
        );
        self.events = events;
        files
    }

    /// Waits until `model` has received at least `n` requests.
    pub async fn wait_for_requests(&self, model: &str, n: usize) {
        while self.server.requests_for(model).len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits for the first event `wanted` accepts; returns every event received until then,
    /// that one included (they are no longer in [`Self::drain`]).
    pub async fn events_until(
        &mut self,
        what: &str,
        mut wanted: impl FnMut(&EngineEvent) -> bool,
    ) -> Vec<EngineEvent> {
        let events = &mut self.events;
        let wait = async move {
            let mut seen = Vec::new();
            while let Some(e) = events.recv().await {
                let done = wanted(&e);
                seen.push(e);
                if done {
                    return Some(seen);
                }
            }
            None
        };
        match tokio::time::timeout(HANG_GUARD, wait).await {
            Ok(Some(seen)) => seen,
            Ok(None) => panic!("the engine went away before {what}"),
            Err(_) => panic!("{what} never came"),
        }
    }

    /// Every event emitted so far.
    pub fn drain(&mut self) -> Vec<EngineEvent> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            out.push(e);
        }
        out
    }

    /// The user-side prompt texts (last message) of every request made to `model`.
    pub fn prompts(&self, model: &str) -> Vec<String> {
        self.server
            .requests_for(model)
            .iter()
            .map(|r| r.prompt_texts().last().cloned().unwrap_or_default())
            .collect()
    }

    /// Everything huddle wrote into each request made to `model`: its system prompt and its
    /// messages, one text per request.
    pub fn sent(&self, model: &str) -> Vec<String> {
        self.server
            .requests_for(model)
            .iter()
            .map(|r| r.prompt_texts().join("\n\n"))
            .collect()
    }

    pub fn session_id(&self, name: &str) -> String {
        self.org
            .read(|o| o.session_by_name(name).map(|s| s.id.clone()))
            .expect("session exists")
    }
}

/// The `event` names in order (deltas and turn bookkeeping left out).
pub fn names(events: &[EngineEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let v: serde_json::Value = serde_json::from_str(&e.to_ndjson()).expect("ndjson");
            v["event"].as_str().unwrap_or("").to_string()
        })
        .filter(|n| {
            !matches!(
                n.as_str(),
                "delta"
                    | "turn_started"
                    | "turn_finished"
                    | "message"
                    | "notice"
                    | "run_started"
                    | "run_ended"
                    | "run_result"
            )
        })
        .collect()
}
