//! One frame of the whole screen: the layout, computed once and kept in the app for the mouse
//! and paging, then each component draws its own state with props filled here from the rest
//! of the app (no component sees the app; the transcript pane keeps its layouts as it draws).
//! Colours are dropped when `NO_COLOR` is set (modifiers such as reverse and bold stay, so the
//! selection remains visible).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Color;

use super::action::Action;
use super::app::{App, Focus};
use super::cycle_view::CycleView;
use super::layout::{FrameLayout, LayoutInput};
use super::runs::Pending;
use super::sidebar::{self, Row};
use super::team_panel::{self, PanelKeys, TeamPanel};
use super::transcript_pane as transcript;
use super::widgets::status;

/// The cycle panel is shown for a selected team.
fn shows_panel(app: &App) -> bool {
    app.selected_group_id().is_some_and(|g| app.is_team(&g))
}

/// The layout of `area` for the app as it is now.
pub fn layout(app: &App, area: Rect) -> FrameLayout {
    FrameLayout::compute(
        area,
        LayoutInput {
            show_panel: shows_panel(app),
            composer: &app.composer,
            sidebar_cursor: app.sidebar.cursor,
        },
    )
}

pub fn draw(frame: &mut Frame<'_>, app: &mut App, no_color: bool) {
    let area = frame.area();
    let layout = layout(app, area);
    // Kept for what happens before the next frame: clicks land on what was drawn.
    app.layout = layout;
    let rows = app.rows();
    app.org.read(|org| {
        let props = sidebar::Props {
            org,
            rows: &rows,
            offset: layout.sidebar_offset,
            focused: app.focus == Focus::Sidebar,
            tick: app.tick,
            activity: app,
        };
        app.sidebar.render(frame, layout.sidebar, &props);
    });
    // The transcript pane keeps its layouts as it draws; the rest is only read.
    if let Some(props) = transcript_props(app, &app.team_panel, rows.get(app.sidebar.cursor)) {
        app.transcripts.render(frame, layout.transcript, &props);
    }
    let trace_area = layout
        .panel
        .map_or(layout.transcript, |p| layout.transcript.union(p));
    if let Some(view) = app.trace_view.as_mut() {
        let browsing = app.team_panel.browsing(&view.group_id);
        view.prepare(&app.team_panel.traces, browsing, trace_area);
    }
    let app = &*app;
    if let (Some(panel), Some(group_id)) = (layout.panel, app.selected_group_id()) {
        let (kept, budget) = app.org.read(|o| {
            o.group(&group_id)
                .map(|g| (g.pending_messages.len(), g.budget))
                .unwrap_or_default()
        });
        let props = team_panel::Props {
            budget: budget.or(app.config.budget),
            running: app.team_running(&group_id),
            pause_requested: app.team_pending(&group_id) == Some(Pending::Pausing),
            kept,
            tick: app.tick,
            keys: panel_keys(app),
            group_id,
            now: std::time::Instant::now(),
        };
        app.team_panel.render(frame, panel, &props);
    }
    app.composer
        .render(frame, layout.composer, app.focus == Focus::Composer);
    status::render(frame, layout.status, &status_props(app));
    draw_trace(frame, app, trace_area);
    app.dialogs.render(frame, area, &app.keymap);
    if no_color {
        strip_colours(frame);
    }
}

/// What a session working in `working_dir` on `model` gets of its repository (its team's
/// settings over the config's; a CLI agent reads `AGENTS.md` itself where its provider says so,
/// and has its own skills).
fn repo_header(
    config: &crate::config::Config,
    model: &str,
    working_dir: std::path::PathBuf,
    settings: crate::model::RepoContextSettings,
) -> transcript::RepoHeader {
    let settings = settings.over(config.repo_context);
    let provider = config.resolve(model).ok().map(|(p, _)| p);
    let agent = provider.is_some_and(|p| p.kind.runs_local_program());
    transcript::RepoHeader {
        working_dir,
        instructions: settings.instructions_on(),
        agent_reads: provider.is_some_and(|p| p.reads_repo_instructions()),
        skills: settings.skills_on() && !agent,
    }
}

