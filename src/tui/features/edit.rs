//! The edit controller: the dialogs that change the organization (a new session, a member
//! added, rename, model, system prompt, mode, max iterations, delete) and what their answers
//! change. Every change goes through `cx.edits`; what the app shows next (the new row, the
//! views of what was deleted) it asks with `Then` steps.

use super::worktrees::Worktrees;
use super::{Cx, Then};
use crate::config::Config;
use crate::model::{MAX_ITERATIONS, Mode};
use crate::tui::command::Command;
use crate::tui::dialogs::{ConfirmAction, Dialog, ListItem, ListPicker, PickPurpose, TextInput, TextPurpose};
use crate::tui::layout::Focus;
use crate::tui::sidebar::Row;
use crate::workspace::{EditError, WorktreeChoice};

/// Why the mode and max iterations cannot change now: the run in progress keeps its own.
const RUNNING_REFUSAL: &str = "the team is running: mode and max iterations change after it (x stops)";

/// A new plain session: in the selected plain group, else (a team is selected) in the
/// default group. Team members are added with their own action.
pub fn open_new_session(cx: &mut Cx) {
    let group_id = match cx.selection().group.clone() {
        Some(id) if !cx.is_team(&id) => id,
        _ => match cx.org.read(|o| o.default_group().map(|g| g.id.clone())) {
            Some(id) => id,
            None => return,
        },
    };
    let suggestion = cx.org.read(|o| o.unique_session_name("session"));
    cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
        "New session: name",
        TextPurpose::NewSession(group_id),
        &suggestion,
        false,
    ))));
}

/// Adding a member to the selected team: its name first.
pub fn open_add_member(cx: &mut Cx) {
    let Some(group_id) = cx.team_or_say() else {
        return;
    };
    cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
        "Add a team member: name",
        TextPurpose::MemberName(group_id),
        "member",
        false,
    ))));
}

pub fn open_rename(cx: &mut Cx) {
    // Runs and events know groups and sessions by id: renaming while busy is fine.
    let (title, purpose, current) = match cx.selection().row.clone() {
        Some(Row::Group(id)) => {
            let name = cx.org.read(|o| o.group(&id).map(|g| g.name.clone()));
            ("Rename group", TextPurpose::RenameGroup(id), name)
        }
        Some(Row::Session(id)) => {
            let name = cx.org.read(|o| o.session(&id).map(|s| s.name.clone()));
            ("Rename session", TextPurpose::RenameSession(id), name)
        }
        None => return,
    };
    cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
        title,
        purpose,
        &current.unwrap_or_default(),
        false,
    ))));
}

pub fn open_model_picker(cx: &mut Cx, config: &Config) {
    let (purpose, current) = match cx.selection().row.clone() {
        Some(Row::Session(id)) => {
            let m = cx.org.read(|o| o.session(&id).map(|s| s.model.clone()));
            (PickPurpose::Model(id), m)
        }
        Some(Row::Group(id)) => (PickPurpose::GroupModel(id), None),
        None => return,
    };
    push_model_picker(cx, config, purpose, current);
}

/// The model picker (configured providers' models, or a typed slug) for `purpose`.
fn push_model_picker(cx: &mut Cx, config: &Config, purpose: PickPurpose, current: Option<String>) {
    let mut models: Vec<String> = vec![config.default_model()];
    let mut add = |m: String| {
        if !m.is_empty() && !models.contains(&m) {
            models.push(m);
        }
    };
    cx.org
        .read(|o| o.sessions.iter().for_each(|s| add(s.model.clone())));
    // Each configured provider's `models:` list.
    for p in &config.providers {
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
            let served = config.serves(&m);
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
    for p in &config.providers {
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
    cx.dialogs.push(Dialog::Picker(picker));
}

pub fn open_system_prompt(cx: &mut Cx) {
    let Some(id) = cx.selection().session.clone() else {
        cx.flash.say("select a session to edit its system prompt", true);
        return;
    };
    let current = cx
        .org
        .read(|o| o.session(&id).and_then(|s| s.system_prompt.clone()))
        .unwrap_or_default();
    cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
        "System prompt",
        TextPurpose::SystemPrompt(id),
        &current,
        true,
    ))));
}

pub fn open_mode_picker(cx: &mut Cx) {
    let Some(id) = cx.team_or_say() else {
        return;
    };
    if cx.team_running(&id) {
        cx.flash.say(RUNNING_REFUSAL, true);
        return;
    }
    let current = cx.org.read(|o| o.group(&id).map(|g| g.mode));
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
    // The cursor starts on the current mode.
    let picker = ListPicker::new("Mode", PickPurpose::Mode(id), items);
    let picker = match current {
        Some(mode) => picker.starting_at(&mode.to_string()),
        None => picker,
    };
    cx.dialogs.push(Dialog::Picker(picker));
}

pub fn open_max_iterations(cx: &mut Cx) {
    let Some(id) = cx.team_or_say() else {
        return;
    };
    if cx.team_running(&id) {
        cx.flash.say(RUNNING_REFUSAL, true);
        return;
    }
    let current = cx
        .org
        .read(|o| o.group(&id).map(|g| g.max_iterations))
        .unwrap_or_else(crate::model::default_max_iterations);
    let title = format!(
        "Max iterations ({}-{})",
        MAX_ITERATIONS.start(),
        MAX_ITERATIONS.end()
    );
    cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
        &title,
        TextPurpose::MaxIterations(id),
        &current.to_string(),
        false,
    ))));
}

