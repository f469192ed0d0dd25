//! Reading `team.md` by meaning: the title, the tagline, an optional `mode:` line and the roster,
//! found in every table with a name and a role column (outside the Coordinator and Coding Agent
//! sections), or else in `### Name — Role` headings under a roster section. Pure text in,
//! plain data out.

use crate::model::Mode;
use crate::text::sanitize::display;

/// The mode discovery assumes when team.md names none.
pub const SQUAD_DEFAULT_MODE: Mode = Mode::OrchestratorReflect;

/// What `team.md` says about the team.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TeamDoc {
    /// The first `# ` heading, cleaned.
    pub title: Option<String>,
    /// The first `> ` line.
    pub description: Option<String>,
    /// The value of a `mode:` line, unparsed.
    pub mode: Option<String>,
    /// Roster members that are workers, in order of appearance.
    pub members: Vec<Member>,
    /// Special members left out (coordinator, Scribe, Ralph, Rai, Fact Checker, @copilot, humans).
    pub excluded: Vec<String>,
    /// Names in the `Coordinator` section's table: never workers, even when a roster lists them.
    pub coordinators: Vec<String>,
    /// Line numbers (0-based, as [`doc_lines`] splits the text) of the title, the description
    /// and the `mode:` line, so write-back can edit them in place.
    pub title_line: Option<usize>,
    pub description_line: Option<usize>,
    pub mode_line: Option<usize>,
    /// The roster tables, where they are and which of their rows are workers.
    pub tables: Vec<RosterTable>,
}

/// A roster table in `team.md`: its lines and columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RosterTable {
    /// The header line; the separator follows it.
    pub header_line: usize,
    /// The first line after the table.
    pub end_line: usize,
    /// The number of header cells.
    pub columns: usize,
    pub name_col: usize,
    pub role_col: usize,
    pub charter_col: Option<usize>,
    pub status_col: Option<usize>,
    /// True in a human members section: every row is a human, never a worker.
    pub humans: bool,
    /// Data rows with a name, in order.
    pub rows: Vec<RosterRow>,
}

/// One data row of a roster table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RosterRow {
    pub line: usize,
    /// The cleaned name cell.
    pub name: String,
    /// The cleaned role cell.
    pub role: String,
    /// False for special members (coordinator, Scribe, Ralph, humans, ...).
    pub worker: bool,
}

/// One roster entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Member {
    /// The name as shown in the roster (cleaned).
    pub name: String,
    pub role: String,
    /// The charter cell: a path, or `None` for `—` or an empty cell.
    pub charter: Option<String>,
}

/// Parses `team.md` text (BOM and CRLF already removed or not: both are handled).
pub fn parse_team(text: &str) -> TeamDoc {
    let lines = doc_lines(text);
    let mut doc = TeamDoc::default();
    let mut section = String::new();
    // The nearest heading of any level: a `### Humans` table inside `## Members` is humans too.
    let mut last_heading = String::new();
    let mut in_fence = false;
    let mut tables_found = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
            i += 1;
            continue;
        }
        if in_fence {
            i += 1;
            continue;
        }
        if let Some((level, heading)) = heading(line) {
            if level == 1 && doc.title.is_none() {
                doc.title = Some(clean_cell(heading)).filter(|t| !t.is_empty());
                doc.title_line = doc.title.is_some().then_some(i);
            }
            if level <= 2 {
                section = heading.to_lowercase();
            }
            last_heading = heading.to_lowercase();
            i += 1;
            continue;
        }
        if line.starts_with('|') {
            let end = (i..lines.len())
                .find(|&k| !lines[k].trim().starts_with('|'))
                .unwrap_or(lines.len());
            if is_coordinator_section(&section) {
                doc.coordinators.extend(table_names(&lines[i..end]));
            } else if !skipped_section(&section) {
                let humans = section.contains("human") || last_heading.contains("human");
                if let Some(table) = read_table(&lines[i..end], i, humans, &mut doc) {
                    doc.tables.push(table);
                    tables_found = true;
                }
            }
            i = end;
            continue;
        }
        if doc.description.is_none()
            && let Some(rest) = line.strip_prefix('>')
        {
            let d = display(rest);
            let d = d.trim();
            if !d.is_empty() {
                doc.description = Some(d.to_string());
                doc.description_line = Some(i);
            }
        }
        if doc.mode.is_none() {
            let plain = line.trim_start_matches(['-', '*', ' ']).replace("**", "");
            if plain.len() > 5 && plain.is_char_boundary(5) && plain[..5].eq_ignore_ascii_case("mode:") {
                let v = clean_cell(&plain[5..]);
                if !v.is_empty() {
                    doc.mode = Some(v);
                    doc.mode_line = Some(i);
                }
            }
        }
        i += 1;
    }
    if !tables_found {
        read_sections(&lines, &mut doc);
    }
    exclude_coordinators(&mut doc);
    doc
}

