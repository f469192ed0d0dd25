//! Resolving a worker name written by a model to one of the group's session names.
//!
//! In order: exact ignoring case; the worker's handle (the name it goes by in its team, kept
//! when its session name had to be made unique: `alpha` for `crash-team-alpha-2`), written as
//! is or with the team prefix; the normalised form ([`slug`]: lower case, runs of
//! non-alphanumerics to `-`; then [`strip_team_prefix`], on both sides); then fuzzy, for a unique best
//! candidate only. Containment alone never matches: `coder` is not `coder-session` and
//! `worker-1` is not `worker-10`.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::naming::{slug, strip_team_prefix};

/// Least Damerau-Levenshtein similarity (normalised to 0..1) for a fuzzy match. One typo in an
/// eight-letter name scores 0.875.
pub const FUZZY_MIN_SIMILARITY: f64 = 0.85;

/// Least lead of the best fuzzy candidate over the runner-up.
pub const FUZZY_MIN_MARGIN: f64 = 0.1;

/// Longest written name that is compared fuzzily (the comparison is quadratic in length).
const FUZZY_MAX_CHARS: usize = 64;

/// A group's worker names, prepared once for many lookups.
#[derive(Debug, Clone)]
pub struct WorkerResolver<'w> {
    names: Vec<&'w str>,
    lower: Vec<String>,
    /// Normalised names with the team prefix removed.
    short: Vec<String>,
    /// The workers' handles (slugs; empty for a worker without one).
    handles: Vec<String>,
    team: String,
    /// Fuzzy results by normalised name: a long plan repeats the same unknown name, and a
    /// fuzzy comparison costs far more than the rest of the parse.
    fuzzy_memo: RefCell<HashMap<String, Option<usize>>>,
}

impl<'w> WorkerResolver<'w> {
    pub fn new<S: AsRef<str>>(workers: &'w [S], team_name: &str) -> Self {
        Self::with_handles::<S, &str>(workers, &[], team_name)
    }

