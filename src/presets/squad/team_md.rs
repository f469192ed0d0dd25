//! Writing `team.md`: a fresh file for a repo that has none, or an existing file edited in
//! place. An existing file is the team's own document (tagline, coordinator, Scribe, Ralph,
//! humans, project context, notes), so only what the group owns changes: the worker rows of the
//! roster tables (the tables discovery reads), the title when the team name differs, the tagline
//! when the group has a different one, and the `mode:` line. Pure text in, text out.

use crate::model::{Mode, PresetWorker};
use crate::naming::slug;

use super::charter::worker_role;
use super::read::team_name;
use super::roster::{RosterTable, SQUAD_DEFAULT_MODE, doc_lines, parse_team, split_row};

/// What a team.md says about the team, as write-back wants it.
pub struct TeamText<'a> {
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub mode: Mode,
    /// The workers with their folder-safe agent names, in order.
    pub workers: &'a [(String, &'a PresetWorker)],
    /// The team folder's name (`.squad` or the legacy `.ai-team`), for new charter cells.
    pub folder: &'a str,
}

/// A new team.md: title, tagline, mode and a `Member | Role` roster.
pub fn fresh_team_md(team: &TeamText) -> String {
    let mut out = format!("# {}\n\n", team.name.trim());
    if let Some(d) = team.description.map(one_line).filter(|d| !d.is_empty()) {
        out.push_str(&format!("> {d}\n\n"));
    }
    out.push_str(&format!(
        "mode: {}\n\n## Members\n\n| Member | Role |\n|--------|------|\n",
        team.mode
    ));
    for (name, w) in team.workers {
        out.push_str(&format!(
            "| {} | {} |\n",
            cell(&member_name(name, w)),
            cell(&worker_role(w))
        ));
    }
    out
}

/// `existing` (team.md as discovery reads it: no BOM, `\n` line endings) with the group's team
/// written into it. Rows of members that are not workers, other columns, other sections and
/// other tables stay as they are; an unchanged team gives back `existing` unchanged.
/// `current` is the team's (worker, role) list as discovery reads it (used when the roster is
/// not a table); `repo_name` gives the fallback team name.
pub fn edit_team_md(
    existing: &str,
    team: &TeamText,
    current: &[(String, String)],
    repo_name: &str,
) -> String {
    let doc = parse_team(existing);
    let lines = doc_lines(existing);
    let mut out: Vec<Option<String>> = lines.iter().map(|l| Some(l.to_string())).collect();
    let mut top: Vec<String> = Vec::new();
    let mut after: Vec<Vec<String>> = vec![Vec::new(); lines.len()];
    let mut bottom: Vec<String> = Vec::new();
    let blank_after = |i: usize| lines.get(i + 1).is_none_or(|l| l.trim().is_empty());

    if team_name(doc.title.as_deref(), repo_name) != team.name.trim() {
        let heading = format!("# {}", team.name.trim());
        match doc.title_line {
            Some(i) => out[i] = Some(heading),
            None => top.extend([heading, String::new()]),
        }
    }
    // Lines inserted under the title go after the tagline (its own or a new one).
    let mut insert = |anchor: Option<usize>, new: String| match anchor {
        Some(i) => after[i].extend([String::new(), new]),
        None => top.extend([new, String::new()]),
    };
    if let Some(d) = team.description.map(one_line).filter(|d| !d.is_empty())
        && doc.description.as_deref() != Some(d.as_str())
    {
        match doc.description_line {
            Some(i) => out[i] = Some(format!("> {d}")),
            None => insert(doc.title_line, format!("> {d}")),
        }
    }
    let file_mode = doc.mode.as_deref().map(str::parse::<Mode>);
    // A line discovery cannot parse means the default mode: while the team has that mode, the
    // line (`- **Mode:** autonomous, the coordinator decides`) says nothing wrong.
    let unparsed_default = matches!(file_mode, Some(Err(_))) && team.mode == SQUAD_DEFAULT_MODE;
    match doc.mode_line {
        Some(i) if file_mode != Some(Ok(team.mode)) && !unparsed_default => {
            out[i] = Some(replace_mode_value(lines[i], doc.mode.as_deref(), team.mode));
        }
        None if team.mode != SQUAD_DEFAULT_MODE => {
            insert(
                doc.description_line.or(doc.title_line),
                format!("mode: {}", team.mode),
            );
        }
        _ => {}
    }
    // Lines inserted after line i must not run into the text that follows them.
    for (i, new) in after.iter_mut().enumerate() {
        if !new.is_empty() && !blank_after(i) {
            new.push(String::new());
        }
    }

    if doc.tables.iter().any(|t| t.rows.iter().any(|r| r.worker)) {
        edit_roster_rows(&doc.tables, &lines, team, &mut out, &mut after);
    } else {
        // The roster came from `### Name — Role` sections or the agents/ folders: left as it is
        // when the team is the same, else every worker gets a table row (tables are what
        // discovery prefers), in a table discovery counts workers from, or a new one.
        let wanted: Vec<(String, String)> = team
            .workers
            .iter()
            .map(|(n, w)| (n.clone(), w.role.clone().unwrap_or_default()))
            .collect();
        if wanted != current {
            let all: Vec<&(String, &PresetWorker)> = team.workers.iter().collect();
            match doc.tables.iter().find(|t| !t.humans) {
                Some(table) => append_rows(table, &all, team.folder, &mut after),
                None => {
                    bottom.extend(["".into(), "## Members".into(), String::new()]);
                    bottom.extend(["| Member | Role |".to_string(), "|--------|------|".to_string()]);
                    for (name, w) in team.workers {
                        bottom.push(format!(
                            "| {} | {} |",
                            cell(&member_name(name, w)),
                            cell(&worker_role(w))
                        ));
                    }
                }
            }
        }
    }

    let mut text: Vec<String> = top;
    for (i, line) in out.into_iter().enumerate() {
        text.extend(line);
        text.append(&mut after[i]);
    }
    text.extend(bottom);
    let mut result = text.join("\n");
    if existing.ends_with('\n') || existing.is_empty() {
        result.push('\n');
    }
    result
}