/// The centre pane's props for the selected row; None for a group that is gone.
fn transcript_props<'a>(app: &App, panel: &'a TeamPanel, row: Option<&Row>) -> Option<transcript::Props<'a>> {
    let subject = match row {
        None => transcript::Subject::Nothing,
        Some(Row::Session(id)) => {
            let (name, role, model, system_chars, cost, place, tools) = app
                .org
                .read(|o| {
                    o.session(id).map(|s| {
                        let system = s.system_prompt.as_deref().map_or(0, str::len);
                        let group = o.group(&s.group_id);
                        let place = s
                            .working_dir(group)
                            .map(|dir| (dir, group.map(|g| g.repo_context).unwrap_or_default()));
                        // A team's member by its handle, a session of its own by its name;
                        // the role as the sidebar says it: an orchestrator's or evaluator's
                        // unless the name says it already (every other session is a `worker`).
                        let name = crate::describe::Names::of_session(o, id).unwrap_or_default();
                        let role = (s.role != crate::model::Role::Worker && name != s.role.to_string())
                            .then_some(s.role);
                        (
                            name,
                            role,
                            s.model.clone(),
                            system,
                            s.cost,
                            place,
                            s.tools.clone(),
                        )
                    })
                })
                .unwrap_or_default();
            let repo =
                place.map(|(working_dir, settings)| repo_header(&app.config, &model, working_dir, settings));
            transcript::Subject::Session {
                id: id.clone(),
                window: app.config.context_window(&model),
                sandbox: app.edits.sandbox_label(id),
                name,
                role,
                model,
                system_chars,
                cost,
                repo,
                tools,
            }
        }
        Some(Row::Group(id)) => transcript::Subject::Group {
            id: id.clone(),
            group: app.org.read(|o| {
                o.group(id).map(|g| {
                    Box::new(transcript::GroupInfo {
                        name: g.name.clone(),
                        members_slug: g.members_slug(),
                        team: g.is_team(),
                        mode: g.mode,
                        max_iterations: g.max_iterations,
                        repo: g.repo.clone(),
                        memory: g.memory,
                        // By handle where a member has one (as the cycle panel and the run's
                        // results name them).
                        members: {
                            let names = crate::describe::Names::of_members(o, id);
                            o.sessions_in(id)
                                .iter()
                                .map(|s| (names.short(&s.name).to_string(), s.role))
                                .collect()
                        },
                        contexts: o
                            .sessions_in(id)
                            .iter()
                            .map(|s| {
                                let view = app.transcripts.views.get(&s.id).filter(|v| v.loaded)?;
                                let system = s.system_prompt.as_deref().map_or(0, str::len);
                                let tokens =
                                    crate::model::context::next_request_tokens(&view.messages, system);
                                Some((tokens, app.config.context_window(&s.model)))
                            })
                            .collect(),
                        member_costs: o.sessions_in(id).iter().map(|s| s.cost).collect(),
                        spent: g.cost,
                        forecast: panel.forecasts.get(id).cloned(),
                    })
                })
            })?,
            cycle: panel.shown_cycle(id),
            run: panel.run_label(id, &panel_keys(app)),
        },
    };
    let key = |a| app.keymap.key_label(a);
    Some(transcript::Props {
        subject,
        focused: app.focus == Focus::Transcript,
        keys: transcript::Keys {
            new_team: key(Action::NewGroupFromPreset),
            new_session: key(Action::NewSession),
            help: key(Action::Help),
            send: key(Action::Send),
            new_conversation: key(Action::NewConversation),
            older: key(Action::OlderRun),
            newer: key(Action::NewerRun),
            set_tools: key(Action::SetTools),
        },
        default_model: app.config.default_model(),
        tools_configured: !app.config.mcp_servers.is_empty(),
    })
}

