//! The sidebar: the tree of groups and sessions and its cursor (the selection), folding, and
//! its drawing: mode, role, model, busy spinner, repo-preset marker, unread marker, cycle state;
//! a folded group (▸) shows its session count and spins while any of its sessions is busy; `?`
//! marks a session (or folded group) whose tool call waits for the user's approval. The
//! sidebar also says which row a screen line shows. It reads the organization; a fold is
//! carried out by the app (through `Edits`), then the cursor lands on the folded group.

use std::collections::HashMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::widgets::{inner, pane, spinner};
use crate::describe::Names;
use crate::model::{Group, GroupId, GroupKind, Organization, Role, Session, SessionId};
use crate::naming;
use crate::text::sanitize;
use crate::tui::cycle_view::CycleView;
use crate::tui::worktree_marks::Mark;

/// A row of the sidebar tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    Group(GroupId),
    Session(SessionId),
}

/// The sidebar's state: which row is selected.
#[derive(Debug, Default)]
pub struct Sidebar {
    /// Index into [`rows_of`] the organization.
    pub cursor: usize,
}

/// What the cursor is on: its row, that row's group, and the session when the row is one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub row: Option<Row>,
    pub group: Option<GroupId>,
    pub session: Option<SessionId>,
}

/// A fold the sidebar asks the app to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    pub group_id: GroupId,
    /// Fold (true) or unfold.
    pub fold: bool,
    /// The cursor was on one of the group's sessions (the selection changes to the group).
    pub from_session: bool,
}

impl Sidebar {
    pub fn selected_row(&self, o: &Organization) -> Option<Row> {
        rows_of(o).get(self.cursor).cloned()
    }

    /// The group of the selected row.
    pub fn selected_group_id(&self, o: &Organization) -> Option<GroupId> {
        match self.selected_row(o)? {
            Row::Group(id) => Some(id),
            Row::Session(id) => o.session(&id).map(|s| s.group_id.clone()),
        }
    }

    pub fn selected_session_id(&self, o: &Organization) -> Option<SessionId> {
        match self.selected_row(o)? {
            Row::Session(id) => Some(id),
            Row::Group(_) => None,
        }
    }

    /// The selection, read once.
    pub fn selection(&self, o: &Organization) -> Selection {
        let row = self.selected_row(o);
        let (group, session) = match &row {
            Some(Row::Group(id)) => (Some(id.clone()), None),
            Some(Row::Session(id)) => (o.session(id).map(|s| s.group_id.clone()), Some(id.clone())),
            None => (None, None),
        };
        Selection { row, group, session }
    }

    /// Puts the cursor on the remembered selection: the session, or its group when that is
    /// folded (or the session is gone).
    pub fn restore(&mut self, o: &Organization) {
        let wanted = [
            o.ui.selected_session.clone().map(Row::Session),
            o.ui.selected_group.clone().map(Row::Group),
        ];
        let rows = rows_of(o);
        if let Some(i) = wanted
            .into_iter()
            .flatten()
            .find_map(|w| rows.iter().position(|r| *r == w))
        {
            self.cursor = i;
        }
    }

    /// Puts the cursor on `row` if it is listed; true if it was.
    pub fn select(&mut self, o: &Organization, row: &Row) -> bool {
        match rows_of(o).iter().position(|r| r == row) {
            Some(i) => {
                self.cursor = i;
                true
            }
            None => false,
        }
    }

    /// Moves the cursor by `delta` rows, stopping at the ends; true if it moved.
    pub fn move_by(&mut self, o: &Organization, delta: isize) -> bool {
        let n = rows_of(o).len();
        if n == 0 {
            return false;
        }
        let next = (self.cursor as isize + delta).clamp(0, n as isize - 1) as usize;
        let moved = next != self.cursor;
        self.cursor = next;
        moved
    }

    /// A click on row `i`: true if that selects another row.
    pub fn click(&mut self, o: &Organization, i: usize) -> bool {
        if i == self.cursor || i >= rows_of(o).len() {
            return false;
        }
        self.cursor = i;
        true
    }