/// Worker rows: kept (role updated) for workers still in the group, dropped for the others;
/// new workers are appended to the first table that lists workers (there is one).
fn edit_roster_rows(
    tables: &[RosterTable],
    lines: &[&str],
    team: &TeamText,
    out: &mut [Option<String>],
    after: &mut [Vec<String>],
) {
    let workers = team.workers;
    let mut placed: Vec<&str> = Vec::new();
    for table in tables {
        for row in table.rows.iter().filter(|r| r.worker) {
            let key = slug(&row.name);
            if key.is_empty() {
                continue; // Discovery skips it too.
            }
            match workers.iter().find(|(n, _)| *n == key) {
                Some((name, w)) => {
                    if placed.contains(&name.as_str()) {
                        continue; // A second listing, which discovery ignores.
                    }
                    placed.push(name);
                    let role = worker_role(w);
                    let unchanged = row.role == role || (w.role.is_none() && row.role.is_empty());
                    if !unchanged {
                        out[row.line] = Some(replace_cell(lines[row.line], table.role_col, &cell(&role)));
                    }
                }
                None => out[row.line] = None,
            }
        }
    }
    let new: Vec<&(String, &PresetWorker)> = workers
        .iter()
        .filter(|(n, _)| !placed.contains(&n.as_str()))
        .collect();
    if let Some(table) = tables.iter().find(|t| t.rows.iter().any(|r| r.worker)) {
        append_rows(table, &new, team.folder, after);
    }
}

/// Rows for `workers` after the last line of `table`, in its columns.
fn append_rows(
    table: &RosterTable,
    workers: &[&(String, &PresetWorker)],
    folder: &str,
    after: &mut [Vec<String>],
) {
    for (name, w) in workers {
        let mut cells = vec![String::new(); table.columns.max(table.role_col + 1).max(table.name_col + 1)];
        cells[table.name_col] = cell(&member_name(name, w));
        cells[table.role_col] = cell(&worker_role(w));
        if let Some(c) = table.charter_col.filter(|&c| c < cells.len()) {
            cells[c] = format!("`{folder}/agents/{name}/charter.md`");
        }
        if let Some(c) = table.status_col.filter(|&c| c < cells.len()) {
            cells[c] = "✅ Active".into();
        }
        after[table.end_line - 1].push(format!("| {} |", cells.join(" | ")));
    }
}

