//! Opening dialogs and acting on their results.

use super::app::{App, Focus};
use super::command::Command;
use super::dialogs::{
    ConfirmAction, Dialog, DialogResult, ListItem, ListPicker, PickPurpose, TextInput, TextPurpose,
};
use super::sidebar::Row;
use crate::model::{MAX_ITERATIONS, Mode, Tier};
use crate::workspace::{EditError, WorktreeChoice};

const PRESET_PICKER_TITLE: &str = "New team from a preset";

/// Why the mode and max iterations cannot change now: the run in progress keeps its own.
const RUNNING_REFUSAL: &str = "the team is running: mode and max iterations change after it (x stops)";

impl App {
    pub(super) fn open_preset_picker(&mut self) -> Vec<Command> {
        let mut picker = ListPicker::new(PRESET_PICKER_TITLE, PickPurpose::Preset, Vec::new());
        picker.empty_text = "loading presets…".into();
        self.dialogs.push(Dialog::Picker(picker));
        self.refresh_preset_picker();
        // Re-read: the repo's Squad folder or the user presets may have changed.
        vec![Command::LoadCatalog]
    }

    /// Fills an open preset picker from the catalog.
    pub(super) fn refresh_preset_picker(&mut self) {
        let Some(catalog) = &self.catalog else {
            return;
        };
        let mut items = Vec::new();
        for (tier, section) in [
            (Tier::Repo, "From repo (Squad)"),
            (Tier::Builtin, "Built-in"),
            (Tier::User, "My presets"),
        ] {
            for p in catalog.presets.iter().filter(|p| p.tier == Some(tier)) {
                let mut models: Vec<String> = Vec::new();
                let agents = p
                    .orchestrator
                    .iter()
                    .chain(p.evaluator.iter())
                    .map(|a| a.model.clone());
                for m in agents.chain(p.workers.iter().map(|w| w.model.clone())) {
                    let m = m.unwrap_or_else(|| self.config.default_model());
                    if !models.contains(&m) {
                        models.push(m);
                    }
                }
                let mut detail = format!(
                    "{}\nmode {} · {} worker(s) · models {}",
                    p.description.as_deref().unwrap_or(""),
                    p.mode,
                    p.workers.len(),
                    models.join(", ")
                );
                for w in &p.warnings {
                    detail.push_str(&format!("\n⚠ {w}"));
                }
                items.push(ListItem {
                    section: section.to_string(),
                    label: p.name.clone(),
                    tag: if tier == Tier::Repo {
                        "[repo]".into()
                    } else {
                        p.mode.to_string()
                    },
                    detail,
                    value: p.name.clone(),
                    ..ListItem::default()
                });
            }
            // A preset source that cannot be used is listed greyed, with the reason.
            for e in catalog.errors.iter().filter(|e| e.tier == tier) {
                let source = std::path::Path::new(&e.source)
                    .file_name()
                    .map_or(e.source.clone(), |f| f.to_string_lossy().into_owned());
                items.push(ListItem {
                    section: section.to_string(),
                    label: format!("{source} (cannot be used)"),
                    tag: "error".into(),
                    detail: e.message.clone(),
                    disabled: true,
                    ..ListItem::default()
                });
            }
        }
        let errors = catalog.errors.len();
        for p in self.dialogs.pickers(&PickPurpose::Preset) {
            p.set_items(items.clone());
            p.empty_text = if errors > 0 {
                format!("no presets ({errors} could not be loaded)")
            } else {
                "no presets".into()
            };
        }
    }