    /// Keeps the cursor on a row after rows went away.
    pub fn clamp(&mut self, o: &Organization) {
        self.cursor = self.cursor.min(rows_of(o).len().saturating_sub(1));
    }

    /// The fold that folds (`Some(true)`), unfolds (`Some(false)`) or toggles the selected
    /// group, or the group of the selected session; None when nothing would change.
    pub fn fold(&self, o: &Organization, collapse: Option<bool>) -> Option<Fold> {
        let (group_id, from_session) = match self.selected_row(o)? {
            Row::Group(id) => (id, false),
            Row::Session(id) => (o.session(&id)?.group_id.clone(), true),
        };
        let folded = o.ui.collapsed_groups.contains(&group_id);
        let fold = collapse.unwrap_or(!folded);
        (fold != folded).then_some(Fold {
            group_id,
            fold,
            from_session,
        })
    }
}

/// The sidebar rows of an organization: each group (by sort order, the default group first),
/// then its sessions unless the group is folded.
pub fn rows_of(o: &Organization) -> Vec<Row> {
    let mut groups: Vec<&Group> = o.groups.iter().collect();
    groups.sort_by_key(|g| (g.kind != GroupKind::Default, g.sort_order));
    let mut by_group: HashMap<&str, Vec<&Session>> = HashMap::new();
    for s in &o.sessions {
        by_group.entry(s.group_id.as_str()).or_default().push(s);
    }
    let mut rows = Vec::with_capacity(o.groups.len() + o.sessions.len());
    for g in groups {
        rows.push(Row::Group(g.id.clone()));
        if o.ui.collapsed_groups.contains(&g.id) {
            continue;
        }
        if let Some(list) = by_group.get_mut(g.id.as_str()) {
            list.sort_by_key(|s| s.order);
            rows.extend(list.iter().map(|s| Row::Session(s.id.clone())));
        }
    }
    rows
}

/// What is going on right now, per group and session, as the sidebar marks it. The app
/// answers from its run state; the sidebar never sees the app. Answers must not lock the
/// organization: the sidebar asks while it reads it.
pub trait Activity {
    fn group_running(&self, group_id: &str) -> bool;
    fn cycle(&self, group_id: &str) -> Option<&CycleView>;
    fn session_busy(&self, session_id: &str) -> bool;
    /// The session's own run (a reflection) is paused: no spinner.
    fn session_paused(&self, _session_id: &str) -> bool {
        false
    }
    /// A turn of the session waits for a rate or usage limit: an hourglass, no spinner.
    fn session_waiting(&self, _session_id: &str) -> bool {
        false
    }
    fn unread(&self, session_id: &str) -> bool;
    /// A tool call of the session waits for the user's approval.
    fn awaiting_approval(&self, session_id: &str) -> bool;
    /// The state of the session's worktree, when it has been looked at.
    fn worktree_mark(&self, session_id: &str) -> Option<&Mark>;
}

/// What the sidebar draws.
pub struct Props<'a> {
    pub org: &'a Organization,
    pub rows: &'a [Row],
    /// The first row on screen (from the frame's layout).
    pub offset: usize,
    pub focused: bool,
    pub tick: usize,
    pub activity: &'a dyn Activity,
}

/// The first row shown so that `cursor` is visible in `height` rows.
pub fn first_row(cursor: usize, height: usize) -> usize {
    (cursor + 1).saturating_sub(height.max(1))
}

/// The index of the row drawn on screen line `y` of the sidebar at `area` (inside its border),
/// or None on the border. The index may be past the last row (empty space below the tree).
pub fn row_at(area: Rect, offset: usize, y: u16) -> Option<usize> {
    let inner = inner(area);
    (y >= inner.y && y < inner.bottom()).then(|| offset + (y - inner.y) as usize)
}

impl Sidebar {
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, props: &Props<'_>) {
        render(frame, area, props, self.cursor);
    }
}