    /// [`Self::new`] with each worker's handle (by position; missing or empty ones are none).
    pub fn with_handles<S: AsRef<str>, H: AsRef<str>>(
        workers: &'w [S],
        handles: &[H],
        team_name: &str,
    ) -> Self {
        let team = slug(team_name);
        let handles = (0..workers.len())
            .map(|i| handles.get(i).map(|h| slug(h.as_ref())).unwrap_or_default())
            .collect();
        let names: Vec<&str> = workers.iter().map(AsRef::as_ref).collect();
        let lower = names.iter().map(|n| n.to_lowercase()).collect();
        let short = names
            .iter()
            .map(|n| strip_team_prefix(&slug(n), &team).to_string())
            .collect();
        WorkerResolver {
            names,
            lower,
            short,
            handles,
            team,
            fuzzy_memo: RefCell::new(HashMap::new()),
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The most `-`-separated parts a written name that matches strictly can have (the
    /// team's parts plus the longest worker's).
    pub fn longest_name_parts(&self) -> usize {
        let parts = |s: &str| if s.is_empty() { 0 } else { s.split('-').count() };
        let longest = |names: &[String]| names.iter().map(|s| parts(s)).max().unwrap_or(0);
        parts(&self.team) + longest(&self.short).max(longest(&self.handles))
    }

    /// The session name at `index`.
    pub fn name(&self, index: usize) -> &'w str {
        self.names[index]
    }

    /// The index of the worker `written` names, or why none.
    pub fn resolve(&self, written: &str) -> Result<usize, String> {
        if written.is_empty() {
            return Err("no worker name".to_string());
        }
        let normalized = slug(written);
        match self.strict_matches(written, &normalized) {
            Matches::One(index) => return Ok(index),
            Matches::Several(indices) => {
                let names: Vec<&str> = indices.iter().map(|&i| self.names[i]).collect();
                return Err(format!(
                    "`{written}` matches several workers: {}",
                    names.join(", ")
                ));
            }
            Matches::None => {}
        }
        let memoised = self.fuzzy_memo.borrow().get(&normalized).copied();
        let found = match memoised {
            Some(found) => found,
            None => {
                let found = self.fuzzy(&normalized);
                self.fuzzy_memo.borrow_mut().insert(normalized, found);
                found
            }
        };
        found.ok_or_else(|| format!("no worker named `{written}`"))
    }

    /// A cheap test before [`Self::resolve_strict`]: could a name whose normalised form is
    /// `normalized` match strictly? (A strict match always has equal short forms.)
    pub fn may_match_strictly(&self, normalized: &str) -> bool {
        let short = strip_team_prefix(normalized, &self.team);
        !short.is_empty()
            && (self.short.iter().any(|s| s == short)
                || self.handles.iter().any(|h| h == short || h == normalized))
    }

    /// Exact or normalised match only (no fuzzy), unique.
    pub fn resolve_strict(&self, written: &str) -> Option<usize> {
        self.resolve_strict_normalized(written, &slug(written))
    }

    /// [`Self::resolve_strict`] when the caller already has `slug(written)` (its normalised form).
    pub fn resolve_strict_normalized(&self, written: &str, normalized: &str) -> Option<usize> {
        match self.strict_matches(written, normalized) {
            Matches::One(index) => Some(index),
            _ => None,
        }
    }

    fn strict_matches(&self, written: &str, normalized: &str) -> Matches {
        if written.is_empty() {
            return Matches::None;
        }
        if let Some(index) = self.names.iter().position(|n| *n == written) {
            return Matches::One(index);
        }
        // Cheap exit: every strict match has the same short form.
        if !self.may_match_strictly(normalized) {
            return Matches::None;
        }
        let lower = written.to_lowercase();
        let exact: Vec<usize> = (0..self.len()).filter(|&i| self.lower[i] == lower).collect();
        if !exact.is_empty() {
            return Matches::from(exact);
        }
        let short = strip_team_prefix(normalized, &self.team);
        let by_handle: Vec<usize> = (0..self.len())
            .filter(|&i| {
                let h = &self.handles[i];
                !h.is_empty() && (h == normalized || h == short)
            })
            .collect();
        if !by_handle.is_empty() {
            return Matches::from(by_handle);
        }
        Matches::from(
            (0..self.len())
                .filter(|&i| self.short[i] == short)
                .collect::<Vec<_>>(),
        )
    }

    fn fuzzy(&self, normalized: &str) -> Option<usize> {
        let target = strip_team_prefix(normalized, &self.team);
        if target.is_empty() || target.chars().count() > FUZZY_MAX_CHARS {
            return None;
        }
        let mut best: Option<(usize, f64)> = None;
        let mut runner_up = 0.0_f64;
        // A worker is compared by its handle when it has one (what its team's prompts list).
        let candidates = self
            .short
            .iter()
            .zip(&self.handles)
            .map(|(short, handle)| if handle.is_empty() { short } else { handle });
        for (index, candidate) in candidates.enumerate() {
            if candidate.contains(target) || target.contains(candidate.as_str()) {
                continue; // containment alone never matches
            }
            if !digit_runs(candidate).eq(digit_runs(target)) {
                continue; // `worker-2` is never `worker-3`
            }
            let similarity = strsim::normalized_damerau_levenshtein(target, candidate);
            match best {
                Some((_, top)) if similarity <= top => runner_up = runner_up.max(similarity),
                _ => {
                    if let Some((_, top)) = best {
                        runner_up = runner_up.max(top);
                    }
                    best = Some((index, similarity));
                }
            }
        }
        let (index, top) = best?;
        (top >= FUZZY_MIN_SIMILARITY && top - runner_up >= FUZZY_MIN_MARGIN).then_some(index)
    }
}

enum Matches {
    None,
    One(usize),
    Several(Vec<usize>),
}

impl From<Vec<usize>> for Matches {
    fn from(indices: Vec<usize>) -> Self {
        match indices.as_slice() {
            [] => Matches::None,
            [one] => Matches::One(*one),
            _ => Matches::Several(indices),
        }
    }
}

fn digit_runs(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
}

/// A name as written, without surrounding quotes, backticks, emphasis or angle brackets and
/// without trailing punctuation (`alpha:` or `**alpha**,` name `alpha`).
pub fn clean_name(written: &str) -> &str {
    let wrapper = |c: char| matches!(c, '`' | '"' | '\'' | '*' | '“' | '”' | '‘' | '’' | '<' | '>');
    let mut name = written.trim();
    loop {
        let next = name
            .trim_matches(wrapper)
            .trim_end_matches([':', ',', ';', '.'])
            .trim();
        if next.len() == name.len() {
            return name;
        }
        name = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(written: &str, workers: &[&str], team: &str) -> Option<String> {
        let resolver = WorkerResolver::new(workers, team);
        resolver
            .resolve(written)
            .ok()
            .map(|i| resolver.name(i).to_string())
    }

    #[test]
    fn exact_ignoring_case() {
        assert_eq!(
            resolve("Team-Worker-1", &["team-worker-1"], "Team").as_deref(),
            Some("team-worker-1")
        );
        assert_eq!(resolve("ALPHA", &["alpha", "beta"], "").as_deref(), Some("alpha"));
    }

    #[test]
    fn normalised_with_team_prefix_on_either_side() {
        let workers = ["code-review-team-security", "code-review-team-style checker"];
        assert_eq!(
            resolve("security", &workers, "Code Review Team").as_deref(),
            Some(workers[0])
        );
        assert_eq!(
            resolve("Style_Checker", &workers, "Code Review Team").as_deref(),
            Some(workers[1])
        );
        assert_eq!(
            resolve("Code Review Team security", &workers, "Code Review Team").as_deref(),
            Some(workers[0])
        );
        // The orchestrator writes the full name, the session has only the worker part.
        assert_eq!(
            resolve("squad-alpha", &["alpha"], "Squad").as_deref(),
            Some("alpha")
        );
    }

    #[test]
    fn containment_never_matches() {
        assert_eq!(resolve("coder", &["coder-session", "reviewer-session"], ""), None);
        assert_eq!(resolve("worker-1", &["worker-10", "reviewer"], ""), None);
        assert_eq!(resolve("worker-10", &["worker-1", "reviewer"], ""), None);
        assert_eq!(resolve("team", &["team-alpha"], "team"), None);
    }

    #[test]
    fn fuzzy_needs_a_clear_unique_winner() {
        assert_eq!(
            resolve("reviewr", &["reviewer", "architect"], "").as_deref(),
            Some("reviewer")
        );
        assert_eq!(
            resolve("securty-auditor", &["security-auditor", "tester"], "").as_deref(),
            Some("security-auditor")
        );
        // Two equally close candidates: no winner.
        assert_eq!(resolve("workerx-a", &["worker-a", "workery-a"], ""), None);
        // A number is an identity, not a typo.
        assert_eq!(resolve("worker-2", &["worker-1", "reviewer"], ""), None);
        // Too different.
        assert_eq!(resolve("ghost", &["alpha", "beta"], ""), None);
    }

    #[test]
    fn a_worker_is_found_by_its_handle_when_its_session_name_was_made_unique() {
        let workers = ["crash-team-analyst-2", "crash-team-beta-2"];
        let resolver = WorkerResolver::with_handles(&workers, &["analyst", "beta"], "crash-team");
        let name = |written: &str| resolver.resolve(written).ok().map(|i| resolver.name(i));
        assert_eq!(name("analyst"), Some(workers[0]));
        assert_eq!(name("Crash Team beta"), Some(workers[1]), "with the team prefix");
        assert_eq!(
            name("crash-team-beta-2"),
            Some(workers[1]),
            "the session name still works"
        );
        assert_eq!(name("beta-2"), Some(workers[1]));
        assert_eq!(name("analsyt"), Some(workers[0]), "fuzzy against the handle");
        // Without handles, the preset name does not reach the renamed session.
        assert_eq!(resolve("analyst", &workers, "crash-team"), None);
    }

    #[test]
    fn ambiguity_is_reported() {
        let resolver = WorkerResolver::new(&["Alpha", "alpha!"], "");
        let err = resolver.resolve("alpha?").unwrap_err();
        assert!(err.contains("several"), "{err}");
    }

    #[test]
    fn clean_name_strips_wrappers() {
        assert_eq!(clean_name("`alpha`"), "alpha");
        assert_eq!(clean_name("**alpha**:"), "alpha");
        assert_eq!(clean_name("\"Code Reviewer\","), "Code Reviewer");
        assert_eq!(clean_name("<worker-1>"), "worker-1");
    }
}