/// The keys the team panel and the timeline name.
fn panel_keys(app: &App) -> PanelKeys {
    let key = |a| app.keymap.key_label(a);
    PanelKeys {
        pause: key(Action::TogglePauseCycle),
        stop: key(Action::StopCycle),
        older: key(Action::OlderRun),
        newer: key(Action::NewerRun),
        relay_review: key(Action::RelayDraft),
    }
}

fn status_props(app: &App) -> status::Props<'_> {
    let reflecting = app.selected_session_id().is_some_and(|s| app.reflecting(&s));
    let running = app.selected_group_id().is_some_and(|g| app.team_running(&g));
    let selection_paused = match app.selected_session_id() {
        Some(s) if reflecting => app.reflection_paused(&s),
        _ => app
            .selected_group_id()
            .and_then(|g| app.team_panel.cycles.get(&g).map(|c| c.running && c.paused))
            .unwrap_or(false),
    };
    // The selected session's turn waiting for a limit, else the first of the selected group's.
    let wait = match app.selected_session_id() {
        Some(s) => app.runs.limit_wait(&s).map(|w| (w, 1)),
        None => app
            .selected_group_id()
            .and_then(|g| app.runs.group_limit_wait(&g)),
    };
    let limit_wait = wait.map(|(w, n)| {
        // A team's member by its handle, as the panel names it.
        let who = app.selected_group_id().map_or_else(
            || w.session.clone(),
            |g| {
                app.org.read(|o| {
                    crate::describe::Names::of_members(o, &g)
                        .short(&w.session)
                        .to_string()
                })
            },
        );
        crate::describe::cycle::limit_wait_row(
            &who,
            &w.provider,
            w.until,
            w.left(std::time::Instant::now()),
            n - 1,
        )
    });
    status::Props {
        keymap: &app.keymap,
        composer_focused: app.focus == Focus::Composer,
        run_controls: reflecting || running || limit_wait.is_some(),
        selection_paused,
        search: app.transcripts.search.as_ref(),
        flash: app.flash.as_ref(),
        mouse_capture: app.mouse_capture,
        running: app.running_count() - app.paused_count(),
        paused: app.paused_count(),
        approvals: app.dialogs.approvals().map_or(0, |a| a.waiting().count()),
        worktrees: app.selected_row().is_some_and(|row| {
            app.org
                .read(|o| super::features::worktrees::listed(o, &row).is_some())
        }),
        creating: app.worktrees.creating.len(),
        limit_wait,
        limit_waiting: app.runs.limit_waiting(),
    }
}

/// The sidebar's marks from the app's run state (none of these lock the organization).
impl sidebar::Activity for App {
    fn group_running(&self, group_id: &str) -> bool {
        self.team_running(group_id)
    }

    fn cycle(&self, group_id: &str) -> Option<&CycleView> {
        self.team_panel.cycles.get(group_id)
    }

    fn session_busy(&self, session_id: &str) -> bool {
        App::session_busy(self, session_id)
    }

    fn session_paused(&self, session_id: &str) -> bool {
        self.reflection_paused(session_id)
    }

    fn session_waiting(&self, session_id: &str) -> bool {
        self.runs.limit_wait(session_id).is_some()
    }

    fn unread(&self, session_id: &str) -> bool {
        self.transcripts.unread.contains(session_id)
    }

    fn worktree_mark(&self, session_id: &str) -> Option<&super::worktree_marks::Mark> {
        self.worktrees.mark(session_id)
    }

    fn awaiting_approval(&self, session_id: &str) -> bool {
        self.dialogs
            .approvals()
            .is_some_and(|a| a.waiting().any(|r| r.session_id == session_id))
    }
}

fn strip_colours(frame: &mut Frame<'_>) {
    let buffer = frame.buffer_mut();
    for cell in buffer.content.iter_mut() {
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

/// The trace view, while open, over the centre pane and the cycle panel.
fn draw_trace(frame: &mut ratatui::Frame<'_>, app: &App, area: Rect) {
    if let Some(view) = &app.trace_view {
        let team = app
            .org
            .read(|o| o.group(&view.group_id).map(|g| g.name.clone()))
            .unwrap_or_default();
        view.render(frame, area, &team);
    }
}
