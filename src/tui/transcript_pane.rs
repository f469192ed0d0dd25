//! The transcript pane (the centre of the screen): each session's transcript as the UI holds
//! it, which sessions have unread answers, and the `/` search; it draws the selected
//! session's transcript (Markdown, streaming, scrollable), or, for a selected team, its members
//! and the timeline of the run shown.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::cells::{Cell, CellScroll};
use super::cycle_view::CycleView;
use super::search::{self, TranscriptSearch};
use super::team_panel::{RunLabel, kind_style};
use super::tool_cell::ToolLive;
use super::transcript_view::{LiveCalls, TranscriptView};
use super::widgets::pane;
use crate::engine::events::EventKind;
use crate::model::context::{self, ContextLevel};
use crate::model::{GroupId, Message, MessageRole, Mode, Role, SessionId, ToolResultInfo};
use crate::naming;
use crate::repo_context::Found;
use crate::store::LoadedTranscript;
use crate::text::sanitize;

/// The pane's state: the transcripts shown so far, unread marks, the search.
#[derive(Debug, Default)]
pub struct TranscriptPane {
    /// Each session's transcript, once shown (read from disk then, kept current by events).
    pub views: HashMap<SessionId, TranscriptView>,
    /// Sessions with an answer the user has not looked at.
    pub unread: HashSet<SessionId>,
    /// The `/` search in the selected session's transcript, while active.
    pub search: Option<TranscriptSearch>,
    /// Tool calls in flight of sessions not shown yet (handed to their view when shown).
    unseen: HashMap<SessionId, LiveCalls>,
    /// Each team timeline's scroll position (its cells are laid out afresh every frame).
    timelines: HashMap<GroupId, CellScroll>,
    /// A broadcast result laid out in columns, per team: kept while its text and the width
    /// stay the same, so a frame does not lay the answers out again.
    columns: HashMap<GroupId, ColumnsCache>,
    /// An earlier conversation of a session shown instead of its current one (`[` / `]`).
    pub browsing: Option<Browsing>,
    /// The last prompt being edited to send again (`U`): its session and message id.
    pub resend: Option<(SessionId, String)>,
    /// A sub-agent card to scroll into view in a team's timeline at the next frame (it was
    /// just selected or expanded): the team and the card's execution id.
    pub reveal_card: Option<(GroupId, String)>,
    /// What the session header says of each working directory's `AGENTS.md` files and skills,
    /// as last found off the UI thread (`Command::FindRepoFiles`); `None` while asked for.
    repo_files: HashMap<PathBuf, Option<Found>>,
    /// Each `a2a` provider's Agent Card in the header's words, as last read off the UI thread
    /// (`Command::ReadAgentCard`), or why it could not be read; `None` while asked for.
    agent_cards: HashMap<String, Option<Result<String, String>>>,
}

/// What a session gets of its repository, for its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoHeader {
    pub working_dir: PathBuf,
    /// The repository's `AGENTS.md` / `CLAUDE.md` go into its prompt (on in the settings).
    pub instructions: bool,
    /// Its agent reads them itself (huddle leaves them out).
    pub agent_reads: bool,
    /// Skills are offered (on in the settings, and its provider declares tools).
    pub skills: bool,
}

impl TranscriptPane {
    /// True when `working_dir`'s files were never asked for (the runtime is to look them up).
    pub fn ask_repo_files(&mut self, working_dir: &Path) -> bool {
        if self.repo_files.contains_key(working_dir) {
            return false;
        }
        self.repo_files.insert(working_dir.to_path_buf(), None);
        true
    }

    /// What the runtime found in `working_dir` (its header shows it from the next frame).
    pub fn repo_files_found(&mut self, working_dir: PathBuf, found: Found) {
        self.repo_files.insert(working_dir, Some(found));
    }

    /// True when the card of the `a2a` provider `provider` was never asked for (the runtime is
    /// to read it).
    pub fn ask_agent_card(&mut self, provider: &str) -> bool {
        if self.agent_cards.contains_key(provider) {
            return false;
        }
        self.agent_cards.insert(provider.to_string(), None);
        true
    }

    /// The card the runtime read (its sessions' header shows it from the next frame).
    pub fn agent_card_read(&mut self, provider: String, card: Result<String, String>) {
        self.agent_cards.insert(provider, Some(card));
    }

    /// The header's words for the remote agent a session talks to (`a2a: Travel — Books trips
    /// · skills: Flights`), once its card was asked for. Sanitised.
    fn agent_card_label(&self, provider: &str) -> Option<String> {
        let label = match self.agent_cards.get(provider)? {
            None => "a2a: reading its card…".to_string(),
            Some(Ok(card)) => format!("a2a: {card}"),
            Some(Err(why)) => format!("a2a: card not read ({})", crate::text::first_line(why, 80)),
        };
        Some(sanitize::display(&label).into_owned())
    }

    /// The header's words for a session's repository context (`AGENTS.md +1 · 2 skills`), when
    /// there is any. Only what was found already: a frame reads no disk.
    fn repo_label(&self, header: &RepoHeader) -> Option<String> {
        let found = self.repo_files.get(&header.working_dir)?.as_ref()?;
        let mut parts = Vec::new();
        if let Some(first) = found.instructions.first().filter(|_| header.instructions) {
            let more = match found.instructions.len() {
                1 => String::new(),
                n => format!(" +{}", n - 1),
            };
            let whose = if header.agent_reads {
                " (read by the agent)"
            } else {
                ""
            };
            parts.push(format!("{first}{more}{whose}"));
        }
        if header.skills && found.skills > 0 {
            parts.push(match found.skills {
                1 => "1 skill".to_string(),
                n => format!("{n} skills"),
            });
        }
        (!parts.is_empty()).then(|| parts.join(" · "))
    }
}