/// The lines of `team.md` as [`parse_team`] numbers them: BOM dropped, `\r` removed.
pub fn doc_lines(text: &str) -> Vec<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines().map(|l| l.trim_end_matches('\r')).collect()
}

/// True when `name` is one of the names the `Coordinator` section gives.
pub fn is_coordinator(name: &str, coordinators: &[String]) -> bool {
    let key = squash(name);
    !key.is_empty() && coordinators.iter().any(|c| squash(c) == key)
}

/// A member the Coordinator section names is the coordinator, wherever else it is listed.
fn exclude_coordinators(doc: &mut TeamDoc) {
    if doc.coordinators.is_empty() {
        return;
    }
    let coordinators = doc.coordinators.clone();
    let (out, keep): (Vec<Member>, Vec<Member>) = std::mem::take(&mut doc.members)
        .into_iter()
        .partition(|m| is_coordinator(&m.name, &coordinators));
    doc.members = keep;
    doc.excluded.extend(out.into_iter().map(|m| m.name));
    for row in doc.tables.iter_mut().flat_map(|t| t.rows.iter_mut()) {
        if is_coordinator(&row.name, &coordinators) {
            row.worker = false;
        }
    }
}

/// `(level, text)` for an ATX heading.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    (rest.is_empty() || rest.starts_with(' ')).then(|| (level, rest.trim().trim_end_matches('#').trim()))
}

/// Sections whose tables are never the roster.
fn skipped_section(section: &str) -> bool {
    is_coordinator_section(section) || section.contains("coding agent")
}

fn is_coordinator_section(section: &str) -> bool {
    section.contains("coordinator") || section.contains("koordinator")
}

/// The header's name column, when there is one distinct from the role column.
fn name_column(header: &[String], role_col: Option<usize>) -> Option<usize> {
    let name_col = header
        .iter()
        .position(|h| {
            ["name", "agent", "member", "members", "agents"].contains(&h.as_str())
                || h.contains("name")
                || h.contains("namn")
        })
        .filter(|&c| Some(c) != role_col)
        .unwrap_or(0);
    (Some(name_col) != role_col).then_some(name_col)
}

fn header_cells(row: &str) -> Vec<String> {
    split_row(row)
        .iter()
        .map(|c| clean_cell(c).to_lowercase())
        .collect()
}

/// The names in a table's name column (the Coordinator section's table).
fn table_names(rows: &[&str]) -> Vec<String> {
    if rows.len() < 2 || !is_separator(rows[1]) {
        return Vec::new();
    }
    let Some(name_col) = name_column(&header_cells(rows[0]), None) else {
        return Vec::new();
    };
    rows[2..]
        .iter()
        .filter(|r| !is_separator(r))
        .filter_map(|r| split_row(r).get(name_col).map(|c| clean_cell(c)))
        .filter(|n| !n.is_empty())
        .collect()
}

