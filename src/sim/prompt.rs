//! The prompt as the sim reads it (the system prompt and the message it answers: headings on
//! their own line, matched ignoring case) and the little the players share to speak: a summary
//! line, a seeded pick, a stable hash.

use crate::engine::protocol::prompts::parse_iteration;

/// The text the sim reads: the system prompt (if any) and the message being answered.
#[derive(Debug, Clone, Copy)]
pub struct SimPrompt<'a> {
    pub system: &'a str,
    pub user: &'a str,
}

impl SimPrompt<'_> {
    pub(super) fn has_heading(&self, heading: &str) -> bool {
        [self.user, self.system]
            .iter()
            .any(|t| heading_index(t, heading).is_some())
    }
    pub(super) fn contains(&self, literal: &str) -> bool {
        let literal = literal.to_lowercase();
        [self.user, self.system]
            .iter()
            .any(|t| t.to_lowercase().contains(&literal))
    }
    /// The body under `heading`, from the user message first.
    pub(super) fn section(&self, heading: &str) -> Option<String> {
        section(self.user, heading).or_else(|| section(self.system, heading))
    }
    pub(super) fn iteration(&self) -> u32 {
        parse_iteration(self.user)
            .or_else(|| parse_iteration(self.system))
            .unwrap_or(1)
    }
}

/// Line index of a heading standing on its own line (case-insensitive, optional trailing `:`).
pub(super) fn heading_index(text: &str, heading: &str) -> Option<usize> {
    text.lines().position(|l| {
        let l = l.trim().trim_end_matches(':').trim_end();
        l.eq_ignore_ascii_case(heading)
    })
}

/// The lines under a `## ` heading up to the next `## ` heading.
pub(super) fn section(text: &str, heading: &str) -> Option<String> {
    let start = heading_index(text, heading)?;
    let body: Vec<&str> = text
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.trim_start().starts_with("## "))
        .collect();
    Some(body.join("\n").trim().to_string())
}

/// The first non-empty line, cut to `max` characters, with quotes softened.
pub(super) fn summary(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let line = line.replace('"', "'");
    if line.chars().count() <= max {
        line
    } else {
        let cut: String = line.chars().take(max).collect();
        format!("{}...", cut.trim_end())
    }
}

pub(super) fn pick<'a>(rng: &mut fastrand::Rng, options: &[&'a str]) -> &'a str {
    options[rng.usize(..options.len())]
}

/// A stable 64-bit FNV-1a hash (the sim's seed must not change between runs or versions).
pub fn stable_hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