/// An earlier conversation on screen, read-only.
#[derive(Debug)]
pub struct Browsing {
    pub session_id: SessionId,
    /// Which one (0: the first) of how many earlier ones.
    pub index: usize,
    pub count: usize,
    pub view: TranscriptView,
}

#[derive(Debug)]
struct ColumnsCache {
    text_hash: u64,
    width: u16,
    /// None: the answers do not fit side by side at this width.
    lines: Option<Vec<Line<'static>>>,
}

/// A broadcast result's answers side by side at `width`, laid out once per text and width.
fn result_columns<'c>(
    cache: &'c mut HashMap<GroupId, ColumnsCache>,
    group_id: &str,
    cycle: Option<&CycleView>,
    members: &[(String, Role)],
    team_name: &str,
    width: u16,
) -> Option<&'c [Line<'static>]> {
    use std::hash::{Hash, Hasher};
    let Some(c) = cycle.filter(|c| c.mode.is_some_and(|m| m.spec().answers_side_by_side)) else {
        cache.remove(group_id);
        return None;
    };
    let text = c.result.as_deref()?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    let text_hash = hasher.finish();
    let fresh = cache
        .get(group_id)
        .is_some_and(|k| k.text_hash == text_hash && k.width == width);
    if !fresh {
        let clean = sanitize::display(text);
        let slug = naming::team_slug(team_name);
        let names: Vec<&str> = members
            .iter()
            .map(|(n, _)| naming::strip_team_prefix(n, &slug))
            .filter(|n| clean.contains(&format!("## {n}\n")))
            .collect();
        let lines = super::result_columns::split(&clean, &names)
            .and_then(|parts| super::result_columns::lay_out(&parts, width as usize));
        cache.insert(
            group_id.to_string(),
            ColumnsCache {
                text_hash,
                width,
                lines,
            },
        );
    }
    cache.get(group_id).and_then(|k| k.lines.as_deref())
}

impl TranscriptPane {
    /// The selection changed to `session` (None: a group row). A search of another session
    /// ends and the session's unread mark goes. True when its transcript is to be read from
    /// disk (the first time it is shown; from then on the engine's events keep it current).
    pub fn show(&mut self, session: Option<&str>) -> bool {
        if self
            .search
            .as_ref()
            .is_some_and(|s| Some(s.session_id.as_str()) != session)
        {
            self.search = None;
        }
        if self
            .browsing
            .as_ref()
            .is_some_and(|b| Some(b.session_id.as_str()) != session)
        {
            self.browsing = None;
        }
        let Some(id) = session else {
            return false;
        };
        self.unread.remove(id);
        if self.views.contains_key(id) {
            return false;
        }
        let live = self.unseen.remove(id).unwrap_or_default();
        self.views.insert(id.to_string(), TranscriptView::with_live(live));
        true
    }

    /// A transcript read from disk (or why it could not be).
    pub fn loaded(&mut self, session_id: SessionId, result: Result<LoadedTranscript, String>) {
        let view = self.views.entry(session_id).or_default();
        match result {
            Ok(loaded) => {
                view.set_messages(loaded.messages);
                view.load_error = None;
            }
            Err(e) => {
                view.set_messages(Vec::new());
                view.load_error = Some(e);
            }
        }
    }

    /// An engine event for a transcript shown so far: a prompt, streamed text, a stored answer
    /// or notice, a tool call, its approval and its result (of a session not shown yet, what
    /// its calls are doing is kept for when it is). A finished turn of a session not on screen
    /// (`on_screen` says) marks it unread.
    pub fn on_event(&mut self, kind: &EventKind, on_screen: impl FnOnce(&str) -> bool) {
        match kind {
            EventKind::Delta {
                session_id,
                generation,
                text,
                ..
            } => {
                if let Some(view) = self.views.get_mut(&**session_id) {
                    view.delta(*generation, text);
                }
            }
            EventKind::TurnStarted {
                session_id,
                generation,
                prompt,
                ..
            } => {
                if let Some(view) = self.views.get_mut(&**session_id) {
                    if let Some(p) = prompt {
                        view.add((**p).clone());
                    }
                    view.turn_started(*generation);
                }
            }
            EventKind::TurnFinished {
                session_id,
                generation,
                message,
                ..
            } => {
                if let Some(view) = self.views.get_mut(&**session_id) {
                    view.turn_finished(*generation, message.as_deref().cloned());
                }
                self.unseen.remove(&**session_id);
                if !on_screen(session_id) {
                    self.unread.insert(session_id.to_string());
                }
            }
            EventKind::Notice {
                session_id, message, ..
            }
            // A message added to a turn in progress (a sub-agent's pushed result): stored in
            // the transcript like a tool result, so shown where it came in.
            | EventKind::TurnInput {
                session_id, message, ..
            } => {
                if let (Some(view), Some(m)) = (self.views.get_mut(session_id), message) {
                    view.add((**m).clone());
                }
            }
            EventKind::ToolCall {
                session_id,
                generation,
                call_id,
                step,
                ..
            } => match self.views.get_mut(session_id) {
                Some(view) => view.tool_call(*generation, call_id, step.as_deref().cloned()),
                None => self
                    .unseen_calls(session_id)
                    .apply(call_id, Some(ToolLive::Running)),
            },
            EventKind::ToolApprovalRequested {
                session_id, call_id, ..
            } => self.tool_approval(session_id, call_id, true),
            EventKind::ToolApprovalDecided {
                session_id, call_id, ..
            } => self.tool_approval(session_id, call_id, false),
            EventKind::ToolResult {
                session_id,
                call_id,
                name,
                ok,
                duration_ms,
                size,
                first_line,
                message,
                ..
            } => match self.views.get_mut(session_id) {
                Some(view) => {
                    // The stored message; from an event that lost it, what the event says.
                    let message = message.as_deref().cloned().unwrap_or_else(|| {
                        Message::tool(
                            first_line.clone(),
                            ToolResultInfo {
                                call_id: call_id.clone(),
                                name: name.clone(),
                                is_error: !ok,
                                duration_ms: *duration_ms,
                                size: *size,
                            },
                        )
                    });
                    view.tool_result(call_id, message);
                }
                None => self.unseen_calls(session_id).apply(call_id, None),
            },
            _ => {}
        }
    }

