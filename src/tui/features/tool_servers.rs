//! The tool servers a session sees: a checklist of config.yaml's `mcp_servers:` (never a
//! repository's) for the selected session, or for every session of the selected group (a
//! team: every member). What is saved goes through `cx.edits` (`set_tools`), which accepts
//! configured servers only and refuses while the sessions are busy.

use super::Cx;
use crate::config::Config;
use crate::tools::Approval;
use crate::tools::mcp::McpServerConfig;
use crate::tui::action::Action;
use crate::tui::command::Command;
use crate::tui::dialogs::{Check, CheckItem, CheckPurpose, Checklist, Dialog};
use crate::tui::sidebar::Row;
use crate::workspace::ToolChange;

const TITLE: &str = "Tool servers";

/// Said when config.yaml names no server.
const NONE_CONFIGURED: &str = "No tool servers are configured, so no session has tools.\n\nAdd them under mcp_servers: in config.yaml, then start huddle again, e.g.\n\nmcp_servers:\n  time: { command: [mcp-server-time], approval: ask }\n\nSee docs/tools-and-approvals.md.";

/// The checklist for the selected session (or every session of the selected group).
pub fn open(cx: &mut Cx, config: &Config) {
    let Some(row) = cx.selection().row.clone() else {
        return;
    };
    if config.mcp_servers.is_empty() {
        cx.dialogs.info(TITLE, NONE_CONFIGURED);
        return;
    }
    let stop = cx.keymap.key_label(Action::StopCycle);
    let (purpose, note, tools) = match row {
        Row::Session(id) => {
            let Some((name, group, tools)) = cx.org.read(|o| {
                let name = crate::describe::Names::of_session(o, &id)?;
                o.session(&id)
                    .map(|s| (name, s.group_id.clone(), s.tools.clone()))
            }) else {
                return;
            };
            if cx.runs.session_busy(&id) || cx.team_running(&group) {
                cx.flash.say(
                    format!("`{name}` is busy: its tools change after its turn ({stop} stops it)"),
                    true,
                );
                return;
            }
            let note = format!("The tool servers `{name}` sees, from its next turn.");
            (CheckPurpose::SessionTools(id), note, vec![tools])
        }
        Row::Group(id) => {
            let Some((name, team, tools)) = cx.org.read(|o| {
                o.group(&id).map(|g| {
                    let tools: Vec<Vec<String>> =
                        o.sessions_in(&id).iter().map(|s| s.tools.clone()).collect();
                    (g.name.clone(), g.is_team(), tools)
                })
            }) else {
                return;
            };
            if cx.runs.group_busy(&id) {
                cx.flash.say(
                    format!("`{name}` is running: its tools change after the run ({stop} stops it)"),
                    true,
                );
                return;
            }
            if tools.is_empty() {
                cx.flash.say(format!("`{name}` has no sessions"), true);
                return;
            }
            let whom = if team {
                "every member of team"
            } else {
                "every session of"
            };
            let note =
                format!("The tool servers {whom} `{name}` sees ([-]: some of them; left so, it stays).");
            (CheckPurpose::GroupTools(id), note, tools)
        }
    };
    let items = config
        .mcp_servers
        .iter()
        .map(|(name, server)| {
            let with = tools.iter().filter(|t| t.contains(name)).count();
            CheckItem {
                label: name.clone(),
                tag: approval_word(server.approval).into(),
                detail: detail(server),
                check: match with {
                    0 => Check::Off,
                    n if n == tools.len() => Check::On,
                    _ => Check::Some,
                },
            }
        })
        .collect();
    cx.dialogs.push(Dialog::Checklist(Box::new(Checklist::new(
        TITLE, note, purpose, items,
    ))));
}

/// The checklist saved: what is on is given, what is off is taken (a `[-]` stays).
pub fn apply(cx: &mut Cx, purpose: CheckPurpose, answer: Vec<(String, Check)>) -> Vec<Command> {
    let names = |wanted: Check| {
        answer
            .iter()
            .filter(|(_, c)| *c == wanted)
            .map(|(n, _)| n.clone())
            .collect::<Vec<_>>()
    };
    let change = ToolChange {
        on: names(Check::On),
        off: names(Check::Off),
    };
    let done = match &purpose {
        CheckPurpose::SessionTools(id) => cx.edits.set_tools(id, &change).map(|()| {
            let (name, tools) = cx
                .org
                .read(|o| {
                    let name = crate::describe::Names::of_session(o, id)?;
                    o.session(id).map(|s| (name, s.tools.clone()))
                })
                .unwrap_or_default();
            match tools.is_empty() {
                true => format!("`{name}` has no tool servers"),
                false => format!("`{name}` sees {}", tools.join(", ")),
            }
        }),
        CheckPurpose::GroupTools(id) => cx
            .edits
            .set_group_tools(id, &change)
            .map(|n| format!("tool servers of {n} session(s) changed")),
    };
    match done {
        Ok(said) => cx.flash.say(said, false),
        Err(e) => cx.refuse("Tools not changed", &e.to_string()),
    }
    Vec::new()
}

fn approval_word(approval: Approval) -> &'static str {
    match approval {
        Approval::Ask => "ask",
        Approval::Auto => "auto",
    }
}

/// How the server is reached, and what its approval means.
fn detail(server: &McpServerConfig) -> String {
    let reached = match &server.url {
        Some(url) => format!("reaches {url}"),
        None => format!("runs {}", server.command.join(" ")),
    };
    let approval = match server.approval {
        Approval::Ask => "each call waits for your yes",
        Approval::Auto => "calls run without asking",
    };
    format!("{reached}\n{}: {approval}", approval_word(server.approval))
}
