//! The team worktrees controller: the strategy step of the new-team dialog, the sidebar's
//! statuses (refreshed when a team is selected, after a worktree session's turn, after a merge,
//! and every few seconds for the selected team; never per frame), the diff view, bringing work
//! back (plan, confirm, merge), and deleting a team whose worktrees hold work. Everything git
//! does runs in the runtime, off the UI thread; results come back as events.

use super::{Cx, Then};
use crate::model::{GroupId, Organization, Preset, Worktree, WorktreeStrategy};
use crate::presets::Catalog;
use crate::tui::action::{Action, Context};
use crate::tui::command::{AppEvent, Command};
use crate::tui::dialogs::diff_view::{DiffContent, DiffTab};
use crate::tui::dialogs::{
    Choice, ChoiceAction, ChoiceOption, ConfirmAction, Dialog, DiffView, ListItem, ListPicker, PickPurpose,
};
use crate::tui::layout::Focus;
use crate::tui::sidebar::Row;
use crate::tui::worktree_marks::{Mark, WorktreeMarks};
use crate::workspace::{AtRisk, RemovalReport, WorktreeChoice};
use crate::worktrees::{MergeMethod, MergeOutcome, MergePlan, WorktreeError};

/// The title of the notice for a deleted team's files whose removal a host did not answer.
const REMOVAL_UNCONFIRMED: &str = "Removal not confirmed";

/// Ends what is said of a team the host did not confirm in time (it may still be made).
pub const MAY_APPEAR: &str = "The team may still appear: it shows once the host sends it.";

/// The strategies offered, in order, with what each makes.
const STRATEGIES: [(WorktreeStrategy, &str); 4] = [
    (
        WorktreeStrategy::Shared,
        "everyone works in the repository itself (no worktree)",
    ),
    (
        WorktreeStrategy::GroupShared,
        "one worktree and branch for the whole team",
    ),
    (
        WorktreeStrategy::OrchestratorIsolated,
        "one for the orchestrator (and evaluator), one shared by the workers",
    ),
    (
        WorktreeStrategy::FullyIsolated,
        "one for the orchestrator (and evaluator) and one per worker",
    ),
];

/// Worktrees to show or merge: each once, with who works there.
pub struct Listed {
    pub title: String,
    pub list: Vec<(Worktree, Vec<String>)>,
}

/// The controller's state: the sidebar's marks and their refreshes, whether the repository
/// can have worktrees, the teams being made.
#[derive(Debug, Default)]
pub struct Worktrees {
    marks: WorktreeMarks,
    /// The repository can have worktrees (`Ok`), cannot (why), or not known yet.
    pub git: Option<Result<(), String>>,
    /// Teams whose worktrees are being made (preset names), for the status line.
    pub creating: Vec<String>,
    /// The last group whose statuses a selection asked for (moving within it asks nothing).
    last_selected: Option<GroupId>,
}

/// The worktrees of a row: a session's own, or each of a team's (none: `None`).
pub fn listed(o: &Organization, row: &Row) -> Option<Listed> {
    let (title, sessions) = match row {
        Row::Session(id) => {
            let s = o.session(id)?;
            (s.name.clone(), vec![s])
        }
        Row::Group(id) => (o.group(id)?.name.clone(), o.sessions_in(id)),
    };
    let mut list: Vec<(Worktree, Vec<String>)> = Vec::new();
    for s in sessions {
        let Some(w) = &s.worktree else { continue };
        match list.iter_mut().find(|(known, _)| known.path == w.path) {
            Some((_, names)) => names.push(s.name.clone()),
            None => list.push((w.clone(), vec![s.name.clone()])),
        }
    }
    (!list.is_empty()).then_some(Listed { title, list })
}

/// True when a session of the group (or of any group) has a worktree.
fn has_worktrees(o: &Organization, group_id: Option<&str>) -> bool {
    o.sessions
        .iter()
        .any(|s| s.worktree.is_some() && group_id.is_none_or(|g| s.group_id == g))
}

/// What the delete choice of a team whose worktrees hold work means for them.
pub fn removal_choice(option: usize) -> WorktreeChoice {
    if option == 1 {
        WorktreeChoice::Remove
    } else {
        WorktreeChoice::Keep
    }
}

impl Worktrees {
    /// The session's worktree as the sidebar marks it.
    pub fn mark(&self, session_id: &str) -> Option<&Mark> {
        self.marks.mark(session_id)
    }