    fn unseen_calls(&mut self, session_id: &str) -> &mut LiveCalls {
        self.unseen.entry(session_id.to_string()).or_default()
    }

    fn tool_approval(&mut self, session_id: &str, call_id: &str, waiting: bool) {
        match self.views.get_mut(session_id) {
            Some(view) => view.tool_approval(call_id, waiting),
            None => {
                self.unseen_calls(session_id).approval(call_id, waiting);
            }
        }
    }

    /// Moves a session's tool cursor up or down (see [`TranscriptView::select_tool`]).
    pub fn select_tool(&mut self, session_id: &str, up: bool, height: usize) -> bool {
        self.views
            .get_mut(session_id)
            .is_some_and(|v| v.select_tool(up, height))
    }

    /// Expands or collapses the tool call under a session's tool cursor; false when none is.
    pub fn toggle_tool(&mut self, session_id: &str, height: usize) -> bool {
        self.views
            .get_mut(session_id)
            .is_some_and(|v| v.toggle_selected(height))
    }

    /// Steps through a session's conversations: `-1` to the one before the conversation
    /// shown, `1` to the next (after the last earlier one: the current one again). What to
    /// say about it, or None when there is nowhere to go.
    pub fn browse(&mut self, session_id: &str, step: isize) -> Option<String> {
        let view = self.views.get(session_id)?;
        let count = view.earlier_count();
        let shown = match &self.browsing {
            Some(b) if b.session_id == session_id => b.index,
            _ => count,
        };
        let next = shown.checked_add_signed(step)?.min(count);
        if next == shown {
            return None;
        }
        if next == count {
            self.browsing = None;
            return Some("the current conversation".into());
        }
        self.browsing = Some(Browsing {
            session_id: session_id.to_string(),
            index: next,
            count,
            view: view.earlier_view(next)?,
        });
        Some(format!("conversation {}/{} (read-only)", next + 1, count + 1))
    }

    /// The view on screen for a session: an earlier conversation being browsed, or its own.
    fn shown_mut(&mut self, session_id: &str) -> Option<&mut TranscriptView> {
        match &mut self.browsing {
            Some(b) if b.session_id == session_id => Some(&mut b.view),
            _ => self.views.get_mut(session_id),
        }
    }

    /// Scrolls a session's transcript; positive is up (older text).
    pub fn scroll(&mut self, session_id: &str, lines: isize) {
        if let Some(v) = self.shown_mut(session_id) {
            if lines > 0 {
                v.scroll_up(lines as usize);
            } else {
                v.scroll_down(lines.unsigned_abs());
            }
        }
    }

    /// Scrolls a team's timeline; positive is up (older entries).
    pub fn scroll_timeline(&mut self, group_id: &str, lines: isize) {
        let scroll = self.timelines.entry(group_id.to_string()).or_default();
        if lines > 0 {
            scroll.scroll_up(lines as usize);
        } else {
            scroll.scroll_down(lines.unsigned_abs());
        }
    }

    /// To the top (`top`) or the bottom of a session's transcript (`Row::Session`) or a team's
    /// timeline.
    pub fn to_edge(&mut self, subject: Edge<'_>, top: bool) {
        match subject {
            Edge::Session(id) => {
                if let Some(v) = self.views.get_mut(id) {
                    if top {
                        v.scroll_up(usize::MAX);
                    } else {
                        v.follow();
                    }
                }
            }
            Edge::Timeline(id) => {
                let scroll = self.timelines.entry(id.to_string()).or_default();
                if top {
                    scroll.scroll_up(usize::MAX);
                } else {
                    scroll.set_scroll_from_bottom(0);
                }
            }
        }
    }

    /// Lines a team's timeline is scrolled up from its newest entry.
    pub fn timeline_scroll(&self, group_id: &str) -> usize {
        self.timelines
            .get(group_id)
            .map_or(0, CellScroll::scroll_from_bottom)
    }