/// The roster name of a worker: its display name when that slugs back to the agent name (or the
/// team would not read back the same), else the agent name.
fn member_name(name: &str, w: &PresetWorker) -> String {
    w.display_name
        .as_deref()
        .filter(|d| slug(d) == name)
        .unwrap_or(name)
        .to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table cell: one line, pipes escaped.
pub fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// The byte ranges of a table row's cells, split as [`split_row`] splits them (`\\|` is part of
/// a cell).
fn cell_spans(row: &str) -> Vec<(usize, usize)> {
    let mut start = row.len() - row.trim_start().len();
    if row[start..].starts_with('|') {
        start += 1;
    }
    let mut spans = Vec::new();
    let mut cell_start = start;
    let mut chars = row[start..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if chars.peek().map(|p| p.1) == Some('|') => {
                chars.next();
            }
            '|' => {
                spans.push((cell_start, start + i));
                cell_start = start + i + 1;
            }
            _ => {}
        }
    }
    if !row[cell_start..].trim().is_empty() {
        spans.push((cell_start, row.trim_end().len()));
    }
    spans
}

/// `row` with cell `col` replaced by `value`; the other cells are kept byte for byte.
fn replace_cell(row: &str, col: usize, value: &str) -> String {
    if let Some(&(start, end)) = cell_spans(row).get(col) {
        return format!("{} {value} {}", &row[..start], &row[end..]);
    }
    // The row is short of cells: rebuild it with the missing ones empty.
    let mut cells: Vec<String> = split_row(row).iter().map(|c| c.replace('|', "\\|")).collect();
    cells.resize(col + 1, String::new());
    cells[col] = value.to_string();
    format!("| {} |", cells.join(" | "))
}

