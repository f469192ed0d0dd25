//! A repository's `AGENTS.md` / `CLAUDE.md` and its skills reach a session's requests: the
//! instruction files in the system prompt nearest first, the skills by name and description
//! only, a skill's body through the `load_skill` tool when the model asks; settings (config or
//! a team's preset) turn each off; an agent that reads `AGENTS.md` itself does not get it
//! twice.

use std::path::Path;
use std::time::Duration;

use huddle::config::Config;
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::model::{Organization, RepoContextSettings, Session, reconcile};
use huddle::store::{OrgHandle, OrganizationFile, Transcripts};

use super::engine_fixture::{HANG_GUARD, config_for, fast_providers};
use super::fake_llm_server::{FakeLlm, Reply};

const MODEL: &str = "m";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A repository with instructions at its root and in `app/`, and a skill; the user's own skill
/// in another folder.
fn repository() -> (tempfile::TempDir, tempfile::TempDir) {
    let repo = tempfile::tempdir().expect("repo");
    let root = repo.path();
    std::fs::create_dir(root.join(".git")).expect(".git");
    write(&root.join("AGENTS.md"), "Run `make check` before you finish.");
    write(&root.join("CLAUDE.md"), "Answer in English.");
    write(&root.join("app/AGENTS.md"), "This app uses tabs.");
    write(
        &root.join(".agents/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Ship a release to production.\n---\nRun the release steps: tag, build, upload.\n",
    );
    let user = tempfile::tempdir().expect("user skills");
    write(
        &user.path().join("notes/SKILL.md"),
        "---\nname: notes\ndescription: Keep meeting notes.\n---\nWrite bullet points.\n",
    );
    (repo, user)
}

struct Setup {
    server: FakeLlm,
    engine: Engine,
    session_id: String,
    _dir: tempfile::TempDir,
}

async fn setup(
    working_dir: &Path,
    config: Option<Config>,
    options: EngineOptions,
    group_settings: RepoContextSettings,
    model: &str,
) -> Setup {
    let server = FakeLlm::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group_id = org.default_group().expect("default group").id.clone();
    if let Some(group) = org.group_mut(&group_id) {
        group.repo_context = group_settings;
    }
    let mut session = Session::new("coder", &group_id, model);
    session.system_prompt = Some("You write code.".into());
    session.repo = Some(working_dir.to_path_buf());
    let session_id = session.id.clone();
    org.sessions.push(session);
    let org = OrgHandle::persistent_with_debounce(
        org,
        OrganizationFile::new(dir.path().join("organization.json")),
        Duration::from_millis(5),
    );
    let config = config.unwrap_or_else(|| config_for(&server));
    let (sink, _events) = EventSink::channel();
    let engine = Engine::new(
        fast_providers(&config),
        org,
        Transcripts::new(dir.path().join("sessions")),
        sink,
        options,
    );
    Setup {
        server,
        engine,
        session_id,
        _dir: dir,
    }
}

impl Setup {
    async fn ask(&self, prompt: &str) -> huddle::engine::TurnResult {
        tokio::time::timeout(HANG_GUARD, self.engine.ask(&self.session_id, prompt.into(), None))
            .await
            .expect("the turn ends")
            .expect("the turn starts")
    }
}

/// The system prompt of an OpenAI request.
fn system_of(request: &super::fake_llm_server::RecordedRequest) -> String {
    request
        .messages()
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn agents_md_and_a_skill_reach_the_request_and_the_skill_body_only_when_asked() {
    let (repo, user) = repository();
    let options = EngineOptions {
        skills_dir: Some(user.path().to_path_buf()),
        ..EngineOptions::default()
    };
    let s = setup(
        &repo.path().join("app"),
        None,
        options,
        RepoContextSettings::default(),
        &format!("openai/{MODEL}"),
    )
    .await;
    s.server.script(
        MODEL,
        vec![
            Reply::tool_call("call_1", "load_skill", r#"{"name":"deploy"}"#),
            Reply::text("Released."),
        ],
    );
    let result = s.ask("ship it").await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.text, "Released.");
    let requests = s.server.requests_for(MODEL);
    assert_eq!(requests.len(), 2);
    let system = system_of(&requests[0]);
    let app = system
        .find("## app/AGENTS.md\n\nThis app uses tabs.")
        .expect(&system);
    let root = system.find("## AGENTS.md\n\nRun `make check`").expect(&system);
    let claude = system.find("## CLAUDE.md\n\nAnswer in English.").expect(&system);
    assert!(system.starts_with("You write code."), "{system}");
    assert!(app < root && root < claude, "nearest first: {system}");
    assert!(
        system.contains("- deploy: Ship a release to production."),
        "{system}"
    );
    assert!(system.contains("- notes: Keep meeting notes."), "{system}");
    assert!(
        !system.contains("Run the release steps"),
        "no body before it is asked: {system}"
    );
    assert!(requests[0].tool_names().contains(&"load_skill".to_string()));
    let results = requests[1].tool_results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].call_id, "call_1");
    assert!(
        results[0]
            .content
            .starts_with("Run the release steps: tag, build, upload."),
        "{:?}",
        results[0]
    );
    // An unknown skill is a tool error the model can learn from.
    s.server.script(
        MODEL,
        vec![
            Reply::tool_call("call_2", "load_skill", r#"{"name":"fly"}"#),
            Reply::text("ok"),
        ],
    );
    s.ask("fly").await;
    let requests = s.server.requests_for(MODEL);
    let last = requests.last().expect("a request").tool_results();
    let unknown = last.iter().find(|r| r.call_id == "call_2").expect("its result");
    assert!(unknown.content.contains("no skill named `fly`"), "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn settings_turn_each_part_off_the_teams_over_the_configs() {
    let (repo, user) = repository();
    let off = RepoContextSettings {
        instructions: Some(false),
        skills: Some(false),
    };
    let cases = [
        // config.yaml off.
        (off, RepoContextSettings::default(), false, false),
        // The team's preset turns instructions off, the config leaves skills on.
        (
            RepoContextSettings::default(),
            RepoContextSettings {
                instructions: Some(false),
                skills: None,
            },
            false,
            true,
        ),
        // The team's preset turns them back on over the config.
        (
            off,
            RepoContextSettings {
                instructions: Some(true),
                skills: Some(true),
            },
            true,
            true,
        ),
    ];
    for (config, group, instructions, skills) in cases {
        let options = EngineOptions {
            repo_context: config,
            skills_dir: Some(user.path().to_path_buf()),
            ..EngineOptions::default()
        };
        let s = setup(repo.path(), None, options, group, &format!("openai/{MODEL}")).await;
        s.ask("hi").await;
        let request = &s.server.requests_for(MODEL)[0];
        let system = system_of(request);
        assert_eq!(
            system.contains("Run `make check`"),
            instructions,
            "{config:?} {group:?}: {system}"
        );
        assert_eq!(system.contains("- deploy:"), skills, "{system}");
        assert_eq!(request.tool_names().contains(&"load_skill".to_string()), skills);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_agent_that_reads_agents_md_itself_does_not_get_it_twice() {
    let (repo, _user) = repository();
    for (reads, expected) in [(true, false), (false, true)] {
        // `cat` answers with the prompt it was given: what the agent would see.
        let config = Config::parse(
            &format!(
                "providers:\n  - {{ name: agent, kind: command, command: [\"cat\"], reads_agents_md: {reads} }}\n"
            ),
            Path::new("c.yaml"),
        )
        .expect("config");
        let s = setup(
            repo.path(),
            Some(config),
            EngineOptions::default(),
            RepoContextSettings::default(),
            "agent/x",
        )
        .await;
        let answer = s.ask("hi").await;
        assert!(answer.success, "{answer:?}");
        assert_eq!(
            answer.text.contains("Run `make check`"),
            expected,
            "reads_agents_md {reads}: {}",
            answer.text
        );
        assert!(
            !answer.text.contains("# Skills"),
            "a CLI agent has its own skills: {}",
            answer.text
        );
    }
}

#[test]
fn the_session_header_names_the_instruction_files_and_skills() {
    use super::tui_support::{config, new_app, render, screen_text, select_a_session};
    use huddle::tui::command::{AppEvent, Command};
    let (repo, _user) = repository();
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group_id = org.default_group().expect("default group").id.clone();
    let mut session = Session::new("coder", &group_id, "sim/default");
    session.repo = Some(repo.path().join("app"));
    org.sessions.push(session);
    let (mut app, initial) = new_app(org, config());
    let commands = select_a_session(&mut app, initial);
    // Showing the session asks the runtime to look (off the UI thread); a frame reads no disk.
    let asked: Vec<_> = commands
        .iter()
        .filter_map(|c| match c {
            Command::FindRepoFiles { working_dir } => Some(working_dir.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec![repo.path().join("app")]);
    let title_of = |text: &str| {
        text.lines()
            .find(|l| l.contains("coder ·"))
            .unwrap_or_default()
            .to_string()
    };
    let text = screen_text(&render(&mut app, 120, 20));
    assert!(!title_of(&text).contains("AGENTS.md"), "{text}");
    // What the runtime finds comes back as an event; the header shows it.
    let found = huddle::repo_context::found(&asked[0]);
    app.handle_app_event(AppEvent::RepoFilesFound {
        working_dir: asked[0].clone(),
        found,
    });
    let text = screen_text(&render(&mut app, 120, 20));
    assert!(title_of(&text).contains("· AGENTS.md +2 · 1 skill "), "{text}");
    // The periodic tick looks again.
    let again = app.handle_app_event(AppEvent::WorktreeTick);
    assert!(
        again.iter().any(|c| matches!(c, Command::FindRepoFiles { .. })),
        "{again:?}"
    );
}