/// The delete key: says what goes and asks (a team with worktrees first has them looked at).
pub fn open_delete(cx: &mut Cx, worktrees: &mut Worktrees) -> Vec<Command> {
    match cx.selection().row.clone() {
        Some(Row::Group(id)) => {
            if cx.runs.group_busy(&id) {
                cx.refuse(
                    "Cannot delete now",
                    "This group (or one of its sessions) is running. Stop it first (the stop key), then delete.",
                );
                return Vec::new();
            }
            if let Some(commands) = worktrees.delete_team(cx, &id) {
                return commands;
            }
            match cx.edits.describe_delete_group(&id) {
                Ok(text) => cx.dialogs.confirm("Delete", text, ConfirmAction::DeleteGroup(id)),
                Err(e) => cx.flash.say(e.to_string(), true),
            }
        }
        Some(Row::Session(id)) => {
            let Some((name, group, branch)) = cx.org.read(|o| {
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
            if cx.runs.session_busy(&id) || cx.team_running(&group) {
                cx.refuse(
                    "Cannot delete now",
                    "This session (or its team) has a turn in flight. Stop it first (the stop key), then delete.",
                );
                return Vec::new();
            }
            let worktree = branch
                .map(|b| format!("\nIts worktree ({b}), if no other session works there, is removed with its branch when it holds no work, and kept when it does."))
                .unwrap_or_default();
            cx.dialogs.confirm(
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
pub fn delete_group(cx: &mut Cx, id: &str, worktrees: WorktreeChoice) -> Vec<Command> {
    match cx.edits.delete_group(id) {
        Ok(mut removal) => {
            removal.worktrees_with_work = worktrees;
            cx.then(Then::Deleted(removal));
        }
        Err(e) => not_deleted(cx, &e),
    }
    Vec::new()
}

/// Deletes a session (the user confirmed).
pub fn delete_session(cx: &mut Cx, id: &str) -> Vec<Command> {
    match cx.edits.delete_session(id) {
        Ok(removal) => cx.then(Then::Deleted(removal)),
        Err(e) => not_deleted(cx, &e),
    }
    Vec::new()
}

fn not_deleted(cx: &mut Cx, e: &EditError) {
    cx.refuse("Not deleted", &e.to_string());
}

/// The text of a dialog that changes the organization.
pub fn apply_text(
    cx: &mut Cx,
    config: &Config,
    purpose: TextPurpose,
    text: String,
) -> Result<Vec<Command>, String> {
    let text_err = |e: EditError| e.to_string();
    match purpose {
        TextPurpose::RenameGroup(id) => cx.edits.rename_group(&id, &text).map_err(text_err)?,
        TextPurpose::RenameSession(id) => cx.edits.rename_session(&id, &text).map_err(text_err)?,
        TextPurpose::NewSession(group_id) => {
            let new_id = cx.edits.create_session(&group_id, &text).map_err(text_err)?;
            // Its (empty) transcript is read like any other, so the pane is never left
            // "loading".
            cx.then(Then::Cursor(Row::Session(new_id)));
            cx.then(Then::Focus(Focus::Composer));
            cx.then(Then::SelectionChanged);
        }
        TextPurpose::MaxIterations(id) => {
            if cx.team_running(&id) {
                return Err(RUNNING_REFUSAL.into());
            }
            cx.edits.set_max_iterations(&id, &text).map_err(text_err)?;
        }
        // Started or answered by the app's routing.
        TextPurpose::ReflectIterations(..) | TextPurpose::RelayEdit(_) | TextPurpose::RelayNote(_) => {}
        TextPurpose::SystemPrompt(id) => cx.edits.set_system_prompt(&id, &text).map_err(text_err)?,
        TextPurpose::MemberName(group_id) => {
            let name = text.trim().to_string();
            if name.is_empty() || name.contains('/') {
                return Err("a member needs a name without `/`".into());
            }
            // The default model is listed first.
            push_model_picker(cx, config, PickPurpose::MemberModel(group_id, name), None);
        }
        TextPurpose::MemberPrompt(group_id, name, model) => {
            let id = cx
                .edits
                .add_member(&group_id, &name, &model, &text)
                .map_err(text_err)?;
            let note = if cx.team_running(&group_id) {
                " (it joins from the team's next run)"
            } else {
                ""
            };
            cx.flash.say(format!("member added{note}"), false);
            cx.select(Row::Session(id));
        }
    }
    Ok(Vec::new())
}

/// A pick that changes the organization (a preset and a strategy make a team: the worktrees
/// controller's).
pub fn apply_pick(
    cx: &mut Cx,
    config: &Config,
    purpose: PickPurpose,
    value: String,
) -> Result<Vec<Command>, String> {
    match purpose {
        PickPurpose::Preset | PickPurpose::Strategy(_) => Ok(Vec::new()),
        PickPurpose::Model(id) => {
            cx.edits
                .set_session_model(&id, &value)
                .map_err(|e| e.to_string())?;
            Ok(Vec::new())
        }
        PickPurpose::GroupModel(id) => {
            cx.edits.set_group_model(&id, &value).map_err(|e| e.to_string())?;
            Ok(Vec::new())
        }
        PickPurpose::Mode(id) => {
            let mode = value.parse::<Mode>().map_err(|e| e.to_string())?;
            if cx.team_running(&id) {
                return Err(RUNNING_REFUSAL.into());
            }
            cx.edits.set_mode(&id, mode).map_err(|e| e.to_string())?;
            Ok(Vec::new())
        }
        PickPurpose::MemberModel(group_id, name) => {
            if !config.serves(&value) {
                return Err(format!("`{value}` names no configured provider"));
            }
            cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
                format!("System prompt of {name} (Ctrl-S adds the member)"),
                TextPurpose::MemberPrompt(group_id, name, value),
                "",
                true,
            ))));
            Ok(Vec::new())
        }
    }
}