fn render(frame: &mut Frame<'_>, area: Rect, props: &Props<'_>, cursor: usize) {
    if area.width == 0 {
        return;
    }
    let block = pane(" Groups ".into(), props.focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // Each visible team's member names, made once per draw (not once per member row).
    let mut names: HashMap<&str, Names> = HashMap::new();
    for row in props.rows.iter().skip(props.offset).take(inner.height as usize) {
        if let Row::Session(id) = row
            && let Some(s) = props.org.session(id)
            && !names.contains_key(s.group_id.as_str())
            && props.org.group(&s.group_id).is_some_and(|g| g.is_team())
        {
            names.insert(s.group_id.as_str(), Names::of_members(props.org, &s.group_id));
        }
    }
    let lines: Vec<Line<'static>> = props
        .rows
        .iter()
        .enumerate()
        .skip(props.offset)
        .take(inner.height as usize)
        .map(|(i, row)| {
            let line = row_line(props, row, &names, inner.width as usize);
            match (i == cursor, props.focused) {
                (false, _) => line,
                (true, true) => line.style(Style::default().add_modifier(Modifier::REVERSED)),
                (true, false) => line.style(Style::default().add_modifier(Modifier::UNDERLINED)),
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// One row of the tree.
fn row_line(props: &Props<'_>, row: &Row, names: &HashMap<&str, Names>, width: usize) -> Line<'static> {
    let Props {
        org: o,
        tick,
        activity,
        ..
    } = *props;
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut spans: Vec<Span<'static>> = Vec::new();
    match row {
        Row::Group(id) => {
            let Some(g) = o.group(id) else {
                return Line::default();
            };
            let cycle = activity.cycle(id);
            let folded = o.ui.collapsed_groups.contains(id);
            let members: Vec<&str> = o
                .sessions
                .iter()
                .filter(|s| s.group_id == *id)
                .map(|s| s.id.as_str())
                .collect();
            let state = if activity.group_running(id) {
                if cycle.is_some_and(|c| c.paused) {
                    "⏸ ".to_string()
                } else if cycle.is_some_and(|c| !c.limit_waits.is_empty()) {
                    "⏳ ".to_string()
                } else {
                    format!("{} ", spinner(tick))
                }
            } else if cycle.is_some_and(|c| c.interrupted) {
                "! ".to_string()
            } else if folded && members.iter().any(|s| activity.session_busy(s)) {
                // The busy sessions are hidden: the group spins for them.
                format!("{} ", spinner(tick))
            } else if folded {
                "▸ ".to_string()
            } else {
                "▾ ".to_string()
            };
            spans.push(Span::raw(state));
            let name = sanitize::display(&headless_label(&g.name, g.headless_at.is_some())).into_owned();
            spans.push(Span::styled(name, Style::default().add_modifier(Modifier::BOLD)));
            if g.source_preset.as_deref().is_some_and(|p| p.starts_with("repo:")) {
                spans.push(Span::styled(" ◈", Style::default().fg(Color::Cyan)));
            }
            if folded {
                spans.push(Span::styled(format!(" ({})", members.len()), dim));
                if members.iter().any(|s| activity.unread(s)) {
                    spans.push(Span::styled(" ●", Style::default().fg(Color::Cyan)));
                }
                if members.iter().any(|s| activity.awaiting_approval(s)) {
                    spans.push(approval_mark());
                }
            }
            let mode_at = spans.len();
            if g.is_team() {
                spans.push(Span::styled(format!(" {}", g.mode.spec().label), dim));
                // What the team's runs cost so far (unknown or at least, said so).
                if let Some(cost) = crate::describe::cost::compact(&g.cost) {
                    spans.push(Span::styled(format!(" {cost}"), dim));
                }
                if !g.worktrees.is_shared() {
                    spans.push(Span::styled(" ⎇", Style::default().fg(Color::Magenta)));
                }
            } else if g.kind == GroupKind::Repo {
                spans.push(Span::styled(" repo", dim));
            }
            // A row too long for the sidebar keeps the name (a headless run's starts with when
            // it ran, which tells runs apart) and what the runs cost: the mode goes (the
            // team's header says it), then the name gives way down to 20 columns, ending in
            // `…` so that the cut shows.
            let width_of = |spans: &[Span<'_>]| spans.iter().map(Span::width).sum::<usize>();
            if g.is_team() && width_of(&spans) > width {
                spans.remove(mode_at);
            }
            let total = width_of(&spans);
            if total > width {
                let rest = total - spans[1].width();
                let room = width
                    .saturating_sub(rest)
                    .max(20)
                    .min(width.saturating_sub(spans[0].width()));
                let cut = crate::text::clip(&spans[1].content, room);
                spans[1].content = cut.into();
            }
        }
        Row::Session(id) => {
            let Some(s) = o.session(id) else {
                return Line::default();
            };
            let busy = activity.session_busy(id);
            spans.push(Span::raw(if activity.session_paused(id) {
                "  ⏸ ".to_string()
            } else if activity.session_waiting(id) {
                "  ⏳ ".to_string()
            } else if busy {
                format!("  {} ", spinner(tick))
            } else {
                "  · ".to_string()
            }));
            // Team members' names repeat the team's; show the distinct part.
            let team = o
                .group(&s.group_id)
                .filter(|g| g.is_team())
                .map(|g| g.members_slug())
                .unwrap_or_default();
            // A member made from a preset goes by its handle (`analyst`), also when its
            // session's name had to be made unique (`analyst-2`); mode `team`'s chair by its
            // display name.
            let handle = names.get(s.group_id.as_str()).and_then(|n| n.known(&s.name));
            let shown = match handle {
                Some(handle) => handle,
                None if team.is_empty() => s.name.as_str(),
                None => {
                    let siblings = o
                        .sessions
                        .iter()
                        .filter(|m| m.group_id == s.group_id)
                        .map(|m| m.name.as_str());
                    member_label(&s.name, &team, siblings)
                }
            };
            spans.push(Span::raw(sanitize::display(shown).into_owned()));
            // The role, unless the name already says it.
            match s.role {
                Role::Orchestrator if shown != "orchestrator" => {
                    spans.push(Span::styled(" orch", Style::default().fg(Color::Cyan)))
                }
                Role::Evaluator if shown != "evaluator" => {
                    spans.push(Span::styled(" eval", Style::default().fg(Color::Cyan)))
                }
                _ => {}
            }
            if activity.unread(id) {
                spans.push(Span::styled(" ●", Style::default().fg(Color::Cyan)));
            }
            if activity.awaiting_approval(id) {
                spans.push(approval_mark());
            }
            if let Some(wt) = &s.worktree {
                spans.extend(worktree_spans(activity.worktree_mark(id)));
                // The branch when it fits; else just the mark (the diff view names it).
                let branch =
                    sanitize::display(crate::naming::strip_team_prefix(wt.label(), &team)).into_owned();
                let used: usize = spans.iter().map(Span::width).sum();
                let shown = if used + 2 + branch.chars().count() <= width {
                    format!(" ⎇{branch}")
                } else {
                    " ⎇".to_string()
                };
                spans.push(Span::styled(shown, Style::default().fg(Color::Magenta)));
            }
            // A session of its own says what it spent (a team's members: their team's row and
            // the team's header).
            if team.is_empty()
                && let Some(cost) = crate::describe::cost::compact(&s.cost)
            {
                spans.push(Span::styled(format!(" {cost}"), dim));
            }
            spans.push(Span::styled(format!(" {}", sanitize::display(&s.model)), dim));
        }
    }
    Line::from(spans)
}

/// A team `huddle run` made (`Research Panel · run Nov 27 17:39 (2)`) as its row shows it:
/// when it ran first (`Nov 27 17:39 (2) · Research Panel`), so that a row cut to the sidebar's
/// width still tells the runs of one preset apart. Another name is shown as it is.
fn headless_label(name: &str, headless: bool) -> std::borrow::Cow<'_, str> {
    match name.split_once(" · run ").filter(|_| headless) {
        Some((preset, when)) if !preset.is_empty() && !when.is_empty() => format!("{when} · {preset}").into(),
        _ => name.into(),
    }
}

/// A worktree's state after its session's name (then its branch, the part after `huddle/`
/// less the team's name, or only `⎇` when that does not fit): `±` uncommitted changes, `↑N` unmerged
/// commits, `✗` its folder is gone, `!` it could not be looked at; nothing when clean or not
/// looked at yet.
fn worktree_spans(mark: Option<&Mark>) -> Vec<Span<'static>> {
    let Some(m) = mark else {
        return Vec::new();
    };
    let mut spans = Vec::new();
    if m.error.is_some() {
        spans.push(Span::styled(" !", Style::default().fg(Color::Red)));
    }
    if m.gone {
        spans.push(Span::styled(" ✗", Style::default().fg(Color::Red)));
    }
    if m.changes > 0 {
        spans.push(Span::styled(" ±", Style::default().fg(Color::Yellow)));
    }
    if m.unmerged > 0 {
        spans.push(Span::styled(
            format!(" ↑{}", m.unmerged),
            Style::default().fg(Color::Green),
        ));
    }
    spans
}

/// A team member's distinct part of its name: without the team's slug (`<team-slug>-<role>`),
/// or, when the team was renamed after the member was made, without the prefix the members'
/// names share (up to a `-`), so that rows stay distinguishable.
fn member_label<'a>(name: &'a str, team_slug: &str, siblings: impl Iterator<Item = &'a str>) -> &'a str {
    let stripped = naming::strip_team_prefix(name, team_slug);
    if stripped.len() < name.len() {
        return stripped;
    }
    let mut common: Option<&str> = None;
    let mut others = 0;
    for sibling in siblings.filter(|n| *n != name) {
        others += 1;
        let prefix = common.unwrap_or(name);
        let shared = prefix
            .char_indices()
            .zip(sibling.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, c), _)| i + c.len_utf8());
        common = Some(&name[..shared]);
    }
    let Some(common) = common.filter(|_| others > 0) else {
        return name;
    };
    // Only whole words of the prefix: up to its last `-`.
    match common.rfind('-') {
        Some(i) if i + 1 < name.len() => &name[i + 1..],
        _ => name,
    }
}

/// After a session waiting for the user's approval of a tool call (or its folded group).
fn approval_mark() -> Span<'static> {
    Span::styled(
        " ?",
        Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_rows_stay_distinct_after_a_team_rename() {
        let names = [
            "code-review-team-orchestrator",
            "code-review-team-security",
            "code-review-team-style",
        ];
        let label = |n: &'static str, slug: &str| member_label(n, slug, names.iter().copied());
        assert_eq!(label(names[1], "code-review-team"), "security");
        // Renamed to "Reviewers": the slug no longer matches; the shared prefix goes.
        assert_eq!(label(names[1], "reviewers"), "security");
        assert_eq!(label(names[2], "reviewers"), "style");
        assert_eq!(label(names[0], "reviewers"), "orchestrator");
        // A lone member keeps its name.
        assert_eq!(
            member_label("x-solo", "other", std::iter::once("x-solo")),
            "x-solo"
        );
    }

    /// Headless teams lead with when they ran, so a cut row still tells them apart (issue 28
    /// item 19).
    #[test]
    fn a_headless_team_leads_with_when_it_ran() {
        assert_eq!(
            headless_label("Research Panel · run Nov 27 17:39 (2)", true),
            "Nov 27 17:39 (2) · Research Panel"
        );
        assert_eq!(
            headless_label("Research Panel · run Nov 27 17:39 (2)", false),
            "Research Panel · run Nov 27 17:39 (2)",
            "a team the user named so keeps its name"
        );
        assert_eq!(headless_label("Incidents", true), "Incidents");
    }

    /// Nothing runs, nothing is unread.
    struct Idle;

    impl Activity for Idle {
        fn group_running(&self, _: &str) -> bool {
            false
        }
        fn cycle(&self, _: &str) -> Option<&CycleView> {
            None
        }
        fn session_busy(&self, _: &str) -> bool {
            false
        }
        fn unread(&self, _: &str) -> bool {
            false
        }
        fn awaiting_approval(&self, _: &str) -> bool {
            false
        }
        fn worktree_mark(&self, _: &str) -> Option<&Mark> {
            None
        }
    }

    /// A headless team's row cut to the sidebar's width ends its name in `…` (review 28: it was
    /// cut hard, `(2) · Researc`), with or without a cost after it; one that fits is whole.
    #[test]
    fn a_team_row_too_wide_shows_where_its_name_was_cut() {
        let mut o = Organization::default();
        crate::model::reconcile::reconcile(&mut o);
        let mut team = Group::new("Research Panel · run Nov 28 09:46 (2)", GroupKind::Team);
        team.headless_at = Some(chrono::DateTime::default());
        let id = team.id.clone();
        o.groups.push(team);
        let props = Props {
            org: &o,
            rows: &[],
            offset: 0,
            focused: false,
            tick: 0,
            activity: &Idle,
        };
        let row = |width| {
            let line = row_line(&props, &Row::Group(id.clone()), &HashMap::new(), width);
            line.spans.iter().map(|s| s.content.as_ref()).collect::<String>()
        };
        assert_eq!(row(26), "▾ Nov 28 09:46 (2) · Rese…");
        assert_eq!(row(60), "▾ Nov 28 09:46 (2) · Research Panel broadcast");
    }

    /// The default group with two sessions, and a team with one, in that order.
    fn org() -> (Organization, GroupId, SessionId) {
        let mut o = Organization::default();
        crate::model::reconcile::reconcile(&mut o);
        let default = o.default_group().map(|g| g.id.clone()).unwrap_or_default();
        let mut team = Group::new("Team", GroupKind::Team);
        team.sort_order = 1;
        let team_id = team.id.clone();
        o.groups.push(team);
        for (i, (name, group)) in [("a", &default), ("b", &default), ("t-w", &team_id)]
            .into_iter()
            .enumerate()
        {
            let mut s = Session::new(name, group, "sim/demo");
            s.order = i as i64;
            o.sessions.push(s);
        }
        let worker = o.sessions[2].id.clone();
        (o, team_id, worker)
    }

    #[test]
    fn the_cursor_moves_within_the_rows_and_restores_the_selection() {
        let (mut o, team, worker) = org();
        let mut sidebar = Sidebar::default();
        assert_eq!(rows_of(&o).len(), 5);
        assert!(!sidebar.move_by(&o, -1), "already at the top");
        assert!(sidebar.move_by(&o, 10));
        assert_eq!(sidebar.selected_row(&o), Some(Row::Session(worker.clone())));
        assert_eq!(sidebar.selected_group_id(&o), Some(team.clone()));
        assert!(!sidebar.click(&o, 4), "the row already selected");
        assert!(!sidebar.click(&o, 9), "below the last row");
        // A folded group hides its sessions: the remembered session restores to its group.
        o.ui.selected_session = Some(worker);
        o.ui.selected_group = Some(team.clone());
        o.ui.collapsed_groups.push(team.clone());
        let mut restored = Sidebar::default();
        restored.restore(&o);
        assert_eq!(restored.selected_row(&o), Some(Row::Group(team)));
        assert_eq!(restored.selected_session_id(&o), None);
    }

    #[test]
    fn folding_asks_for_the_group_of_the_selection_and_only_for_a_change() {
        let (o, team, worker) = org();
        let mut sidebar = Sidebar::default();
        assert!(sidebar.select(&o, &Row::Session(worker)));
        let fold = sidebar.fold(&o, None).expect("a fold");
        assert_eq!(
            fold,
            Fold {
                group_id: team.clone(),
                fold: true,
                from_session: true
            }
        );
        assert_eq!(sidebar.fold(&o, Some(false)), None, "already unfolded");
        assert!(sidebar.select(&o, &Row::Group(team)));
        assert!(!sidebar.fold(&o, Some(true)).expect("a fold").from_session);
    }

    #[test]
    fn first_row_keeps_the_cursor_visible() {
        assert_eq!(first_row(0, 10), 0);
        assert_eq!(first_row(9, 10), 0);
        assert_eq!(first_row(10, 10), 1);
    }

    #[test]
    fn row_at_skips_the_border_and_counts_from_the_offset() {
        let area = Rect::new(0, 2, 20, 6);
        assert_eq!(row_at(area, 0, 2), None, "top border");
        assert_eq!(row_at(area, 0, 3), Some(0));
        assert_eq!(row_at(area, 5, 6), Some(8));
        assert_eq!(row_at(area, 0, 7), None, "bottom border");
    }
}