    /// Back to the bottom of a session's transcript (something was just sent to it).
    pub fn follow(&mut self, session_id: &str) {
        if self.browsing.as_ref().is_some_and(|b| b.session_id == session_id) {
            self.browsing = None;
        }
        if let Some(v) = self.views.get_mut(session_id) {
            v.follow();
        }
    }

    /// Drops the transcripts of deleted sessions.
    pub fn forget<'a>(&mut self, sessions: impl IntoIterator<Item = &'a SessionId>) {
        for s in sessions {
            self.views.remove(s);
            self.unread.remove(s);
            self.unseen.remove(s);
        }
    }

    /// What the copy key copies: scrolled up, the message at the top of the window, else the
    /// last answer (raw transcript text).
    pub fn copy_text(&self, session_id: &str) -> Option<String> {
        let v = self.views.get(session_id)?;
        let in_view = (v.scroll_from_bottom() > 0)
            .then(|| v.top_message())
            .flatten()
            .map(|m| m.text.clone());
        in_view
            .or_else(|| v.last_answer().map(str::to_string))
            .filter(|t| !t.is_empty())
    }

    /// The session's last exchange that can be asked again: its user message's id and text
    /// (in the current conversation, not taken back already).
    pub fn last_exchange(&self, session_id: &str) -> Option<(String, String)> {
        let view = self.views.get(session_id)?;
        view.messages
            .iter()
            .rev()
            .find(|m| m.role == MessageRole::User && !m.superseded && !m.text.trim().is_empty())
            .and_then(|m| Some((m.id.clone()?, m.text.clone())))
    }

    /// The session's last prompt (the goal a reflection starts from when none is typed).
    pub fn last_prompt(&self, session_id: &str) -> Option<String> {
        self.views.get(session_id).and_then(|v| {
            v.messages
                .iter()
                .rev()
                .find(|m| m.role == MessageRole::User)
                .map(|m| m.text.clone())
        })
    }

    /// Opens the search line for a session's transcript.
    pub fn start_search(&mut self, session_id: SessionId) {
        self.search = Some(TranscriptSearch::new(session_id));
    }

    /// True while the search query is being typed (keys are text).
    pub fn typing_search(&self) -> bool {
        self.search.as_ref().is_some_and(|s| s.editing)
    }

    /// A key while the search query is typed. True when the query was submitted: the first
    /// match is to be jumped to.
    pub fn search_input(&mut self, key: KeyEvent) -> bool {
        let Some(s) = self.search.as_mut() else {
            return false;
        };
        let modified = key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => self.search = None,
            KeyCode::Enter if s.query.is_empty() => self.search = None,
            KeyCode::Enter => {
                s.editing = false;
                s.current = None;
                return true;
            }
            KeyCode::Backspace => {
                s.query.pop();
            }
            // Readline keys of a one-line field without a cursor: the query's end is the cursor.
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => s.query.clear(),
            KeyCode::Char('w') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                let kept = s.query.trim_end().rfind(char::is_whitespace).map_or(0, |i| i + 1);
                s.query.truncate(kept);
            }
            KeyCode::Char(c) if !modified => s.query.push(c),
            _ => {}
        }
        false
    }

    /// Jumps to the next (or previous) line with a match in a window of `inner`'s size,
    /// wrapping round. The first jump starts from the top of the window. Err: the query, which
    /// nothing matches.
    pub fn search_step(&mut self, forward: bool, inner: Rect) -> Result<(), String> {
        let Some(s) = self.search.as_mut().filter(|s| !s.editing) else {
            return Ok(());
        };
        let Some(view) = self.views.get_mut(&s.session_id) else {
            return Ok(());
        };
        let lines = view.all_lines(inner.width);
        let matches = search::matching_lines(&lines, &s.query);
        let height = inner.height as usize;
        let from = s.current.or_else(|| {
            // Just above the window's top line, so a match on screen is found first.
            let top = lines.len().saturating_sub(view.scroll_from_bottom() + height);
            if forward {
                top.checked_sub(1)
            } else {
                Some(top + height)
            }
        });
        let Some(target) = search::step(&matches, from, forward) else {
            s.position = None;
            return Err(s.query.clone());
        };
        s.current = Some(target);
        let index = matches.iter().position(|&m| m == target).unwrap_or(0);
        s.position = Some((index + 1, matches.len()));
        view.set_scroll_from_bottom(search::scroll_to_show(target, lines.len(), height));
        Ok(())
    }
}

/// What the centre pane draws.
pub struct Props<'a> {
    pub subject: Subject<'a>,
    pub focused: bool,
    pub keys: Keys,
    pub default_model: String,
    /// config.yaml names tool servers (a session without any is told how to choose them).
    pub tools_configured: bool,
}

/// The keys the pane's text tells the user to press (from the keymap, which can rebind them).
pub struct Keys {
    pub new_team: String,
    pub new_session: String,
    pub help: String,
    pub send: String,
    pub new_conversation: String,
    pub older: String,
    pub newer: String,
    pub set_tools: String,
}

