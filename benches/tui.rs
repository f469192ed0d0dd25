//! TUI hot paths: a frame with a 1 MB transcript on screen (warm cache and a fresh layout after
//! a resize), the same for one single 1 MB message, streaming (8 sessions' deltas at 2,000
//! tokens/s: the cost of one event and of one frame), and the time to the first frame of an
//! organization with 200 groups and 2,000 sessions.

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use huddle::config::Config;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::model::{Group, GroupKind, Message, Organization, Session, reconcile};
use huddle::store::{LoadedTranscript, OrgHandle};
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::workspace::Edits;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn config() -> Config {
    Config::parse("default_model: sim/demo\n", Path::new("config.yaml")).unwrap()
}

/// About 1 MB of Markdown answers and questions.
fn big_transcript() -> Vec<Message> {
    let answer = "## Findings\n\nThe handler **trusts** the `user_id` field and skips the check when the session is \
                  fresh. That is a real risk:\n\n- tokens are not rotated\n- errors leak the stack\n- retries are unbounded\n\n\
                  ```rust\nfn check(user: &User) -> Result<(), Error> {\n    ensure!(user.active, Error::Inactive);\n    Ok(())\n}\n```\n\n\
                  > Fix the check first, then add the tests.\n";
    let mut messages = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < 1_000_000 {
        let q = format!("Question {i}: what else is wrong with the login flow?");
        size += q.len() + answer.len();
        messages.push(Message::user(q));
        messages.push(Message::assistant(answer));
        i += 1;
    }
    messages
}

/// One assistant answer of about 1 MB (many Markdown blocks), after a question.
fn one_big_message() -> Vec<Message> {
    let answer = big_transcript()
        .into_iter()
        .filter(|m| m.role == huddle::model::MessageRole::Assistant)
        .map(|m| m.text)
        .collect::<Vec<_>>()
        .join("\n");
    vec![
        Message::user("Write the whole audit."),
        Message::assistant(answer),
    ]
}

fn app_with_big_transcript() -> App {
    app_with_transcript(big_transcript())
}

fn app_with_transcript(transcript: Vec<Message>) -> App {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let default = org.default_group().map(|g| g.id.clone()).unwrap();
    let session = Session::new("big", &default, "sim/demo");
    let id = session.id.clone();
    org.sessions.push(session);
    org.ui.selected_session = Some(id.clone());
    org.ui.selected_group = Some(default);
    let (mut app, commands) = App::new(
        Edits::detached(OrgHandle::in_memory(org), config(), PathBuf::from("/repo")),
        config(),
        PathBuf::from("/repo"),
        Vec::new(),
    );
    assert!(commands.contains(&Command::LoadTranscript {
        session_id: id.clone()
    }));
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: id,
        result: Ok(LoadedTranscript {
            messages: transcript,
            warnings: Vec::new(),
        }),
    });
    app
}

fn big_org() -> Organization {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    for g in 0..200 {
        let mut group = Group::new(format!("team {g}"), GroupKind::Team);
        group.sort_order = g + 1;
        for s in 0..10 {
            let mut session = Session::new(format!("team-{g}-worker-{s}"), &group.id, "sim/demo");
            session.order = s;
            session.team = true;
            org.sessions.push(session);
        }
        org.groups.push(group);
    }
    org
}

fn draw(app: &mut App, terminal: &mut Terminal<TestBackend>) {
    terminal
        .draw(|f| huddle::tui::render::draw(f, app, false))
        .unwrap();
}