/// Reads one table block (its lines all start with `|`, the first is line `first` of the
/// file); `Some` when it is a roster table. In a human members section every row is a human.
fn read_table(rows: &[&str], first: usize, humans: bool, doc: &mut TeamDoc) -> Option<RosterTable> {
    if rows.len() < 2 || !is_separator(rows[1]) {
        return None;
    }
    let header = header_cells(rows[0]);
    let find = |pred: &dyn Fn(&str) -> bool| header.iter().position(|h| pred(h));
    let role_col = find(&|h| h.contains("role") || h == "roll" || h == "roller")?;
    let name_col = name_column(&header, Some(role_col))?;
    let charter_col = find(&|h| h.contains("charter"));
    let status_col = find(&|h| h.contains("status") || h.contains("badge"));
    let mut table = RosterTable {
        header_line: first,
        end_line: first + rows.len(),
        columns: header.len(),
        name_col,
        role_col,
        charter_col,
        status_col,
        humans,
        rows: Vec::new(),
    };
    for (k, row) in rows.iter().enumerate().skip(2) {
        let cells = split_row(row);
        let cell = |c: Option<usize>| c.and_then(|c| cells.get(c)).map(|s| s.as_str()).unwrap_or("");
        let name = clean_cell(cell(Some(name_col)));
        if name.is_empty() || is_separator(row) {
            continue;
        }
        let role = clean_cell(cell(Some(role_col)));
        let status = clean_cell(cell(status_col));
        let human =
            humans || status.to_lowercase().contains("human") || cells.iter().any(|c| c.contains('👤'));
        let worker = !(human || is_special(&name, &role));
        table.rows.push(RosterRow {
            line: first + k,
            name: name.clone(),
            role: role.clone(),
            worker,
        });
        if !worker {
            doc.excluded.push(name);
            continue;
        }
        let raw_charter = cell(charter_col);
        let charter = link_target(raw_charter).unwrap_or_else(|| clean_cell(raw_charter));
        let charter = Some(charter).filter(|c| !matches!(c.as_str(), "" | "—" | "–" | "-" | "n/a" | "N/A"));
        doc.members.push(Member { name, role, charter });
    }
    Some(table)
}

/// `### Name — Role` headings under a `##` section that names the roster.
fn read_sections(lines: &[&str], doc: &mut TeamDoc) {
    let mut in_roster = false;
    for line in lines {
        let Some((level, text)) = heading(line.trim()) else {
            continue;
        };
        if level <= 2 {
            let s = text.to_lowercase();
            in_roster = ["roster", "member", "team", "agent", "crew", "squad", "cast"]
                .iter()
                .any(|k| s.contains(k))
                && !skipped_section(&s);
            continue;
        }
        if level != 3 || !in_roster {
            continue;
        }
        let Some((name, role)) = [" — ", " – ", " - ", ": "]
            .iter()
            .find_map(|sep| text.split_once(sep))
        else {
            continue;
        };
        let (name, role) = (clean_cell(name), clean_cell(role));
        if name.is_empty() {
            continue;
        }
        if is_special(&name, &role) {
            doc.excluded.push(name);
        } else {
            doc.members.push(Member {
                name,
                role,
                charter: None,
            });
        }
    }
}

/// The members that are never workers: the coordinator, Scribe, Ralph, Rai, Fact Checker and the
/// coding agent. Matched on the whole name (`release-scribe` is a worker).
pub fn is_special(name: &str, role: &str) -> bool {
    let key = squash(name);
    let role = role.trim().to_lowercase();
    ["scribe", "ralph", "rai", "factchecker", "copilot"].contains(&key.as_str())
        || name.trim_start().starts_with('@')
        || role == "coordinator"
        || role == "coding agent"
}