/// A `mode:` line with its value replaced, keeping its formatting (`- **Mode:** x`).
fn replace_mode_value(line: &str, old: Option<&str>, mode: Mode) -> String {
    let new = mode.to_string();
    match old.and_then(|o| line.rfind(o).map(|at| (at, o.len()))) {
        Some((at, len)) => format!("{}{new}{}", &line[..at], &line[at + len..]),
        None => format!("mode: {new}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_stay_on_one_line() {
        assert_eq!(cell("a |\n b"), "a \\| b");
    }

    #[test]
    fn one_cell_is_replaced_and_the_others_kept() {
        assert_eq!(
            replace_cell("| Jane  | Dev | `x \\| y` | ✅ Active |", 1, "UI Lead"),
            "| Jane  | UI Lead | `x \\| y` | ✅ Active |"
        );
        assert_eq!(replace_cell("|a|b|c|", 2, "z"), "|a|b| z |");
        assert_eq!(replace_cell("| Solo |", 1, "Dev"), "| Solo | Dev |");
        assert_eq!(cell_spans("| a | b"), [(1, 4), (5, 7)]);
    }

    #[test]
    fn mode_value_keeps_its_formatting() {
        assert_eq!(
            replace_mode_value("- **Mode:** broadcast", Some("broadcast"), Mode::Sequential),
            "- **Mode:** sequential"
        );
        assert_eq!(
            replace_mode_value("mode: ???", None, Mode::Broadcast),
            "mode: broadcast"
        );
    }

    fn worker(name: &str, role: &str) -> PresetWorker {
        PresetWorker {
            name: name.into(),
            display_name: None,
            role: Some(role.into()).filter(|r: &String| !r.is_empty()),
            model: None,
            system_prompt: Some("You are someone. Go.".into()),
            ..PresetWorker::default()
        }
    }

    fn text<'a>(workers: &'a [(String, &'a PresetWorker)], mode: Mode) -> TeamText<'a> {
        TeamText {
            name: "Kids",
            description: None,
            mode,
            workers,
            folder: ".squad",
        }
    }

    #[test]
    fn section_roster_is_kept_when_the_team_is_the_same() {
        let existing = "# Kids\n\n## Team Roster\n\n### Maria — Pedagogy\nNotes.\n";
        let maria = worker("maria", "Pedagogy");
        let workers = vec![("maria".to_string(), &maria)];
        let current = [("maria".to_string(), "Pedagogy".to_string())];
        let t = text(&workers, SQUAD_DEFAULT_MODE);
        assert_eq!(edit_team_md(existing, &t, &current, "r"), existing);

        // A changed team gets a roster table, which discovery prefers; the rest stays.
        let sam = worker("sam", "Tutor");
        let workers = vec![("maria".to_string(), &maria), ("sam".to_string(), &sam)];
        let t = text(&workers, SQUAD_DEFAULT_MODE);
        let edited = edit_team_md(existing, &t, &current, "r");
        assert!(edited.starts_with(existing), "{edited}");
        let doc = parse_team(&edited);
        let got: Vec<(&str, &str)> = doc
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.role.as_str()))
            .collect();
        assert_eq!(got, [("maria", "Pedagogy"), ("sam", "Tutor")]);
    }

    #[test]
    fn title_tagline_and_mode_are_added_when_missing() {
        let existing = "| Name | Role |\n|---|---|\n| Ann | Dev |\n| Scribe | Logger |\n";
        let ann = worker("ann", "Dev");
        let workers = vec![("ann".to_string(), &ann)];
        let t = TeamText {
            name: "Kids",
            description: Some("For  kids"),
            mode: Mode::Broadcast,
            workers: &workers,
            folder: ".squad",
        };
        let edited = edit_team_md(existing, &t, &[], "r");
        assert_eq!(
            edited,
            "# Kids\n\n> For kids\n\nmode: broadcast\n\n| Name | Role |\n|---|---|\n| Ann | Dev |\n| Scribe | Logger |\n"
        );
        let doc = parse_team(&edited);
        assert_eq!(doc.title.as_deref(), Some("Kids"));
        assert_eq!(doc.description.as_deref(), Some("For kids"));
        assert_eq!(doc.mode.as_deref(), Some("broadcast"));
    }

    #[test]
    fn removed_workers_lose_their_rows_and_specials_stay() {
        let existing = "# Kids\n\n## Members\n\n| Name | Role | Status |\n|---|---|---|\n| Ann | Dev | ✅ |\n| Bob | QA | ✅ |\n| Tamir | Owner | 👤 Human |\n| Ralph | Monitor | 🔄 |\n\n## Human Members\n\n| Name | Role |\n|---|---|\n| Dina | PM |\n";
        let ann = worker("ann", "Dev");
        let workers = vec![("ann".to_string(), &ann)];
        let edited = edit_team_md(existing, &text(&workers, SQUAD_DEFAULT_MODE), &[], "r");
        assert_eq!(edited, existing.replace("| Bob | QA | ✅ |\n", ""));
    }

    #[test]
    fn new_workers_go_to_a_table_discovery_counts_workers_from() {
        let ann = worker("ann", "Dev");
        let workers = vec![("ann".to_string(), &ann)];
        let t = text(&workers, SQUAD_DEFAULT_MODE);
        // Only a human table: a new Members table.
        let humans = "# Kids\n\n## Human Members\n\n| Name | Role |\n|---|---|\n| Dina | PM |\n";
        let edited = edit_team_md(humans, &t, &[], "r");
        assert_eq!(
            edited,
            format!("{humans}\n## Members\n\n| Member | Role |\n|--------|------|\n| ann | Dev |\n")
        );
        // A table of special members outside a human section: a row of that table.
        let specials =
            "# Kids\n\n## Members\n\n| Name | Role | Charter |\n|---|---|---|\n| Scribe | Logger | — |\n";
        let edited = edit_team_md(specials, &t, &[], "r");
        assert!(
            edited.ends_with("| Scribe | Logger | — |\n| ann | Dev | `.squad/agents/ann/charter.md` |\n"),
            "{edited}"
        );
        let names: Vec<String> = parse_team(&edited).members.into_iter().map(|m| m.name).collect();
        assert_eq!(names, ["ann"]);
        // The same team read from the agents/ folders: nothing changes.
        let current = [("ann".to_string(), "Dev".to_string())];
        assert_eq!(edit_team_md(humans, &t, &current, "r"), humans);
        // A legacy team's charter cells name its own folder.
        let legacy = TeamText {
            folder: ".ai-team",
            ..text(&workers, SQUAD_DEFAULT_MODE)
        };
        assert!(edit_team_md(specials, &legacy, &[], "r").contains("`.ai-team/agents/ann/charter.md`"));
    }

    #[test]
    fn an_unreadable_mode_line_stays_while_the_mode_is_the_default() {
        let existing = "# Kids\n\n- **Mode:** autonomous, the coordinator decides\n\n| Name | Role |\n|---|---|\n| Ann | Dev |\n";
        let ann = worker("ann", "Dev");
        let workers = vec![("ann".to_string(), &ann)];
        assert_eq!(
            edit_team_md(existing, &text(&workers, SQUAD_DEFAULT_MODE), &[], "r"),
            existing
        );
        assert_eq!(
            edit_team_md(existing, &text(&workers, Mode::Broadcast), &[], "r"),
            existing.replace("autonomous, the coordinator decides", "broadcast")
        );
    }
}