    /// The worktrees of the selection.
    fn selected(cx: &Cx) -> Option<Listed> {
        let row = cx.selection().row.as_ref()?;
        cx.org.read(|o| listed(o, row))
    }

    /// A refresh of the group's worktree statuses (all groups: `None`), if it has any.
    fn refresh(&mut self, cx: &Cx, group_id: Option<GroupId>) -> Vec<Command> {
        if !cx.org.read(|o| has_worktrees(o, group_id.as_deref())) {
            return Vec::new();
        }
        self.marks.refresh(group_id).into_iter().collect()
    }

    /// The first commands about worktrees: is the repository a git repository, and the
    /// statuses of every worktree recorded.
    pub fn startup(&mut self, cx: &mut Cx) -> Vec<Command> {
        let mut commands = vec![Command::CheckGit];
        commands.extend(self.refresh(cx, None));
        commands
    }

    /// A team selected (another than before): its worktrees are looked at.
    pub fn on_selection(&mut self, cx: &mut Cx) -> Vec<Command> {
        let group_id = cx.selection().group.clone();
        if self.last_selected == group_id {
            return Vec::new();
        }
        self.last_selected = group_id.clone();
        match group_id {
            Some(g) => self.refresh(cx, Some(g)),
            None => Vec::new(),
        }
    }

    /// A turn finished: when the session works in a worktree, its team's are looked at again.
    pub fn on_turn(&mut self, cx: &mut Cx, session_id: &str) -> Vec<Command> {
        let group = cx.org.read(|o| {
            o.session(session_id)
                .filter(|s| s.worktree.is_some())
                .map(|s| s.group_id.clone())
        });
        match group {
            Some(g) => self.refresh(cx, Some(g)),
            None => Vec::new(),
        }
    }