/// What `Home`/`End` (`g`/`G`) move through.
#[derive(Debug, Clone, Copy)]
pub enum Edge<'a> {
    Session(&'a str),
    Timeline(&'a str),
}

/// What is selected.
pub enum Subject<'a> {
    /// Nothing: the welcome text.
    Nothing,
    Session {
        id: SessionId,
        /// A team member's handle, else the session's name.
        name: String,
        /// Its part in its team when its name does not say it (None: a worker, or a session
        /// of its own).
        role: Option<Role>,
        model: String,
        /// The model's context window in tokens, when known.
        window: Option<u64>,
        /// Characters of the system prompt the session sends.
        system_chars: usize,
        /// What its turns cost so far.
        cost: crate::model::Cost,
        /// Where it works and what it gets of the repository there.
        repo: Option<RepoHeader>,
        /// What confines the processes it starts (`sandbox: workspace-write, network on`);
        /// `None` when it starts none.
        sandbox: Option<String>,
        /// The tool servers it sees (config.yaml `mcp_servers:` names).
        tools: Vec<String>,
        /// The `a2a` provider it talks to, when its model is a remote A2A agent (the header
        /// shows its card).
        a2a: Option<String>,
    },
    Group {
        id: GroupId,
        group: Box<GroupInfo>,
        /// The run shown (from the team panel).
        cycle: Option<&'a CycleView>,
        /// Which run that is, when the team has others.
        run: Option<RunLabel>,
    },
}

/// A group as the pane shows it.
pub struct GroupInfo {
    pub name: String,
    /// The prefix of its members' names (kept across renames).
    pub members_slug: String,
    pub team: bool,
    pub mode: Mode,
    pub max_iterations: u32,
    pub repo: Option<PathBuf>,
    /// Each member's name and role.
    pub members: Vec<(String, Role)>,
    /// What members remember between runs.
    pub memory: crate::model::Memory,
    /// Each member's next request in tokens and its model's window, when its transcript is
    /// loaded (in the order of `members`).
    pub contexts: Vec<Option<(u64, Option<u64>)>>,
    /// What each member's turns cost so far (in the order of `members`).
    pub member_costs: Vec<crate::model::Cost>,
    /// What the group's sessions' turns cost so far, all runs and chats together.
    pub spent: crate::model::Cost,
    /// What the team's next run will probably cost, once worked out from its earlier runs.
    pub forecast: Option<(
        Option<crate::model::forecast::Forecast>,
        crate::model::forecast::Basis,
    )>,
}

