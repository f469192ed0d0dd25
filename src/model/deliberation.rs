//! Mode `team` (a deliberation: members broadcast, a supervisor decides): the words huddle puts
//! into its prompts that both the engine and the sim read, and how one broadcast is headed in
//! the markdown block a member or the supervisor is given. Pure text, no I/O.

use super::BroadcastKind;

/// Heads the block a member's first turn gets: how the team works.
pub const TEAM_HEADING: &str = "## How this team works";
/// Heads every supervisor turn's instructions.
pub const SUPERVISION_HEADING: &str = "## Team supervision";
/// Names the member in its first turn: ``You are member `skeptic` ``.
pub const YOU_ARE: &str = "You are member `";
/// A member's turn count, on a line of its own: `Your turn: 2 of 6`.
pub const TURN_LINE: &str = "Your turn: ";
/// The supervisor's cycle count, on a line of its own: `Cycle: 1 of 12`.
pub const CYCLE_LINE: &str = "Cycle: ";
/// The supervisor's last turn (or every member has left): it must answer now.
pub const CONCLUDE_LINE: &str = "Conclude now:";
/// The text form (sessions without native tools): the supervisor broadcasts back with a line
/// starting with this.
pub const TEXT_BROADCAST: &str = "@broadcast:";
/// The text form: a member's answer whose last line is this is its final broadcast.
pub const TEXT_FINAL: &str = "[final]";
/// The label of the supervisor's broadcasts in a broadcast's heading.
pub const SUPERVISOR_LABEL: &str = "supervisor";
/// The label of a member's final broadcast in its heading.
pub const FINAL_LABEL: &str = "final";
/// Opens a broadcast's heading inside the block.
pub const HEADING_PREFIX: &str = "### ";
/// Separates the parts of a broadcast's heading.
const SEPARATOR: &str = " · ";

/// What a broadcast's heading says: who, its type, its turn and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroadcastHeading {
    pub from: String,
    pub kind: BroadcastKind,
    pub turn: u32,
    /// A member's final broadcast (it has left the team).
    pub last: bool,
    pub supervisor: bool,
    /// When it was made, as shown (`06:13:47 UTC`).
    pub at: String,
}

/// A broadcast's type as its heading (and a headless line) spells it.
pub fn kind_label(kind: BroadcastKind) -> &'static str {
    match kind {
        BroadcastKind::Update => "update",
        BroadcastKind::Failure => "failure",
    }
}

/// `### skeptic · update · final · turn 2 · 06:13:47 UTC` (the supervisor's carry
/// `supervisor`).
pub fn heading_line(h: &BroadcastHeading) -> String {
    let mut parts = vec![h.from.clone(), kind_label(h.kind).to_string()];
    if h.supervisor {
        parts.push(SUPERVISOR_LABEL.to_string());
    }
    if h.last {
        parts.push(FINAL_LABEL.to_string());
    }
    parts.push(format!("turn {}", h.turn));
    parts.push(h.at.clone());
    format!("{HEADING_PREFIX}{}", parts.join(SEPARATOR))
}

/// Reads a line written by [`heading_line`]; `None` for any other line.
pub fn parse_heading_line(line: &str) -> Option<BroadcastHeading> {
    let rest = line.trim().strip_prefix(HEADING_PREFIX)?;
    let parts: Vec<&str> = rest.split(SEPARATOR).collect();
    let (from, kind) = (parts.first()?, parts.get(1)?);
    let kind = match *kind {
        "update" => BroadcastKind::Update,
        "failure" => BroadcastKind::Failure,
        _ => return None,
    };
    let turn_at = parts.iter().position(|p| p.starts_with("turn "))?;
    let turn = parts[turn_at].strip_prefix("turn ")?.parse().ok()?;
    let labels = &parts[2..turn_at];
    Some(BroadcastHeading {
        from: from.to_string(),
        kind,
        turn,
        last: labels.contains(&FINAL_LABEL),
        supervisor: labels.contains(&SUPERVISOR_LABEL),
        at: parts[turn_at + 1..].join(SEPARATOR),
    })
}

/// `n` of `Your turn: n of m` (or `Cycle: n of m`) in `text` after `prefix`.
pub fn count_after(text: &str, prefix: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(prefix)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The member named by [`YOU_ARE`] in a first turn.
pub fn member_name(text: &str) -> Option<&str> {
    let start = text.find(YOU_ARE)? + YOU_ARE.len();
    let rest = &text[start..];
    Some(&rest[..rest.find('`')?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_read_back_as_written() {
        let h = BroadcastHeading {
            from: "skeptic".into(),
            kind: BroadcastKind::Update,
            turn: 2,
            last: true,
            supervisor: false,
            at: "06:13:47 UTC".into(),
        };
        let line = heading_line(&h);
        assert_eq!(line, "### skeptic · update · final · turn 2 · 06:13:47 UTC");
        assert_eq!(parse_heading_line(&line), Some(h));
        let chair = BroadcastHeading {
            from: "chair".into(),
            kind: BroadcastKind::Update,
            turn: 1,
            last: false,
            supervisor: true,
            at: "x".into(),
        };
        assert_eq!(parse_heading_line(&heading_line(&chair)), Some(chair));
        assert_eq!(parse_heading_line("### Not a broadcast"), None);
        assert_eq!(parse_heading_line("skeptic · update · turn 1 · x"), None);
    }

    #[test]
    fn counts_and_names_are_read_from_their_lines() {
        let text = "You are member `critic` of a team.\nYour turn: 3 of 6\nCycle: 2 of 12";
        assert_eq!(count_after(text, TURN_LINE), Some(3));
        assert_eq!(count_after(text, CYCLE_LINE), Some(2));
        assert_eq!(member_name(text), Some("critic"));
        assert_eq!(count_after("nothing", TURN_LINE), None);
        assert_eq!(member_name("You are member `unclosed"), None);
    }
}