    /// The runtime's answers about worktrees (other events: nothing).
    pub fn on_event(&mut self, cx: &mut Cx, event: AppEvent) -> Vec<Command> {
        match event {
            AppEvent::GitChecked(result) => {
                self.git = Some(result);
                Vec::new()
            }
            AppEvent::TeamCreated {
                preset,
                warnings,
                result,
            } => self.on_team_created(cx, &preset, warnings, result),
            AppEvent::WorktreeStatuses { group_id, statuses } => self.marks.on_statuses(group_id, &statuses),
            AppEvent::WorktreeTick => {
                let group = cx.selection().group.clone();
                if group.is_some() && !self.marks.refreshing(group.as_deref()) {
                    self.refresh(cx, group)
                } else {
                    Vec::new()
                }
            }
            AppEvent::DiffLoaded { request, diffs } => {
                if let Some(view) = cx.dialogs.diff_view(request) {
                    view.loaded(diffs);
                }
                Vec::new()
            }
            AppEvent::MergePlanned { result } => {
                on_merge_planned(cx, result);
                Vec::new()
            }
            AppEvent::Merged { branch, result } => self.on_merged(cx, &branch, result),
            AppEvent::DeleteRiskChecked { group_id, at_risk } => {
                on_delete_risk(cx, group_id, at_risk);
                Vec::new()
            }
            AppEvent::FilesRemoved(report) => {
                on_files_removed(cx, &report);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    // ---- new team ----

    /// A preset was picked: ask the strategy when worktrees are possible (a git repository) or
    /// the preset asks for them; else the team is made at once, sharing the repository.
    pub fn on_preset_picked(&mut self, cx: &mut Cx, preset: Preset) -> Vec<Command> {
        let git_ok = matches!(self.git, Some(Ok(())));
        if git_ok || !preset.worktrees.is_shared() {
            self.open_strategy_picker(cx, &preset);
            return Vec::new();
        }
        create_shared_team(cx, &preset)
    }

    fn open_strategy_picker(&mut self, cx: &mut Cx, preset: &Preset) {
        let no_git = match &self.git {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        };
        let items: Vec<ListItem> = STRATEGIES
            .iter()
            .map(|(s, what)| {
                let disabled = !s.is_shared() && no_git.is_some();
                ListItem {
                    section: String::new(),
                    label: s.to_string(),
                    tag: if *s == preset.worktrees {
                        "preset's choice".into()
                    } else {
                        String::new()
                    },
                    detail: match (&no_git, disabled) {
                        (Some(why), true) => format!("{what}\nnot possible here: {why}"),
                        _ => what.to_string(),
                    },
                    value: s.to_string(),
                    disabled,
                    ..ListItem::default()
                }
            })
            .collect();
        let mut picker = ListPicker::new(
            format!("{}: where do its members work?", preset.name),
            PickPurpose::Strategy(preset.name.clone()),
            items,
        );
        let wanted = if no_git.is_some() {
            WorktreeStrategy::Shared
        } else {
            preset.worktrees
        };
        picker.cursor = STRATEGIES.iter().position(|(s, _)| *s == wanted).unwrap_or(0);
        cx.dialogs.push(Dialog::Picker(picker));
    }

    /// The strategy was picked: `shared` is made at once (no git); the others in the runtime.
    pub fn on_strategy_picked(
        &mut self,
        cx: &mut Cx,
        catalog: Option<&Catalog>,
        preset_name: &str,
        value: &str,
    ) -> Result<Vec<Command>, String> {
        let strategy = value.parse::<WorktreeStrategy>().map_err(|e| e.to_string())?;
        let preset = catalog
            .and_then(|c| c.find(preset_name))
            .cloned()
            .ok_or_else(|| format!("no preset named `{preset_name}`"))?;
        if strategy.is_shared() {
            return Ok(create_shared_team(cx, &preset));
        }
        self.creating.push(preset.name.clone());
        cx.flash
            .say(format!("making {strategy} worktrees for {}…", preset.name), false);
        Ok(vec![Command::CreateTeam {
            preset: Box::new(preset),
            strategy,
        }])
    }

    fn on_team_created(
        &mut self,
        cx: &mut Cx,
        preset: &str,
        warnings: Vec<String>,
        result: Result<GroupId, String>,
    ) -> Vec<Command> {
        if let Some(i) = self.creating.iter().position(|p| p == preset) {
            self.creating.remove(i);
        }
        match result {
            Ok(id) => {
                let with = if cx.org.read(|o| has_worktrees(o, Some(&id))) {
                    " with its worktrees"
                } else {
                    ""
                };
                cx.flash.say(format!("{preset} created{with}"), false);
                select_team(cx, id, preset, &warnings);
            }
            Err(e) => cx.dialogs.error(
                if e.ends_with(MAY_APPEAR) {
                    "Team not confirmed"
                } else {
                    "Team not created"
                },
                format!("{preset}: {e}"),
            ),
        }
        Vec::new()
    }

    // ---- diff ----

    /// The diff key: a view of the selection's worktrees, loaded in the runtime.
    pub fn open_diff(&mut self, cx: &mut Cx) -> Vec<Command> {
        let Some(wts) = Self::selected(cx) else {
            cx.flash.say(
                "no worktree here: this works in the repository itself (create a team with a worktree strategy)",
                true,
            );
            return Vec::new();
        };
        let request = self.marks.next_request();
        let tabs: Vec<DiffTab> = wts
            .list
            .iter()
            .map(|(w, sessions)| DiffTab {
                worktree: w.clone(),
                sessions: sessions.clone(),
                content: DiffContent::Loading,
            })
            .collect();
        let keys = cx.keymap.keys_of(Context::Navigation, Action::MergeWorktree);
        cx.dialogs.push(Dialog::Diff(Box::new(DiffView::new(
            request, wts.title, tabs, keys,
        ))));
        vec![Command::LoadDiff {
            request,
            worktrees: wts.list.into_iter().map(|(w, _)| w).collect(),
        }]
    }

    // ---- merge ----

    /// The merge key on the selection: the session's worktree, or a team's only one.
    pub fn merge_selected(&mut self, cx: &mut Cx) -> Vec<Command> {
        let Some(wts) = Self::selected(cx) else {
            cx.flash.say("no worktree here: nothing to bring back", true);
            return Vec::new();
        };
        if wts.list.len() > 1 {
            let diff = cx.keymap.key_label(Action::ViewDiff);
            let merge = cx.keymap.key_label(Action::MergeWorktree);
            cx.flash.say(
                format!(
                    "this team has {} worktrees: select a member, or open the diff ({diff}) and press {merge} on one",
                    wts.list.len()
                ),
                true,
            );
            return Vec::new();
        }
        wts.list
            .into_iter()
            .flat_map(|(worktree, _)| plan_merge(cx, worktree))
            .collect()
    }

    /// The chosen way of bringing a branch back (`option` of the choice `on_merge_planned`
    /// offered).
    pub fn merge(&mut self, cx: &mut Cx, plan: Box<MergePlan>, option: usize) -> Vec<Command> {
        let method = if option == 1 {
            MergeMethod::CherryPick
        } else {
            MergeMethod::Merge
        };
        cx.flash
            .say(format!("{} of {}…", method.as_str(), plan.worktree.branch), false);
        vec![Command::Merge { plan, method }]
    }

    fn on_merged(
        &mut self,
        cx: &mut Cx,
        branch: &str,
        result: Result<MergeOutcome, WorktreeError>,
    ) -> Vec<Command> {
        // The "merge of …" said while it ran is over.
        cx.flash.clear();
        match result {
            Ok(o) => cx.dialogs.info(
                "Brought back",
                format!(
                    "{} commit(s) of {branch} {} into {} ({} → {}).",
                    o.commits,
                    if o.method == MergeMethod::Merge {
                        "merged"
                    } else {
                        "cherry-picked"
                    },
                    o.into,
                    o.old_head.get(..10).unwrap_or(&o.old_head),
                    o.new_head.get(..10).unwrap_or(&o.new_head),
                ),
            ),
            Err(e @ WorktreeError::Conflict { .. }) => cx
                .dialogs
                .error("Conflict: aborted, nothing changed", e.to_string()),
            Err(WorktreeError::Refused(why)) if why.starts_with("nothing to merge") => {
                cx.dialogs.info("Nothing to merge", why)
            }
            Err(e) => cx.dialogs.error("Not merged", e.to_string()),
        }
        // Unmerged counts of every worktree of the repository may have changed.
        self.refresh(cx, None)
    }

    // ---- delete ----

    /// Deleting a team with worktrees: first which of them hold work (git, in the runtime).
    /// None when the team has no worktree (it is deleted as any group).
    pub fn delete_team(&mut self, cx: &mut Cx, id: &GroupId) -> Option<Vec<Command>> {
        if !cx.is_team(id) || !cx.org.read(|o| has_worktrees(o, Some(id))) {
            return None;
        }
        cx.flash.say("looking at the team's worktrees…", false);
        Some(vec![Command::CheckDeleteRisk { group_id: id.clone() }])
    }
}

/// The merge key on one worktree (the session's, or one of the diff view): its plan first.
pub fn plan_merge(cx: &mut Cx, worktree: Worktree) -> Vec<Command> {
    cx.flash
        .say(format!("looking at the commits of {}…", worktree.branch), false);
    vec![Command::PlanMerge { worktree }]
}

/// A team sharing the repository: made at once in this process's own workspace; a host's
/// answer is waited for off the UI thread, as a team with worktrees is (a busy host must not
/// hold up the keys), and an unanswered one says that the team may still appear.
fn create_shared_team(cx: &mut Cx, preset: &Preset) -> Vec<Command> {
    if cx.edits.is_remote() {
        cx.flash.say(format!("making {}…", preset.name), false);
        return vec![Command::CreateTeam {
            preset: Box::new(preset.clone()),
            strategy: WorktreeStrategy::Shared,
        }];
    }
    let id = cx.edits.create_team(preset);
    select_team(cx, id, &preset.name, &preset.warnings);
    Vec::new()
}

/// A team made: it is selected, the composer takes the keys, its warnings are shown.
fn select_team(cx: &mut Cx, id: GroupId, name: &str, warnings: &[String]) {
    cx.then(Then::Cursor(Row::Group(id)));
    cx.then(Then::Focus(Focus::Composer));
    if !warnings.is_empty() {
        cx.dialogs
            .info(format!("{name} created, with warnings"), warnings.join("\n"));
    }
    cx.then(Then::SelectionChanged);
}

fn on_merge_planned(cx: &mut Cx, result: Result<MergePlan, String>) {
    let plan = match result {
        Ok(plan) => plan,
        Err(e) => {
            cx.dialogs.error("Cannot bring it back", e);
            return;
        }
    };
    if plan.blocked.is_some() {
        cx.dialogs.error("Cannot merge now", plan.describe());
        return;
    }
    if plan.commits.is_empty() {
        let mut text = format!(
            "Nothing to merge: {} has no commit that {} lacks.",
            plan.worktree.branch,
            plan.into.as_deref().unwrap_or("HEAD")
        );
        if plan.uncommitted > 0 {
            text.push_str(&format!(
                "\nIts {} uncommitted change(s) are not merged: commit them in {} first.",
                plan.uncommitted,
                plan.worktree.path.display()
            ));
        }
        cx.dialogs.info("Nothing to merge", text);
        return;
    }
    let mut message = plan.describe();
    if plan.uncommitted > 0 {
        message.push_str("Uncommitted changes are NOT merged: only the commits listed are.\n");
    }
    let options = vec![
        ChoiceOption {
            key: 'm',
            label: "merge (one merge commit, --no-ff)".into(),
            disabled: None,
        },
        ChoiceOption {
            key: 'c',
            label: "cherry-pick (each commit copied, -x)".into(),
            disabled: plan
                .has_merges
                .then(|| "the branch has merge commits".to_string()),
        },
    ];
    cx.dialogs.push(Dialog::Choice(Box::new(Choice {
        title: format!("Bring back {}", plan.worktree.branch),
        message,
        options,
        chosen: 0,
        verb: "bring back".into(),
        action: ChoiceAction::Merge(Box::new(plan)),
    })));
}

fn on_delete_risk(cx: &mut Cx, group_id: GroupId, at_risk: Vec<AtRisk>) {
    if cx.runs.group_busy(&group_id) {
        cx.refuse(
            "Cannot delete now",
            "This group (or one of its sessions) is running. Stop it first (the stop key), then delete.",
        );
        return;
    }
    let text = match cx.edits.describe_delete_group(&group_id) {
        Ok(text) => text,
        Err(e) => {
            cx.flash.say(e.to_string(), true);
            return;
        }
    };
    if at_risk.is_empty() {
        cx.dialogs.confirm(
            "Delete",
            format!("{text}\n\nIts worktrees hold no uncommitted or unmerged work."),
            ConfirmAction::DeleteGroup(group_id),
        );
        return;
    }
    let mut message = format!("{text}\n\nThese worktrees hold work:\n");
    for r in &at_risk {
        message.push_str(&format!(
            "  {} ({}): {}\n",
            r.worktree.branch,
            r.sessions.join(", "),
            r.why
        ));
    }
    message.push_str(
        "Keep them (folder and branch stay, for you to review, merge or remove later) or remove them, throwing that work away?",
    );
    cx.dialogs.push(Dialog::Choice(Box::new(Choice {
        title: "Delete team".into(),
        message,
        options: vec![
            ChoiceOption {
                key: 'k',
                label: format!("keep the {} worktree(s) holding work", at_risk.len()),
                disabled: None,
            },
            ChoiceOption {
                key: 'r',
                label: "remove them too (their work is lost)".into(),
                disabled: None,
            },
        ],
        chosen: 0,
        verb: "delete".into(),
        action: ChoiceAction::DeleteGroup(group_id),
    })));
}

fn on_files_removed(cx: &mut Cx, report: &RemovalReport) {
    if let Some(why) = &report.unanswered {
        // Several deletions (a prune) that one host left unanswered: one notice says it.
        if matches!(cx.dialogs.last(), Some(Dialog::Notice(n)) if n.title == REMOVAL_UNCONFIRMED) {
            return;
        }
        cx.dialogs.error(
            REMOVAL_UNCONFIRMED,
            format!("{why}\nWhat was asked may still be done once the host answers (`huddle worktrees list` shows the worktrees that are left)."),
        );
        return;
    }
    if report.kept.is_empty() && report.failed.is_empty() {
        if !report.removed.is_empty() {
            cx.flash.say(
                format!("{} worktree(s) removed with their branches", report.removed.len()),
                false,
            );
        }
        return;
    }
    let mut text = String::new();
    if !report.removed.is_empty() {
        text.push_str(&format!(
            "{} worktree(s) removed with their branches.\n",
            report.removed.len()
        ));
    }
    for (w, what) in &report.kept {
        text.push_str(&format!("kept {} ({}): {what}\n", w.branch, w.path.display()));
    }
    for (w, why) in &report.failed {
        text.push_str(&format!(
            "not removed {} ({}): {why}\n",
            w.branch,
            w.path.display()
        ));
    }
    let title = if report.failed.is_empty() {
        "Worktrees kept"
    } else {
        "Worktrees not removed"
    };
    cx.dialogs.info(title, text);
}