/// The team's context line: each member whose transcript is loaded, with its tokens against
/// its window, coloured by the fullest. None when no member's transcript is loaded.
fn members_context_line(
    members: &[(String, Role)],
    contexts: &[Option<(u64, Option<u64>)>],
    team: &str,
) -> Option<(String, Style)> {
    let mut worst = ContextLevel::Fine;
    let parts: Vec<String> = members
        .iter()
        .zip(contexts)
        .filter_map(|((name, _), context)| {
            let (tokens, window) = (*context)?;
            let name = sanitize::display(naming::strip_team_prefix(name, team)).into_owned();
            Some(match window {
                Some(window) => {
                    let (percent, level) = context::context_level(tokens, window);
                    if level != ContextLevel::Fine
                        && (worst == ContextLevel::Fine || level == ContextLevel::Full)
                    {
                        worst = level;
                    }
                    format!(
                        "{name} {}/{} {percent}%",
                        short_count(tokens),
                        short_count(window)
                    )
                }
                None => format!("{name} ~{}", short_count(tokens)),
            })
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    let style = match worst {
        ContextLevel::Fine => Style::default().add_modifier(Modifier::DIM),
        ContextLevel::Warn => Style::default().fg(Color::Yellow),
        ContextLevel::Full => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
    };
    Some((format!("context: {}", parts.join(" · ")), style))
}

impl TranscriptPane {
    /// Draws the selected session's transcript (its layouts are kept for the next frame), the
    /// selected group, or the welcome text.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, props: &Props<'_>) {
        render(self, frame, area, props);
    }
}

fn render(pane_state: &mut TranscriptPane, frame: &mut Frame<'_>, area: Rect, props: &Props<'_>) {
    let focused = props.focused;
    match &props.subject {
        Subject::Session {
            id,
            name,
            role,
            model,
            window,
            system_chars,
            cost,
            repo,
            sandbox,
            tools,
            a2a,
        } => {
            let mut title = session_title(name, *role, model, cost);
            if let Some(card) = a2a.as_deref().and_then(|p| pane_state.agent_card_label(p)) {
                title.push_str(&format!("· {card} "));
            }
            if !tools.is_empty() {
                title.push_str(&format!("· tools: {} ", sanitize::display(&tools.join(", "))));
            }
            if let Some(sandbox) = sandbox {
                title.push_str(&format!("· {sandbox} "));
            }
            if let Some(label) = repo.as_ref().and_then(|r| pane_state.repo_label(r)) {
                title.push_str(&format!("· {} ", sanitize::display(&label)));
            }
            let meter = pane_state.views.get(id).map(|v| {
                let tokens = context::next_request_tokens(&v.messages, *system_chars);
                meter_line(tokens, *window, &props.keys.new_conversation)
            });
            let search = pane_state
                .search
                .as_ref()
                .filter(|s| s.session_id == *id)
                .map(|s| s.query.as_str());
            let view = match &mut pane_state.browsing {
                Some(b) if b.session_id == *id => {
                    title.push_str(&format!(
                        "· conversation {}/{} (read-only; {} newer) ",
                        b.index + 1,
                        b.count + 1,
                        props.keys.newer
                    ));
                    Some(&mut b.view)
                }
                _ => pane_state.views.get_mut(id),
            };
            render_session(frame, area, title, view, meter, search, props);
        }
        Subject::Group {
            id,
            group,
            cycle,
            run,
        } => {
            let scroll = pane_state.timelines.entry(id.clone()).or_default();
            let columns = result_columns(
                &mut pane_state.columns,
                id,
                *cycle,
                &group.members,
                &group.name,
                area.width.saturating_sub(2),
            );
            let shown = ShownRun {
                cycle: *cycle,
                label: run.as_ref(),
                columns,
                reveal: pane_state
                    .reveal_card
                    .take_if(|(g, _)| g == id)
                    .map(|(_, card)| card),
            };
            render_group(frame, area, group, shown, scroll, props);
        }
        Subject::Nothing => {
            let block = pane(" huddle ".into(), focused);
            let inner = block.inner(area);
            frame.render_widget(block, area);
            frame.render_widget(Paragraph::new(welcome(props)), inner);
        }
    }
}

fn welcome(props: &Props<'_>) -> Vec<Line<'static>> {
    let keys = &props.keys;
    let dim = Style::default().add_modifier(Modifier::DIM);
    vec![
        Line::styled(
            "Welcome to huddle.",
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Line::default(),
        Line::raw(format!("  {:<6} new team from a preset", keys.new_team)),
        Line::raw(format!(
            "  {:<6} new plain session (chat with one model)",
            keys.new_session
        )),
        Line::raw(format!("  {:<6} all keys", keys.help)),
        Line::default(),
        Line::styled(
            format!("Default model: {}", sanitize::display(&props.default_model)),
            dim,
        ),
    ]
}

/// ` name · role · model · $0.042 `: the session (a worker has no role), and what
/// its turns cost so far (like an agent's status line; unknown when its model has no price,
/// nothing before its first turn).
fn session_title(name: &str, role: Option<Role>, model: &str, cost: &crate::model::Cost) -> String {
    let sim = if model.starts_with("sim/") {
        " (simulated)"
    } else {
        ""
    };
    let spent = crate::describe::cost::short(cost)
        .filter(|_| !super::team_panel::free(cost))
        .map(|c| format!(" · {c}"))
        .unwrap_or_default();
    let role = role.map(|r| format!("{r} · ")).unwrap_or_default();
    format!(
        " {} · {role}{}{sim}{spent} ",
        sanitize::display(name),
        sanitize::display(model)
    )
}

/// The context meter: the next request's tokens against the model's window, yellow with a
/// hint from 80 %, red from 95 %.
pub fn meter_line(tokens: u64, window: Option<u64>, new_conversation_key: &str) -> Line<'static> {
    let Some(window) = window else {
        return Line::styled(
            format!(" context ~{} tokens ", short_count(tokens)),
            Style::default().add_modifier(Modifier::DIM),
        );
    };
    let (percent, level) = context::context_level(tokens, window);
    let size = format!("{}/{}", short_count(tokens), short_count(window));
    match level {
        ContextLevel::Fine => Line::styled(
            format!(" context {size} · {percent}% "),
            Style::default().add_modifier(Modifier::DIM),
        ),
        ContextLevel::Warn => Line::styled(
            format!(" context {size} · {percent}% full · {new_conversation_key} new conversation "),
            Style::default().fg(Color::Yellow),
        ),
        ContextLevel::Full => Line::styled(
            format!(
                " context {size} · {percent}% · about to overflow: {new_conversation_key} new conversation "
            ),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
    }
}

/// `950`, `12.3k`, `1.0M`.
fn short_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn render_session(
    frame: &mut Frame<'_>,
    area: Rect,
    title: String,
    view: Option<&mut TranscriptView>,
    meter: Option<Line<'static>>,
    search: Option<&str>,
    props: &Props<'_>,
) {
    let mut block = pane(title, props.focused);
    if let Some(meter) = meter {
        block = block.title_bottom(meter);
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let Some(view) = view else {
        frame.render_widget(Paragraph::new(Line::styled("loading…", dim)), inner);
        return;
    };
    if let Some(e) = &view.load_error {
        frame.render_widget(
            Paragraph::new(Line::styled(
                format!("cannot read the transcript: {}", sanitize::display(e)),
                Style::default().fg(Color::Red),
            )),
            inner,
        );
        return;
    }
    if !view.loaded && view.messages.is_empty() && view.streaming.is_none() {
        frame.render_widget(Paragraph::new(Line::styled("loading…", dim)), inner);
        return;
    }
    if view.messages.is_empty() && view.streaming.is_none() {
        let mut lines = vec![Line::styled(
            format!(
                "No messages yet. Write in the composer below and press {}.",
                props.keys.send
            ),
            dim,
        )];
        let no_tools = matches!(&props.subject, Subject::Session { tools, .. } if tools.is_empty());
        if no_tools && props.tools_configured {
            lines.push(Line::styled(
                format!(
                    "It has no tool servers: {} chooses which of config.yaml's it sees.",
                    props.keys.set_tools
                ),
                dim,
            ));
        }
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), inner);
        return;
    }
    let (mut lines, scroll) = view.visible_lines(inner.width, inner.height as usize);
    if let Some(query) = search.filter(|q| !q.is_empty()) {
        let mark = Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::REVERSED);
        lines = lines
            .into_iter()
            .map(|l| search::highlight(l, query, mark))
            .collect();
    }
    frame.render_widget(Paragraph::new(lines), inner);
    if scroll > 0 && inner.width > 12 {
        let tag = format!(" ↑{scroll} ");
        let x = inner.right().saturating_sub(tag.chars().count() as u16);
        frame.render_widget(
            Paragraph::new(Line::styled(tag, dim)),
            Rect::new(x, area.y, inner.right() - x, 1),
        );
        if view.new_below() && area.height > 1 {
            // New text arrived below while the reader looks further up; PgDn/End gets there.
            let tag = " ↓ new ";
            let x = inner.right().saturating_sub(tag.chars().count() as u16);
            frame.render_widget(
                Paragraph::new(Line::styled(
                    tag,
                    Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                )),
                Rect::new(x, area.bottom() - 1, inner.right() - x, 1),
            );
        }
    }
}

/// The run a team's pane shows: its view, which run it is, its result in columns (broadcast).
struct ShownRun<'a> {
    cycle: Option<&'a CycleView>,
    label: Option<&'a RunLabel>,
    columns: Option<&'a [Line<'static>]>,
    /// A card to scroll into view (its execution id).
    reveal: Option<String>,
}

