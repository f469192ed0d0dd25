//! Names made from names, in one place so that every part of huddle agrees on them.
//!
//! A team's sessions are named `<team-slug>-<member>` (`review-crew-orchestrator`,
//! `review-crew-sec-ops`), made unique in the organization. They are shown, and a worker's
//! `@worker:` handle is matched, without the `<team-slug>-` prefix.

/// Lower case; every run of characters that are not letters or digits (of any script) becomes
/// one `-`; no `-` at either end. Empty when `text` has no letter or digit.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut gap = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('-');
            }
            gap = false;
            // The ASCII case is the common one and the cheap one (names are slugged in the
            // hot path of assignment parsing).
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            } else {
                out.extend(c.to_lowercase());
            }
        } else {
            gap = true;
        }
    }
    out
}

/// [`slug`], or `fallback` when `text` has no letter or digit.
pub fn slug_or(text: &str, fallback: &str) -> String {
    let s = slug(text);
    if s.is_empty() { fallback.to_string() } else { s }
}

/// The team part of a team's session names: the group name's slug, or `team`.
pub fn team_slug(group_name: &str) -> String {
    slug_or(group_name, "team")
}

/// A worker's part of its session name: its preset name's slug, or `worker`.
pub fn worker_slug(worker: &str) -> String {
    slug_or(worker, "worker")
}

/// The session name of a team member (before it is made unique in the organization):
/// `<team_slug>-<member>`, where `member` is a worker slug or `orchestrator` / `evaluator`.
pub fn member_session_name(team_slug: &str, member: &str) -> String {
    format!("{team_slug}-{member}")
}

/// `session_name` without its leading `<team_slug>-`. Unchanged when it does not start with
/// that, when nothing would be left, or when `team_slug` is empty.
pub fn strip_team_prefix<'a>(session_name: &'a str, team_slug: &str) -> &'a str {
    if team_slug.is_empty() {
        return session_name;
    }
    session_name
        .strip_prefix(team_slug)
        .and_then(|rest| rest.strip_prefix('-'))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(session_name)
}

/// A worker session's `@worker:` handle: its session name without the team prefix, slugged.
pub fn worker_handle(session_name: &str, team_slug: &str) -> String {
    slug(strip_team_prefix(session_name, team_slug))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_folds_runs_and_keeps_letters_of_any_script() {
        assert_eq!(slug("Johnny Five"), "johnny-five");
        assert_eq!(slug("  Dr. Sarah "), "dr-sarah");
        assert_eq!(slug("B'Elanna"), "b-elanna");
        assert_eq!(slug("lisa-lösningslotsen"), "lisa-lösningslotsen");
        assert_eq!(slug("EECOM"), "eecom");
        assert_eq!(slug("  Code  Review__Team! "), "code-review-team");
        assert_eq!(slug("Ünïcode Név"), "ünïcode-név");
        assert_eq!(slug("ΣΟΦΙΑ 2"), "σοφια-2");
        assert_eq!(slug("--"), "");
        assert_eq!(slug(""), "");
    }

    #[test]
    fn empty_slugs_fall_back() {
        assert_eq!(team_slug("Review Crew (2)"), "review-crew-2");
        assert_eq!(team_slug("!!!"), "team");
        assert_eq!(worker_slug("Sec Ops"), "sec-ops");
        assert_eq!(worker_slug("?"), "worker");
        assert_eq!(slug_or("…", "agent"), "agent");
    }

    #[test]
    fn member_names_carry_the_team_prefix_and_lose_it_again() {
        let team = team_slug("Review Crew");
        let name = member_session_name(&team, &worker_slug("Sec Ops"));
        assert_eq!(name, "review-crew-sec-ops");
        assert_eq!(strip_team_prefix(&name, &team), "sec-ops");
        assert_eq!(worker_handle(&name, &team), "sec-ops");
        assert_eq!(
            strip_team_prefix(&member_session_name(&team, "evaluator"), &team),
            "evaluator"
        );
    }

    #[test]
    fn the_prefix_is_only_removed_whole_and_never_leaves_nothing() {
        assert_eq!(strip_team_prefix("review-crew-", "review-crew"), "review-crew-");
        assert_eq!(strip_team_prefix("review-crew", "review-crew"), "review-crew");
        assert_eq!(
            strip_team_prefix("review-crewmate", "review-crew"),
            "review-crewmate"
        );
        assert_eq!(strip_team_prefix("other-tests", "review-crew"), "other-tests");
        assert_eq!(strip_team_prefix("-tests", ""), "-tests");
        // Case matters: session names are made from slugs, which are lower case.
        assert_eq!(
            strip_team_prefix("Review-Crew-tests", "review-crew"),
            "Review-Crew-tests"
        );
        // A renamed session keeps its handle readable.
        assert_eq!(
            worker_handle("Review Crew Sec Ops", "review-crew"),
            "review-crew-sec-ops"
        );
        assert_eq!(worker_handle("review-crew-Sec Ops", "review-crew"), "sec-ops");
    }
}
