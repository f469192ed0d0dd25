//! Team worktrees in the app: the strategy step of the new-team dialog, the sidebar's statuses
//! (refreshed when a team is selected, after a worktree session's turn, after a merge, and every
//! few seconds for the selected team; never per frame), the diff view, bringing work back
//! (plan, confirm, merge), and deleting a team whose worktrees hold work. Everything git does
//! runs in the runtime, off the UI thread; results come back as events.

use super::action::{Action, Context};
use super::app::{App, Focus};
use super::command::{AppEvent, Command};
use super::dialogs::diff_view::{DiffContent, DiffTab};
use super::dialogs::{
    Choice, ChoiceAction, ChoiceOption, ConfirmAction, Dialog, DiffView, ListItem, ListPicker, PickPurpose,
};
use super::sidebar::Row;
use crate::model::{GroupId, Preset, Worktree, WorktreeStrategy};
use crate::workspace::{AtRisk, RemovalReport, WorktreeChoice};
use crate::worktrees::{MergeMethod, MergeOutcome, MergePlan, WorktreeError};

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
pub struct Worktrees {
    pub title: String,
    pub list: Vec<(Worktree, Vec<String>)>,
}

impl App {
    /// The worktrees of the selection: a session's own, or each of a team's (none: `None`).
    pub fn selected_worktrees(&self) -> Option<Worktrees> {
        let row = self.selected_row()?;
        self.org.read(|o| {
            let (title, sessions) = match &row {
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
            (!list.is_empty()).then_some(Worktrees { title, list })
        })
    }

    /// True when a session of the group (or of any group) has a worktree.
    pub(super) fn has_worktrees(&self, group_id: Option<&str>) -> bool {
        self.org.read(|o| {
            o.sessions
                .iter()
                .any(|s| s.worktree.is_some() && group_id.is_none_or(|g| s.group_id == g))
        })
    }

    /// A refresh of the group's worktree statuses (all groups: `None`), if it has any.
    pub(super) fn refresh_worktrees(&mut self, group_id: Option<GroupId>) -> Vec<Command> {
        if !self.has_worktrees(group_id.as_deref()) {
            return Vec::new();
        }
        self.worktrees.refresh(group_id).into_iter().collect()
    }

    /// The first commands about worktrees: is the repository a git repository, and the
    /// statuses of every worktree recorded.
    pub(super) fn worktree_startup(&mut self) -> Vec<Command> {
        let mut commands = vec![Command::CheckGit];
        commands.extend(self.refresh_worktrees(None));
        commands
    }

    /// A team selected (another than before): its worktrees are looked at.
    pub(super) fn worktrees_on_selection(&mut self, group_id: Option<&GroupId>) -> Vec<Command> {
        if self.worktrees.last_selected.as_ref() == group_id {
            return Vec::new();
        }
        self.worktrees.last_selected = group_id.cloned();
        match group_id {
            Some(g) => self.refresh_worktrees(Some(g.clone())),
            None => Vec::new(),
        }
    }

    /// A turn finished: when the session works in a worktree, its team's are looked at again.
    pub(super) fn worktrees_on_turn(&mut self, session_id: &str) -> Vec<Command> {
        let group = self.org.read(|o| {
            o.session(session_id)
                .filter(|s| s.worktree.is_some())
                .map(|s| s.group_id.clone())
        });
        match group {
            Some(g) => self.refresh_worktrees(Some(g)),
            None => Vec::new(),
        }
    }

    pub(super) fn handle_worktree_event(&mut self, event: AppEvent) -> Vec<Command> {
        match event {
            AppEvent::GitChecked(result) => {
                self.worktrees.git = Some(result);
                Vec::new()
            }
            AppEvent::TeamCreated {
                preset,
                warnings,
                result,
            } => self.on_team_created(&preset, warnings, result),
            AppEvent::WorktreeStatuses { group_id, statuses } => {
                self.worktrees.on_statuses(group_id, &statuses)
            }
            AppEvent::WorktreeTick => {
                let group = self.selected_group_id();
                if group.is_some() && !self.worktrees.refreshing(group.as_deref()) {
                    self.refresh_worktrees(group)
                } else {
                    Vec::new()
                }
            }
            AppEvent::DiffLoaded { request, diffs } => {
                if let Some(view) = self.dialogs.diff_view(request) {
                    view.loaded(diffs);
                }
                Vec::new()
            }
            AppEvent::MergePlanned { result } => {
                self.on_merge_planned(result);
                Vec::new()
            }
            AppEvent::Merged { branch, result } => self.on_merged(&branch, result),
            AppEvent::DeleteRiskChecked { group_id, at_risk } => {
                self.on_delete_risk(group_id, at_risk);
                Vec::new()
            }
            AppEvent::FilesRemoved(report) => {
                self.on_files_removed(&report);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    // ---- new team ----

    /// A preset was picked: ask the strategy when worktrees are possible (a git repository) or
    /// the preset asks for them; else the team is made at once, sharing the repository.
    pub(super) fn on_preset_picked(&mut self, preset: Preset) -> Vec<Command> {
        let git_ok = matches!(self.worktrees.git, Some(Ok(())));
        if git_ok || !preset.worktrees.is_shared() {
            self.open_strategy_picker(&preset);
            return Vec::new();
        }
        self.create_shared_team(&preset)
    }

    fn open_strategy_picker(&mut self, preset: &Preset) {
        let no_git = match &self.worktrees.git {
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
        self.dialogs.push(Dialog::Picker(picker));
    }

    /// The strategy was picked: `shared` is made at once (no git); the others in the runtime.
    pub(super) fn on_strategy_picked(
        &mut self,
        preset_name: &str,
        value: &str,
    ) -> Result<Vec<Command>, String> {
        let strategy = value.parse::<WorktreeStrategy>().map_err(|e| e.to_string())?;
        let preset = self
            .catalog
            .as_ref()
            .and_then(|c| c.find(preset_name))
            .cloned()
            .ok_or_else(|| format!("no preset named `{preset_name}`"))?;
        if strategy.is_shared() {
            return Ok(self.create_shared_team(&preset));
        }
        self.worktrees.creating.push(preset.name.clone());
        self.flash(format!("making {strategy} worktrees for {}…", preset.name), false);
        Ok(vec![Command::CreateTeam {
            preset: Box::new(preset),
            strategy,
        }])
    }

    fn create_shared_team(&mut self, preset: &Preset) -> Vec<Command> {
        let id = self.edits.create_team(preset);
        self.select_team(id, &preset.name, &preset.warnings)
    }

    fn select_team(&mut self, id: GroupId, name: &str, warnings: &[String]) -> Vec<Command> {
        self.select_row(&Row::Group(id));
        self.focus = Focus::Composer;
        if !warnings.is_empty() {
            self.dialogs
                .info(format!("{name} created, with warnings"), warnings.join("\n"));
        }
        self.on_selection_changed()
    }

    fn on_team_created(
        &mut self,
        preset: &str,
        warnings: Vec<String>,
        result: Result<GroupId, String>,
    ) -> Vec<Command> {
        if let Some(i) = self.worktrees.creating.iter().position(|p| p == preset) {
            self.worktrees.creating.remove(i);
        }
        match result {
            Ok(id) => {
                self.flash(format!("{preset} created with its worktrees"), false);
                self.select_team(id, preset, &warnings)
            }
            Err(e) => {
                self.dialogs
                    .error("Team not created", format!("{preset}: {e}\nNothing was made."));
                Vec::new()
            }
        }
    }

    // ---- diff ----

    pub(super) fn open_diff(&mut self) -> Vec<Command> {
        let Some(wts) = self.selected_worktrees() else {
            self.flash(
                "no worktree here: this works in the repository itself (create a team with a worktree strategy)",
                true,
            );
            return Vec::new();
        };
        let request = self.worktrees.next_request();
        let tabs: Vec<DiffTab> = wts
            .list
            .iter()
            .map(|(w, sessions)| DiffTab {
                worktree: w.clone(),
                sessions: sessions.clone(),
                content: DiffContent::Loading,
            })
            .collect();
        let keys = self.keymap.keys_of(Context::Navigation, Action::MergeWorktree);
        self.dialogs.push(Dialog::Diff(Box::new(DiffView::new(
            request, wts.title, tabs, keys,
        ))));
        vec![Command::LoadDiff {
            request,
            worktrees: wts.list.into_iter().map(|(w, _)| w).collect(),
        }]
    }

    // ---- merge ----

    /// The merge key on the selection: the session's worktree, or a team's only one.
    pub(super) fn merge_selected(&mut self) -> Vec<Command> {
        let Some(wts) = self.selected_worktrees() else {
            self.flash("no worktree here: nothing to bring back", true);
            return Vec::new();
        };
        if wts.list.len() > 1 {
            let diff = self.keymap.key_label(Action::ViewDiff);
            let merge = self.keymap.key_label(Action::MergeWorktree);
            self.flash(
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
            .map(|(worktree, _)| self.plan_merge(worktree))
            .collect()
    }

    pub(super) fn plan_merge(&mut self, worktree: Worktree) -> Command {
        self.flash(format!("looking at the commits of {}…", worktree.branch), false);
        Command::PlanMerge { worktree }
    }

    fn on_merge_planned(&mut self, result: Result<MergePlan, String>) {
        let plan = match result {
            Ok(plan) => plan,
            Err(e) => {
                self.dialogs.error("Cannot bring it back", e);
                return;
            }
        };
        if plan.blocked.is_some() {
            self.dialogs.error("Cannot merge now", plan.describe());
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
            self.dialogs.info("Nothing to merge", text);
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
        self.dialogs.push(Dialog::Choice(Box::new(Choice {
            title: format!("Bring back {}", plan.worktree.branch),
            message,
            options,
            chosen: 0,
            verb: "bring back".into(),
            action: ChoiceAction::Merge(Box::new(plan)),
        })));
    }

    fn on_merged(&mut self, branch: &str, result: Result<MergeOutcome, WorktreeError>) -> Vec<Command> {
        match result {
            Ok(o) => self.dialogs.info(
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
            Err(e @ WorktreeError::Conflict { .. }) => self
                .dialogs
                .error("Conflict: aborted, nothing changed", e.to_string()),
            Err(WorktreeError::Refused(why)) if why.starts_with("nothing to merge") => {
                self.dialogs.info("Nothing to merge", why)
            }
            Err(e) => self.dialogs.error("Not merged", e.to_string()),
        }
        // Unmerged counts of every worktree of the repository may have changed.
        self.refresh_worktrees(None)
    }

    pub(super) fn on_chose(&mut self, action: ChoiceAction, option: usize) -> Vec<Command> {
        match action {
            ChoiceAction::Merge(plan) => {
                let method = if option == 1 {
                    MergeMethod::CherryPick
                } else {
                    MergeMethod::Merge
                };
                self.flash(format!("{} of {}…", method.as_str(), plan.worktree.branch), false);
                vec![Command::Merge { plan, method }]
            }
            ChoiceAction::DeleteGroup(id) => {
                let choice = if option == 1 {
                    WorktreeChoice::Remove
                } else {
                    WorktreeChoice::Keep
                };
                self.delete_group(&id, choice)
            }
            ChoiceAction::Interrupted(target) => self.on_interrupted(target, option == 0),
        }
    }

    /// The answer to the offer of an interrupted run: resume it now, or discard it.
    fn on_interrupted(&mut self, target: super::dialogs::Interruption, resume: bool) -> Vec<Command> {
        use super::dialogs::Interruption;
        match (target, resume) {
            (Interruption::Group(group_id), true) => {
                self.team_panel.show_newest(&group_id);
                vec![Command::ResumeCycle { group_id }]
            }
            (Interruption::Session(session_id), true) => vec![Command::ResumeReflection { session_id }],
            (Interruption::Group(group_id), false) => {
                match self.edits.discard_interrupted(&group_id) {
                    Ok(()) => self.flash("the interrupted run was discarded", false),
                    Err(e) => self.dialogs.error("Not discarded", e.to_string()),
                }
                Vec::new()
            }
            (Interruption::Session(session_id), false) => {
                match self.edits.discard_reflection(&session_id) {
                    Ok(()) => self.flash("the interrupted reflection was discarded", false),
                    Err(e) => self.dialogs.error("Not discarded", e.to_string()),
                }
                Vec::new()
            }
        }
    }

    // ---- delete ----

    /// Deleting a team with worktrees: first which of them hold work (git, in the runtime).
    pub(super) fn delete_group_with_worktrees(&mut self, id: GroupId) -> Vec<Command> {
        self.flash("looking at the team's worktrees…", false);
        vec![Command::CheckDeleteRisk { group_id: id }]
    }

    fn on_delete_risk(&mut self, group_id: GroupId, at_risk: Vec<AtRisk>) {
        if self.group_busy(&group_id) {
            self.refuse(
                "Cannot delete now",
                "This group (or one of its sessions) is running. Stop it first (the stop key), then delete.",
            );
            return;
        }
        let text = match self.edits.describe_delete_group(&group_id) {
            Ok(text) => text,
            Err(e) => {
                self.flash(e.to_string(), true);
                return;
            }
        };
        if at_risk.is_empty() {
            self.dialogs.confirm(
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
        self.dialogs.push(Dialog::Choice(Box::new(Choice {
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

    fn on_files_removed(&mut self, report: &RemovalReport) {
        if report.kept.is_empty() && report.failed.is_empty() {
            if !report.removed.is_empty() {
                self.flash(
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
        self.dialogs.info(title, text);
    }
}