/// Lower case with everything but letters and digits removed: for matching names to folders.
pub fn squash(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn is_separator(row: &str) -> bool {
    let cells = split_row(row);
    !cells.is_empty()
        && cells.iter().all(|c| {
            let c = c.trim();
            !c.is_empty() && c.contains('-') && c.chars().all(|ch| matches!(ch, '-' | ':' | ' '))
        })
}

/// The cells of a table row; `\|` is a literal pipe.
pub fn split_row(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        cells.push(cur);
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// Links become their text, bold and backticks go, leading and trailing emoji and spaces go.
pub fn clean_cell(cell: &str) -> String {
    // Names, roles and titles end up in the TUI, the CLI and generated prompts: escape
    // sequences, control, bidi and zero-width characters go first (a sequence's `[` would
    // otherwise look like the start of a link).
    let cell = display(cell);
    let mut text = String::with_capacity(cell.len());
    let mut rest = cell.trim();
    // `[text](target)` and `![alt](target)` become their text.
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](").map(|m| open + m) else {
            break;
        };
        let Some(close) = link_close(rest, mid + 2) else {
            break;
        };
        let before = rest[..open].strip_suffix('!').unwrap_or(&rest[..open]);
        text.push_str(before);
        text.push_str(&rest[open + 1..mid]);
        rest = &rest[close + 1..];
    }
    text.push_str(rest);
    let mut text = text.replace("**", "").replace('`', "");
    // `__bold__` only when it wraps the whole cell: `__` inside names (`Azure__AgentBaker`) stays.
    let t = text.trim();
    if t.len() > 4 && t.starts_with("__") && t.ends_with("__") {
        text = t[2..t.len() - 2].to_string();
    }
    let decoration = |c: char| c.is_whitespace() || (!c.is_ascii() && !c.is_alphanumeric());
    text.trim_matches(decoration).to_string()
}