fn render_group(
    frame: &mut Frame<'_>,
    area: Rect,
    group: &GroupInfo,
    shown: ShownRun<'_>,
    scroll: &mut CellScroll,
    props: &Props<'_>,
) {
    let ShownRun {
        cycle,
        label: run,
        columns,
        reveal,
    } = shown;
    let GroupInfo {
        name,
        members_slug,
        team,
        mode,
        max_iterations,
        repo,
        members,
        memory,
        contexts,
        member_costs,
        spent,
        forecast,
    } = group;
    // A run in progress shows the mode it runs in (a `--mode` override, say).
    let mode = cycle.filter(|c| c.running).and_then(|c| c.mode).unwrap_or(*mode);
    let team = *team;
    let title = if team {
        format!(" {} · {mode} · timeline ", sanitize::display(name))
    } else {
        format!(" {} ", sanitize::display(name))
    };
    let mut block = pane(title, props.focused);
    if let Some(run) = run {
        // On the border, so it stays in sight however far the timeline has scrolled.
        block = block.title_bottom(Line::styled(format!(" {} ", run.text()), run.style()));
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if !team {
        let lines = if members.is_empty() {
            welcome(props)
        } else {
            vec![Line::raw(format!(
                "{} session(s). Select one to see its transcript.",
                members.len()
            ))]
        };
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    }
    let dim = Style::default().add_modifier(Modifier::DIM);
    // The notes above the timeline (the team), then its entries.
    let mut notes: Vec<(String, Style)> = Vec::new();
    let mut header = format!("{} member(s)", members.len());
    if mode.spec().iterates {
        header.push_str(&format!(" · max {max_iterations} iterations"));
    }
    // Where members always keep their conversation (a pipeline) the setting does not apply.
    if mode.spec().uses_memory {
        header.push_str(&format!(" · memory: {memory}"));
    }
    if let Some(spent) = crate::describe::cost::short(spent).filter(|_| !super::team_panel::free(spent)) {
        header.push_str(&format!(" · spent {spent}"));
    }
    if let Some((Some(f), _)) = forecast {
        header.push_str(&format!(" · {}", crate::describe::cost::forecast_short(f)));
    }
    // Last: a path may be long.
    if let Some(r) = repo {
        header.push_str(&format!(" · {}", sanitize::display(&r.display().to_string())));
    }
    notes.push((header, dim));
    let team = members_slug.as_str();
    let members_line = members
        .iter()
        .enumerate()
        .map(|(i, (n, r))| {
            let n = naming::strip_team_prefix(n, team);
            // What the member spent so far, where it spent anything.
            let cost = member_costs
                .get(i)
                .and_then(crate::describe::cost::compact)
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            match r {
                Role::Worker => format!("{}{cost}", sanitize::display(n)),
                other => format!("{} ({other}){cost}", sanitize::display(n)),
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    notes.push((members_line, dim));
    notes.extend(members_context_line(members, contexts, team));
    notes.push((String::new(), Style::default()));
    let timeline = cycle.map_or(&[][..], |c| &c.timeline[..]);
    if timeline.is_empty() {
        notes.push((
            format!(
                "No runs yet. Write a prompt below and press {} to run the team ({mode}).",
                props.keys.send
            ),
            Style::default(),
        ));
    }
    // Before the first run shown of a team that ran before (or whose preset's teams did): what
    // it will probably cost, and what that goes by (later the header and the panel say it).
    if let Some((Some(f), basis)) = forecast.as_ref().filter(|_| timeline.is_empty()) {
        let line = crate::describe::cost::forecast_line(Some(f));
        notes.push((format!("forecast of the next run: {}", line.text), dim));
        let basis = crate::describe::cost::forecast_basis(Some(f), basis);
        notes.push((format!("  {}", basis.text), dim));
        notes.push((String::new(), Style::default()));
    }
    // A sub-agent card's line is made each frame (its duration ticks while it runs).
    let cards = cycle.map(|c| &c.cards);
    let now = std::time::Instant::now();
    let headers: Vec<Option<(String, Style)>> = timeline
        .iter()
        .map(|entry| {
            let card = cards?.get(entry.card.as_deref()?)?;
            let selected = cards?.selected.as_deref() == Some(card.exec.id.as_str());
            let style = if selected {
                card.style().add_modifier(Modifier::REVERSED)
            } else {
                card.style()
            };
            Some((card.header(now), style))
        })
        .collect();
    let result = cycle.and_then(|c| c.result.as_deref());
    let result_cells = result.into_iter().flat_map(|text| {
        [
            Cell::Timeline {
                text: "",
                style: Style::default(),
            },
            Cell::Timeline {
                text: "── result ──",
                style: Style::default().add_modifier(Modifier::BOLD),
            },
            match columns {
                Some(lines) => Cell::Lines(lines),
                None => Cell::Markdown(text),
            },
        ]
    });
    let mut cells: Vec<Cell<'_>> = notes
        .iter()
        .map(|(text, style)| Cell::Timeline { text, style: *style })
        .collect();
    // The cells of the card to bring into view: its line and its last.
    let mut revealed: Option<(usize, usize)> = None;
    for (entry, header) in timeline.iter().zip(&headers) {
        let card = entry.card.as_deref().and_then(|id| cards?.get(id));
        match (header, card) {
            (Some((text, style)), Some(card)) => {
                let at = cells.len();
                cells.push(Cell::Timeline { text, style: *style });
                if card.expanded {
                    cells.extend(
                        card.body_lines()
                            .map(|(text, style)| Cell::Timeline { text, style }),
                    );
                }
                if reveal.as_deref() == Some(card.exec.id.as_str()) {
                    revealed = Some((at, cells.len() - 1));
                }
            }
            _ => cells.push(Cell::Timeline {
                text: &entry.text,
                style: kind_style(&entry.kind),
            }),
        }
    }
    cells.extend(result_cells);
    // Laid out fresh each frame (a few hundred short lines and the result, only the visible
    // part), at the reader's scroll position (0 follows the newest).
    scroll.clear();
    if let Some((head, last)) = revealed {
        // The card's end in view, then its line (which wins when the card is taller).
        scroll.scroll_to_cell(&cells[..], last, inner.height as usize);
        scroll.scroll_to_cell(&cells[..], head, inner.height as usize);
    }
    let (lines, _) = scroll.visible_lines(&cells[..], inner.width, inner.height as usize);
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    fn finished(session_id: &str, answer: &str) -> EventKind {
        EventKind::TurnFinished {
            session_id: session_id.into(),
            session: session_id.into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 1,
            usage: None,
            error: None,
            message: Some(std::sync::Arc::new(Message::assistant(answer))),
            cost_usd: None,
        }
    }

    fn loaded(messages: Vec<Message>) -> Result<LoadedTranscript, String> {
        Ok(LoadedTranscript {
            messages,
            warnings: Vec::new(),
        })
    }

    #[test]
    fn a_transcript_is_read_once_and_answers_elsewhere_are_unread() {
        let mut pane = TranscriptPane::default();
        assert!(pane.show(Some("a")), "first shown: read it");
        assert!(!pane.show(Some("a")));
        assert!(pane.show(Some("b")));
        pane.loaded("a".into(), loaded(vec![Message::user("q")]));
        pane.loaded("b".into(), loaded(Vec::new()));
        pane.on_event(&finished("a", "for a"), |id| id == "b");
        pane.on_event(&finished("b", "for b"), |id| id == "b");
        assert!(pane.unread.contains("a") && !pane.unread.contains("b"));
        assert_eq!(pane.copy_text("a").as_deref(), Some("for a"));
        assert_eq!(pane.last_prompt("a").as_deref(), Some("q"));
        assert!(!pane.show(Some("a")));
        assert!(pane.unread.is_empty(), "looked at");
        pane.forget([&"a".to_string()]);
        assert!(pane.show(Some("a")), "deleted and shown again: read again");
    }

    #[test]
    fn the_search_jumps_between_matches_and_ends_with_its_session() {
        let mut pane = TranscriptPane::default();
        pane.show(Some("a"));
        let mut messages: Vec<Message> = (0..40)
            .map(|i| Message::assistant(format!("filler {i}")))
            .collect();
        messages.insert(5, Message::assistant("the needle"));
        pane.loaded("a".into(), loaded(messages));
        let window = Rect::new(0, 0, 40, 10);
        pane.start_search("a".into());
        assert!(pane.typing_search());
        for c in "NEEDLE".chars() {
            assert!(!pane.search_input(KeyEvent::from(KeyCode::Char(c))));
        }
        assert!(pane.search_input(KeyEvent::from(KeyCode::Enter)));
        assert_eq!(pane.search_step(true, window), Ok(()));
        assert_eq!(pane.search.as_ref().and_then(|s| s.position), Some((1, 1)));
        assert!(
            pane.views["a"].scroll_from_bottom() > 0,
            "scrolled up to the match"
        );
        pane.start_search("a".into());
        for c in "zebra".chars() {
            pane.search_input(KeyEvent::from(KeyCode::Char(c)));
        }
        pane.search_input(KeyEvent::from(KeyCode::Enter));
        assert_eq!(pane.search_step(true, window), Err("zebra".into()));
        pane.show(Some("b"));
        assert!(pane.search.is_none(), "another session shown");
    }
}