fn benches(c: &mut Criterion) {
    let mut app = app_with_big_transcript();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    draw(&mut app, &mut terminal);
    c.bench_function("frame, 1 MB transcript on screen (layout cached)", |b| {
        b.iter(|| draw(&mut app, &mut terminal))
    });
    let mut width = 120;
    c.bench_function(
        "frame, 1 MB transcript after a resize (visible part laid out again)",
        |b| {
            b.iter(|| {
                width = if width == 120 { 100 } else { 120 };
                terminal.backend_mut().resize(width, 40);
                let _ = terminal.autoresize();
                draw(&mut app, &mut terminal)
            })
        },
    );
    let mut app = app_with_transcript(one_big_message());
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    draw(&mut app, &mut terminal);
    c.bench_function("frame, one 1 MB message on screen (layout cached)", |b| {
        b.iter(|| draw(&mut app, &mut terminal))
    });
    let mut width = 120;
    c.bench_function("frame, one 1 MB message after a resize", |b| {
        b.iter(|| {
            width = if width == 120 { 100 } else { 120 };
            terminal.backend_mut().resize(width, 40);
            let _ = terminal.autoresize();
            draw(&mut app, &mut terminal)
        })
    });
    c.bench_function("first frame of one 1 MB message (fresh view)", |b| {
        b.iter_batched(
            || app_with_transcript(one_big_message()),
            |mut app| {
                let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
                draw(&mut app, &mut terminal);
            },
            criterion::BatchSize::LargeInput,
        )
    });

    streaming(c);

    let org = big_org();
    c.bench_function("first frame, 200 groups / 2,000 sessions", |b| {
        b.iter(|| {
            let (mut app, _) = App::new(
                Edits::detached(
                    OrgHandle::in_memory(org.clone()),
                    config(),
                    PathBuf::from("/repo"),
                ),
                config(),
                PathBuf::from("/repo"),
                Vec::new(),
            );
            let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
            draw(&mut app, &mut terminal);
        })
    });
}

/// 8 sessions streaming at 2,000 tokens/s in total (one Delta event per token, a newline every
/// 12 tokens, a new turn every 2,000 tokens per session); the selected session is on screen.
/// At 60 frames/s that is about 33 events between two frames.
fn streaming(c: &mut Criterion) {
    const SESSIONS: usize = 8;
    const EVENTS_PER_FRAME: usize = 2_000 / 60;
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let default = org.default_group().map(|g| g.id.clone()).unwrap();
    let group_name = org.default_group().map(|g| g.name.clone()).unwrap();
    let names: Vec<String> = (0..SESSIONS).map(|i| format!("s{i}")).collect();
    let mut ids = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut s = Session::new(name.clone(), &default, "sim/demo");
        ids.push(s.id.clone());
        s.order = i as i64;
        if i == 0 {
            org.ui.selected_session = Some(s.id.clone());
        }
        org.sessions.push(s);
    }
    let default_id = default.clone();
    org.ui.selected_group = Some(default);
    let (mut app, commands) = App::new(
        Edits::detached(OrgHandle::in_memory(org), config(), PathBuf::from("/repo")),
        config(),
        PathBuf::from("/repo"),
        Vec::new(),
    );
    for c in commands {
        if let Command::LoadTranscript { session_id } = c {
            app.handle_app_event(AppEvent::TranscriptLoaded {
                session_id,
                result: Ok(LoadedTranscript {
                    messages: vec![Message::user("Explain the design.")],
                    warnings: Vec::new(),
                }),
            });
        }
    }
    let mut tokens = 0usize;
    let mut generation = 1u64;
    let event = move |kind| {
        AppEvent::Engine(EngineEvent {
            group_id: default_id.as_str().into(),
            group: group_name.as_str().into(),
            run_id: Some("run".into()),
            execution: None,
            kind,
        })
    };
    let mut next_event = move |app: &mut App| {
        let session = names[tokens % SESSIONS].clone();
        let session_id = ids[tokens % SESSIONS].clone();
        let per_session = tokens / SESSIONS;
        if per_session.is_multiple_of(2_000) && tokens.is_multiple_of(SESSIONS) {
            generation += 1;
        }
        if per_session.is_multiple_of(2_000) {
            app.handle_app_event(event(EventKind::TurnStarted {
                session_id: session_id.as_str().into(),
                session: session.as_str().into(),
                generation,
                prompt: None,
            }));
        }
        let text = if per_session % 12 == 11 {
            "word.\n\n"
        } else {
            "word "
        };
        app.handle_app_event(event(EventKind::Delta {
            session_id: session_id.into(),
            session: session.into(),
            generation,
            text: text.into(),
        }));
        tokens += 1;
    };
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    draw(&mut app, &mut terminal);
    c.bench_function("streaming: one Delta event (8 sessions)", |b| {
        b.iter(|| next_event(&mut app))
    });
    c.bench_function(
        "streaming: 33 Delta events + one frame (2,000 tok/s at 60 fps)",
        |b| {
            b.iter(|| {
                for _ in 0..EVENTS_PER_FRAME {
                    next_event(&mut app);
                }
                draw(&mut app, &mut terminal)
            })
        },
    );
}

criterion_group! {
    name = tui;
    config = Criterion::default().sample_size(20);
    targets = benches
}
criterion_main!(tui);