/// The byte index of the `)` closing a link target that starts at `start`; parentheses inside
/// the target (Wikipedia URLs) are balanced.
fn link_close(text: &str, start: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(start + i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The target of the first Markdown link in a cell, if any.
fn link_target(cell: &str) -> Option<String> {
    let mid = cell.find("](")?;
    let close = link_close(cell, mid + 2)?;
    let target = cell[mid + 2..close].trim();
    (!target.is_empty()).then(|| target.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_cleaned() {
        assert_eq!(clean_cell(" [Keaton](https://x.org/a_(b)) "), "Keaton");
        assert_eq!(clean_cell("**designer-core**"), "designer-core");
        assert_eq!(clean_cell("__bold__"), "bold");
        assert_eq!(clean_cell("Azure__AgentBaker squad"), "Azure__AgentBaker squad");
        assert_eq!(
            clean_cell("`.squad/agents/x/charter.md`"),
            ".squad/agents/x/charter.md"
        );
        assert_eq!(clean_cell("🏗️ Lead"), "Lead");
        assert_eq!(clean_cell("  Active"), "Active");
        assert_eq!(clean_cell("@copilot"), "@copilot");
        assert_eq!(clean_cell("EECOM 🔧"), "EECOM");
        assert_eq!(clean_cell("Beast ΓÇö Writer"), "Beast ΓÇö Writer");
    }

    #[test]
    fn rows_split_on_unescaped_pipes() {
        assert_eq!(split_row("| a | b \\| c |  |"), ["a", "b | c", ""]);
        assert_eq!(split_row("|a|b"), ["a", "b"]);
    }

    #[test]
    fn standard_roster_skips_coordinator_specials_and_coding_agent() {
        let doc = parse_team(
            "\u{feff}# Squad Team — Demo\r\n\r\n> A demo\r\n\r\n## Coordinator\r\n\r\n| Name | Role | Notes |\r\n|---|---|---|\r\n| Lead | Architect | x |\r\n\r\n## Members\r\n\r\n| Name | Role | Charter | Status |\r\n|------|------|---------|--------|\r\n| Keaton | Lead | `.squad/agents/keaton/charter.md` | ✅ Active |\r\n| Scribe | Session Logger | — | 📋 Silent |\r\n| Ralph | Work Monitor | — | 🔄 Monitor |\r\n| Tamir | Owner | — | 👤 Human |\r\n| release-scribe | Writer | | ✅ Active |\r\n\r\n## Coding Agent\r\n\r\n| Name | Role | Charter | Status |\r\n|---|---|---|---|\r\n| @copilot | Coding Agent | — | 🤖 Coding Agent |",
        );
        assert_eq!(doc.title.as_deref(), Some("Squad Team — Demo"));
        assert_eq!(doc.description.as_deref(), Some("A demo"));
        let names: Vec<&str> = doc.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Keaton", "release-scribe"]);
        assert_eq!(
            doc.members[0].charter.as_deref(),
            Some(".squad/agents/keaton/charter.md")
        );
        assert_eq!(doc.members[1].charter, None);
        assert_eq!(doc.excluded, ["Scribe", "Ralph", "Tamir"]);
    }

    #[test]
    fn columns_are_found_by_header_and_links_give_charter_paths() {
        let doc = parse_team(
            "# T\n\n## Agents\n\n| Agent | Role | Charter |\n|-|-|-|\n| **core** | State | [charter](agents/core/charter.md) |\n\n| Path | Primary Agent |\n|--|--|\n| libs/ | core |\n",
        );
        assert_eq!(doc.members.len(), 1);
        assert_eq!(doc.members[0].name, "core");
        assert_eq!(doc.members[0].charter.as_deref(), Some("agents/core/charter.md"));
    }

    #[test]
    fn missing_cells_and_mode_line() {
        let doc = parse_team("# T\nmode: broadcast\n| Name | Role |\n|---|---|\n| Solo |\n| | Ghost |\n");
        assert_eq!(doc.mode.as_deref(), Some("broadcast"));
        assert_eq!(
            doc.members,
            [Member {
                name: "Solo".into(),
                role: String::new(),
                charter: None
            }]
        );
    }

    #[test]
    fn section_format_is_the_fallback() {
        let doc = parse_team(
            "# Kids — Team\n\n## Team Roster\n\n### Maria — Pedagogy Expert\n- **Role:** x\n\n### Dr. Sarah — Child Psychologist\n\n## Age Group Staffing\n\n### Ages 4-7 (Early Childhood)\n### Lead — Not a member\n",
        );
        let got: Vec<(&str, &str)> = doc
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.role.as_str()))
            .collect();
        assert_eq!(
            got,
            [("Maria", "Pedagogy Expert"), ("Dr. Sarah", "Child Psychologist")]
        );
    }

    #[test]
    fn special_members_match_whole_names() {
        assert!(is_special("Fact Checker", "Verifier"));
        assert!(is_special("Rai", "RAI Reviewer"));
        assert!(is_special("Squad", "Coordinator"));
        assert!(!is_special("release-scribe", "Writer"));
        assert!(!is_special("Raina", "Dev"));
    }

    #[test]
    fn rows_under_a_human_members_heading_are_humans() {
        let doc = parse_team(
            "# T\n\n## Members\n\n| Name | Role |\n|---|---|\n| Keaton | Lead |\n\n## Human Members\n\n| Name | Role | Status |\n|---|---|---|\n| Tamir | Owner | ✅ Active |\n\n### Humans\n| Name | Role |\n|---|---|\n| Dina | PM |\n",
        );
        let names: Vec<&str> = doc.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Keaton"]);
        assert_eq!(doc.excluded, ["Tamir", "Dina"]);
    }

    #[test]
    fn members_the_coordinator_section_names_are_not_workers() {
        let doc = parse_team(
            "# T\n\n## Members\n\n| Name | Role |\n|---|---|\n| 🏗️ Lead | Architect |\n| Runtime | Engineer |\n\n## Coordinator\n\n| Name | Role | Notes |\n|---|---|---|\n| Lead | Architect | x |\n",
        );
        let names: Vec<&str> = doc.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Runtime"]);
        assert_eq!(doc.coordinators, ["Lead"]);
        assert!(doc.excluded.contains(&"Lead".to_string()));
    }
}
