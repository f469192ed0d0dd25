//! Mode `relay`'s words: the sentinel that ends a relay, the headings of the driver's prompt and
//! its turn line (the prompt is put together in `engine::modes::relay_history`; the sim reads
//! it with these).

/// The sentinel a driver ends its last message with.
pub const RELAY_COMPLETE: &str = "[[RELAY_COMPLETE]]";
/// Opens the driver's prompt: what the relay is for.
pub const OBJECTIVE_HEADING: &str = "## Relay objective";
/// The counterpart's latest message, verbatim.
pub const LATEST_REPLY_HEADING: &str = "## Latest counterpart message";
/// The user's note on a rejected draft.
pub const REJECTION_HEADING: &str = "## The user rejected your last draft";
/// The driver's turn count, on a line of its own: `Turn: 2 of 8`.
pub const TURN_LINE: &str = "Turn: ";
/// Between a count and its limit (`2 of 8`).
const OF: &str = " of ";

/// `Turn: <turn> of <max>`.
pub fn turn_line(turn: u32, max: u32) -> String {
    format!("{TURN_LINE}{turn}{OF}{max}")
}

/// The turn and the limit of the last [`turn_line`] in `text`: a number that does not read is 1, a
/// missing limit is none (`u32::MAX`); `None` without a turn line.
pub fn parse_turn_line(text: &str) -> Option<(u32, u32)> {
    // The last one: the driver's prompt ends with it, after history that may quote anything.
    let line = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(TURN_LINE))?;
    let mut numbers = line.split(OF).map(|n| n.trim().parse::<u32>().unwrap_or(1));
    let turn = numbers.next().unwrap_or(1);
    Some((turn, numbers.next().unwrap_or(u32::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turn_line_reads_back() {
        assert_eq!(
            parse_turn_line(&format!("x\n{}\n", turn_line(2, 8))),
            Some((2, 8))
        );
        assert_eq!(parse_turn_line("Turn: 3"), Some((3, u32::MAX)));
        assert_eq!(parse_turn_line("Your turn: 3 of 4"), None);
    }
}