    /// A new plain session: in the selected plain group, else (a team is selected) in the
    /// default group. Team members are added with their own action.
    pub(super) fn open_new_session(&mut self) {
        let group_id = match self.selected_group_id() {
            Some(id) if !self.is_team(&id) => id,
            _ => match self.org.read(|o| o.default_group().map(|g| g.id.clone())) {
                Some(id) => id,
                None => return,
            },
        };
        let suggestion = self.org.read(|o| o.unique_session_name("session"));
        self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
            "New session: name",
            TextPurpose::NewSession(group_id),
            &suggestion,
            false,
        ))));
    }

    /// Adding a member to the selected team: its name first.
    pub(super) fn open_add_member(&mut self) {
        let Some(group_id) = self.selected_team() else {
            return;
        };
        self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
            "Add a team member: name",
            TextPurpose::MemberName(group_id),
            "member",
            false,
        ))));
    }

    pub(super) fn open_rename(&mut self) {
        // Runs and events know groups and sessions by id: renaming while busy is fine.
        let (title, purpose, current) = match self.selected_row() {
            Some(Row::Group(id)) => {
                let name = self.org.read(|o| o.group(&id).map(|g| g.name.clone()));
                ("Rename group", TextPurpose::RenameGroup(id), name)
            }
            Some(Row::Session(id)) => {
                let name = self.org.read(|o| o.session(&id).map(|s| s.name.clone()));
                ("Rename session", TextPurpose::RenameSession(id), name)
            }
            None => return,
        };
        self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
            title,
            purpose,
            &current.unwrap_or_default(),
            false,
        ))));
    }

    /// Says why an action is refused, in a popup.
    pub(super) fn refuse(&mut self, title: &str, why: &str) {
        self.dialogs.error(title, why);
    }

    pub(super) fn open_model_picker(&mut self) {
        let (purpose, current) = match self.selected_row() {
            Some(Row::Session(id)) => {
                let m = self.org.read(|o| o.session(&id).map(|s| s.model.clone()));
                (PickPurpose::Model(id), m)
            }
            Some(Row::Group(id)) => (PickPurpose::GroupModel(id), None),
            None => return,
        };
        self.push_model_picker(purpose, current);
    }

    /// The model picker (configured providers' models, or a typed slug) for `purpose`.
    fn push_model_picker(&mut self, purpose: PickPurpose, current: Option<String>) {
        let mut models: Vec<String> = vec![self.config.default_model()];
        let mut add = |m: String| {
            if !m.is_empty() && !models.contains(&m) {
                models.push(m);
            }
        };
        self.org
            .read(|o| o.sessions.iter().for_each(|s| add(s.model.clone())));
        // Each configured provider's `models:` list.
        for p in &self.config.providers {
            for m in &p.models {
                add(format!("{}/{m}", p.name));
            }
        }
        for m in ["sim/default", "sim/slow-200ms"] {
            add(m.to_string());
        }
        let mut items: Vec<ListItem> = models
            .into_iter()
            .map(|m| {
                let provider = m.split('/').next().unwrap_or("").to_string();
                let served = self.config.serves(&m);
                ListItem {
                    section: format!("provider {provider}"),
                    tag: match (current.as_deref() == Some(m.as_str()), served) {
                        (true, _) => "current".into(),
                        (false, false) => "not configured".into(),
                        _ => String::new(),
                    },
                    detail: if provider == "sim" {
                        "offline simulated answers (for trying things out)".into()
                    } else {
                        String::new()
                    },
                    label: m.clone(),
                    value: m,
                    ..ListItem::default()
                }
            })
            .collect();
        // A `<provider>/` entry per configured provider: picking it starts typing a slug.
        for p in &self.config.providers {
            let prefix = format!("{}/", p.name);
            items.push(ListItem {
                section: "type any model of a provider".into(),
                label: format!("{prefix}…"),
                tag: format!("{}", p.kind),
                detail: format!("Enter puts `{prefix}` in the search field; type the model name after it."),
                value: prefix,
                completes: true,
                ..ListItem::default()
            });
        }
        let mut picker = ListPicker::new("Model (type a slug: provider/model)", purpose, items);
        picker.allow_custom = true;
        self.dialogs.push(Dialog::Picker(picker));
    }

    pub(super) fn open_system_prompt(&mut self) {
        let Some(id) = self.selected_session_id() else {
            self.flash("select a session to edit its system prompt", true);
            return;
        };
        let current = self
            .org
            .read(|o| o.session(&id).and_then(|s| s.system_prompt.clone()))
            .unwrap_or_default();
        self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
            "System prompt",
            TextPurpose::SystemPrompt(id),
            &current,
            true,
        ))));
    }

    pub(super) fn selected_team(&mut self) -> Option<String> {
        match self.selected_group_id() {
            Some(id) if self.is_team(&id) => Some(id),
            _ => {
                self.flash("select a team first", true);
                None
            }
        }
    }

    pub(super) fn open_mode_picker(&mut self) {
        let Some(id) = self.selected_team() else {
            return;
        };
        if self.team_running(&id) {
            self.flash(RUNNING_REFUSAL, true);
            return;
        }
        let current = self.org.read(|o| o.group(&id).map(|g| g.mode));
        let items = Mode::ALL
            .iter()
            .map(|m| ListItem {
                section: String::new(),
                label: m.to_string(),
                tag: if Some(*m) == current {
                    "current".into()
                } else {
                    String::new()
                },
                detail: m.spec().description.into(),
                value: m.to_string(),
                ..ListItem::default()
            })
            .collect();
        self.dialogs.push(Dialog::Picker(ListPicker::new(
            "Mode",
            PickPurpose::Mode(id),
            items,
        )));
    }

    pub(super) fn open_max_iterations(&mut self) {
        let Some(id) = self.selected_team() else {
            return;
        };
        if self.team_running(&id) {
            self.flash(RUNNING_REFUSAL, true);
            return;
        }
        let current = self
            .org
            .read(|o| o.group(&id).map(|g| g.max_iterations))
            .unwrap_or_else(crate::model::default_max_iterations);
        let title = format!(
            "Max iterations ({}-{})",
            MAX_ITERATIONS.start(),
            MAX_ITERATIONS.end()
        );
        self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
            &title,
            TextPurpose::MaxIterations(id),
            &current.to_string(),
            false,
        ))));
    }

    pub(super) fn open_delete(&mut self) -> Vec<Command> {
        match self.selected_row() {
            Some(Row::Group(id)) => {
                if self.group_busy(&id) {
                    self.refuse(
                        "Cannot delete now",
                        "This group (or one of its sessions) is running. Stop it first (the stop key), then delete.",
                    );
                    return Vec::new();
                }
                if self.is_team(&id) && self.has_worktrees(Some(&id)) {
                    return self.delete_group_with_worktrees(id);
                }
                match self.edits.describe_delete_group(&id) {
                    Ok(text) => self
                        .dialogs
                        .confirm("Delete", text, ConfirmAction::DeleteGroup(id)),
                    Err(e) => self.flash(e.to_string(), true),
                }
            }
            Some(Row::Session(id)) => {
                let Some((name, group, branch)) = self.org.read(|o| {
                    o.session(&id).map(|s| {
                        (
                            s.name.clone(),
                            s.group_id.clone(),
                            s.worktree.as_ref().map(|w| w.branch.clone()),
                        )
                    })
                }) else {
                    return Vec::new();
                };
                if self.session_busy(&id) || self.team_running(&group) {
                    self.refuse(
                        "Cannot delete now",
                        "This session (or its team) has a turn in flight. Stop it first (the stop key), then delete.",
                    );
                    return Vec::new();
                }
                let worktree = branch
                    .map(|b| format!("\nIts worktree ({b}), if no other session works there, is removed with its branch when it holds no work, and kept when it does."))
                    .unwrap_or_default();
                self.dialogs.confirm(
                    "Delete",
                    format!("Delete session `{name}` and its transcript?{worktree}"),
                    ConfirmAction::DeleteSession(id),
                );
            }
            None => {}
        }
        Vec::new()
    }

    /// Deletes a group; worktrees holding work go only when `worktrees` says so.
    pub(super) fn delete_group(&mut self, id: &str, worktrees: WorktreeChoice) -> Vec<Command> {
        match self.edits.delete_group(id) {
            Ok(mut removal) => {
                removal.worktrees_with_work = worktrees;
                self.team_panel.forget(id);
                self.transcripts.forget(&removal.sessions);
                self.files_go(removal)
            }
            Err(e) => self.not_deleted(&e),
        }
    }

    /// After a deletion: the selection moves on, and the files go (in the runtime).
    fn files_go(&mut self, removal: crate::workspace::Removal) -> Vec<Command> {
        let mut commands = self.on_selection_changed();
        commands.push(Command::RemoveFiles(removal));
        commands
    }

    fn not_deleted(&mut self, e: &EditError) -> Vec<Command> {
        self.refuse("Not deleted", &e.to_string());
        Vec::new()
    }

    pub(super) fn on_dialog_result(&mut self, result: DialogResult) -> Vec<Command> {
        match result {
            DialogResult::Confirmed(action) => self.on_confirmed(action),
            DialogResult::Text(TextPurpose::ReflectIterations(id, goal), text) => {
                match self.start_reflection(id, goal, &text) {
                    Ok(commands) => commands,
                    Err(e) => {
                        self.dialogs.error("Not started", e);
                        Vec::new()
                    }
                }
            }
            DialogResult::Text(TextPurpose::RelayEdit(id), text) => self.on_relay_text(id, text, true),
            DialogResult::Text(TextPurpose::RelayNote(id), text) => self.on_relay_text(id, text, false),
            DialogResult::Relay { group_id, choice } => self.on_relay_choice(group_id, choice),
            DialogResult::Text(purpose, text) => match self.apply_text(purpose, text) {
                Ok(commands) => commands,
                Err(e) => {
                    self.dialogs.error("Not changed", e);
                    Vec::new()
                }
            },
            DialogResult::Approval {
                approval_id,
                decision,
            } => vec![Command::AnswerApproval {
                approval_id,
                decision,
            }],
            DialogResult::Chose(action, option) => self.on_chose(action, option),
            DialogResult::MergeWorktree(worktree) => vec![self.plan_merge(worktree)],
            DialogResult::Picked(purpose, value) => match self.apply_pick(purpose, value) {
                Ok(commands) => commands,
                Err(e) => {
                    self.dialogs.error("Not changed", e);
                    Vec::new()
                }
            },
        }
    }

    fn on_confirmed(&mut self, action: ConfirmAction) -> Vec<Command> {
        match action {
            ConfirmAction::Quit => {
                self.should_quit = true;
                vec![Command::Quit]
            }
            // The user saw every file, the existing ones marked: replacing them is agreed.
            ConfirmAction::ExportOverwrite(group_id) | ConfirmAction::Export(group_id) => {
                vec![Command::ExportGroup {
                    group_id,
                    confirmed: true,
                }]
            }
            ConfirmAction::RemoveEvaluator(group_id, _) => self.remove_evaluator(&group_id),
            ConfirmAction::PruneHeadless(leftovers) => self.prune_confirmed(leftovers),
            ConfirmAction::DeleteGroup(id) => self.delete_group(&id, WorktreeChoice::Keep),
            ConfirmAction::DeleteSession(id) => match self.edits.delete_session(&id) {
                Ok(removal) => {
                    self.transcripts.forget([&id]);
                    self.files_go(removal)
                }
                Err(e) => self.not_deleted(&e),
            },
        }
    }

    fn apply_text(&mut self, purpose: TextPurpose, text: String) -> Result<Vec<Command>, String> {
        let text_err = |e: EditError| e.to_string();
        match purpose {
            TextPurpose::RenameGroup(id) => self.edits.rename_group(&id, &text).map_err(text_err)?,
            TextPurpose::RenameSession(id) => self.edits.rename_session(&id, &text).map_err(text_err)?,
            TextPurpose::NewSession(group_id) => {
                let new_id = self.edits.create_session(&group_id, &text).map_err(text_err)?;
                self.select_row(&Row::Session(new_id));
                self.focus = Focus::Composer;
                // Its (empty) transcript is read like any other, so the pane is never left
                // "loading".
                return Ok(self.on_selection_changed());
            }
            TextPurpose::MaxIterations(id) => {
                if self.team_running(&id) {
                    return Err(RUNNING_REFUSAL.into());
                }
                self.edits.set_max_iterations(&id, &text).map_err(text_err)?;
            }
            // Started or answered by `on_dialog_result`.
            TextPurpose::ReflectIterations(..) | TextPurpose::RelayEdit(_) | TextPurpose::RelayNote(_) => {}
            TextPurpose::SystemPrompt(id) => self.edits.set_system_prompt(&id, &text).map_err(text_err)?,
            TextPurpose::MemberName(group_id) => {
                let name = text.trim().to_string();
                if name.is_empty() || name.contains('/') {
                    return Err("a member needs a name without `/`".into());
                }
                // The default model is listed first.
                self.push_model_picker(PickPurpose::MemberModel(group_id, name), None);
            }
            TextPurpose::MemberPrompt(group_id, name, model) => {
                let id = self
                    .edits
                    .add_member(&group_id, &name, &model, &text)
                    .map_err(text_err)?;
                let note = if self.team_running(&group_id) {
                    " (it joins from the team's next run)"
                } else {
                    ""
                };
                self.flash(format!("member added{note}"), false);
                self.select_row(&Row::Session(id));
                return Ok(self.on_selection_changed());
            }
        }
        Ok(Vec::new())
    }

    fn apply_pick(&mut self, purpose: PickPurpose, value: String) -> Result<Vec<Command>, String> {
        match purpose {
            PickPurpose::Preset => {
                let catalog = self.catalog.as_ref().ok_or("the presets are still loading")?;
                let preset = catalog
                    .find(&value)
                    .ok_or_else(|| format!("no preset named `{value}`"))?
                    .clone();
                Ok(self.on_preset_picked(preset))
            }
            PickPurpose::Strategy(preset) => self.on_strategy_picked(&preset, &value),
            PickPurpose::Model(id) => {
                self.edits
                    .set_session_model(&id, &value)
                    .map_err(|e| e.to_string())?;
                Ok(Vec::new())
            }
            PickPurpose::GroupModel(id) => {
                self.edits
                    .set_group_model(&id, &value)
                    .map_err(|e| e.to_string())?;
                Ok(Vec::new())
            }
            PickPurpose::Mode(id) => {
                let mode = value.parse::<Mode>().map_err(|e| e.to_string())?;
                if self.team_running(&id) {
                    return Err(RUNNING_REFUSAL.into());
                }
                self.edits.set_mode(&id, mode).map_err(|e| e.to_string())?;
                Ok(Vec::new())
            }
            PickPurpose::MemberModel(group_id, name) => {
                if !self.config.serves(&value) {
                    return Err(format!("`{value}` names no configured provider"));
                }
                self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
                    format!("System prompt of {name} (Ctrl-S adds the member)"),
                    TextPurpose::MemberPrompt(group_id, name, value),
                    "",
                    true,
                ))));
                Ok(Vec::new())
            }
        }
    }
}
