//! Reading verdicts: the evaluator's `SCORE:`/`RATIONALE:` reply, the orchestrator's
//! self-evaluation sentinels, and the single-agent `[[REFLECTION_COMPLETE]]` and `PASS`/`FAIL:`
//! answers (SPEC section 3, "Evaluation format" and "Self-evaluation"; section 4).

use super::sentinels::{Sentinel, find_ascii_ci, has_sentinel, last_team_verdict, line_sentinel};

/// The labels of an evaluator's reply (`SCORE: 0.8`, `RATIONALE: ...`), read ignoring case.
pub const SCORE_LABEL: &str = "SCORE";
pub const RATIONALE_LABEL: &str = "RATIONALE";
/// A single agent's evaluator answers `PASS`, or `FAIL: <what is missing>`.
pub const PASS: &str = "PASS";
pub const FAIL: &str = "FAIL";

/// A score at or above this means the goal is met.
pub const GOAL_MET_SCORE: f64 = 0.9;
/// The score recorded for an evaluator reply with no readable score.
pub const UNPARSED_SCORE: f64 = 0.5;
/// Self-evaluation scores: complete, needs iteration, no sentinel.
pub const SELF_COMPLETE_SCORE: f64 = 1.0;
pub const SELF_NEEDS_ITERATION_SCORE: f64 = 0.4;
pub const SELF_NO_SENTINEL_SCORE: f64 = 0.7;
/// How many trailing lines of a synthesis become the feedback when there is no better one.
pub const FEEDBACK_TAIL_LINES: usize = 5;

/// An evaluator's reply, read.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluatorVerdict {
    /// 0.0..=1.0.
    pub score: f64,
    pub rationale: String,
    /// No readable score: `score` is [`UNPARSED_SCORE`] and `rationale` the whole reply. The
    /// engine emits `evaluation_unparsed`.
    pub unparsed: bool,
    /// The reply's last verdict sentinel was `[[GROUP_REFLECT_COMPLETE]]`.
    pub complete_sentinel: bool,
    /// The reply's last verdict sentinel was `[[NEEDS_ITERATION]]`.
    pub needs_iteration: bool,
    /// `score >= GOAL_MET_SCORE` or the complete sentinel.
    pub goal_met: bool,
}

/// Reads `SCORE: <n>` and `RATIONALE: <text>` (the rationale runs to the first `[[` or the
/// end). Scores: `0.85`, `85%`, `8.5/10`, `17 out of 20`; a bare number is on the 0-1 scale
/// and clamped (`1.2` -> 1.0).
pub fn parse_evaluator_reply(reply: &str) -> EvaluatorVerdict {
    let verdict = last_team_verdict(reply);
    let complete_sentinel = verdict == Some(Sentinel::GroupReflectComplete);
    let needs_iteration = verdict == Some(Sentinel::NeedsIteration);
    let (score, rationale, unparsed) = match find_score(reply) {
        Some((score, line_start, line_end)) => {
            let rationale = match find_labelled(reply, RATIONALE_LABEL) {
                Some(start) => up_to_sentinel(&reply[start..]).to_string(),
                None => {
                    // No RATIONALE label: whatever surrounds the score line is the reason.
                    let mut rest = String::with_capacity(reply.len());
                    rest.push_str(&reply[..line_start]);
                    rest.push_str(&reply[line_end..]);
                    up_to_sentinel(&rest).to_string()
                }
            };
            (score, rationale, false)
        }
        None => (UNPARSED_SCORE, reply.trim().to_string(), true),
    };
    EvaluatorVerdict {
        score,
        rationale,
        unparsed,
        complete_sentinel,
        needs_iteration,
        goal_met: score >= GOAL_MET_SCORE || complete_sentinel,
    }
}

fn up_to_sentinel(text: &str) -> &str {
    match text.find("[[") {
        Some(at) => text[..at].trim(),
        None => text.trim(),
    }
}

/// The first line labelled `score` whose value reads as a number: (score, line start, line end).
fn find_score(reply: &str) -> Option<(f64, usize, usize)> {
    let mut offset = 0;
    for line in reply.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if let Some(score) = label_value(line, SCORE_LABEL).and_then(|at| parse_score(&line[at..])) {
            return Some((score, start, offset));
        }
    }
    None
}

/// The byte offset (in `reply`) of the text after the first `<label>:` line.
fn find_labelled(reply: &str, label: &str) -> Option<usize> {
    let mut offset = 0;
    for line in reply.split_inclusive('\n') {
        if let Some(value_at) = label_value(line, label) {
            return Some(offset + value_at);
        }
        offset += line.len();
    }
    None
}

/// If `line` is `<label>:` (or `=`), ignoring case and Markdown decoration (`**Score:**`,
/// `- Score =`, `## Score:`), the byte offset of the value.
fn label_value(line: &str, label: &str) -> Option<usize> {
    let decoration = |c: char| c.is_whitespace() || matches!(c, '*' | '_' | '`' | '#' | '>' | '-');
    let body = line.trim_start_matches(decoration);
    let at = line.len() - body.len();
    if body.len() < label.len() || !body.as_bytes()[..label.len()].eq_ignore_ascii_case(label.as_bytes()) {
        return None;
    }
    let after_label = &body[label.len()..];
    let rest = after_label.trim_start_matches(VALUE_DECORATION);
    let sep = rest.strip_prefix(':').or_else(|| rest.strip_prefix('='))?;
    let value = sep.trim_start_matches(VALUE_DECORATION);
    Some(at + label.len() + (after_label.len() - value.len()))
}

/// Blanks and emphasis around a label's separator and value.
const VALUE_DECORATION: [char; 5] = [' ', '\t', '*', '_', '`'];

/// Reads a score value; `None` when it does not start with a number.
pub fn parse_score(value: &str) -> Option<f64> {
    let (number, rest) = leading_number(value)?;
    let rest = rest.trim_start_matches(VALUE_DECORATION);
    let score = if rest.starts_with('%') {
        number / 100.0
    } else if let Some(denominator) = rest.strip_prefix('/').or_else(|| strip_prefix_ci(rest, "out of")) {
        let (denominator, _) = leading_number(denominator.trim_start())?;
        if denominator <= 0.0 {
            return None;
        }
        number / denominator
    } else {
        // A bare number is a score on the 0-1 scale: out-of-range values are clamped (SPEC
        // section 3), never reinterpreted, so `1.2` means "at least 1" rather than 1.2%.
        number
    };
    score.is_finite().then(|| score.clamp(0.0, 1.0))
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

/// A leading decimal number (optional sign; a trailing `.` is punctuation) and what follows.
fn leading_number(s: &str) -> Option<(f64, &str)> {
    let bytes = s.as_bytes();
    let mut end = usize::from(matches!(bytes.first(), Some(b'-' | b'+')));
    while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
        end += 1;
    }
    let token = s[..end].trim_end_matches('.');
    let number: f64 = token.parse().ok()?;
    Some((number, &s[token.len()..]))
}

/// What the orchestrator's self-evaluation said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelfVerdict {
    Complete,
    NeedsIteration,
    /// Neither sentinel stands alone on a line.
    NoSentinel,
}

/// A synthesis with self-evaluation, read.
#[derive(Debug, Clone, PartialEq)]
pub struct SelfEvaluation {
    pub verdict: SelfVerdict,
    /// 1.0 complete, 0.4 needs iteration, 0.7 neither.
    pub score: f64,
    pub goal_met: bool,
    /// What the next replan is told: the text after `[[NEEDS_ITERATION]]` up to the first
    /// `@worker:`, else the last five non-blank lines of the synthesis. Empty when complete.
    pub feedback: String,
}

/// Reads the self-evaluation at the end of a synthesis. When both sentinels stand alone, the
/// later one counts (the verdict is what the answer ends with).
pub fn parse_self_evaluation(synthesis: &str) -> SelfEvaluation {
    match last_team_verdict(synthesis) {
        Some(Sentinel::GroupReflectComplete) => SelfEvaluation {
            verdict: SelfVerdict::Complete,
            score: SELF_COMPLETE_SCORE,
            goal_met: true,
            feedback: String::new(),
        },
        Some(Sentinel::NeedsIteration) => {
            let after = last_needs_iteration_end(synthesis)
                .map(|end| &synthesis[end..])
                .unwrap_or("");
            let until_assignment = match find_ascii_ci(after, "@worker:", 0) {
                Some(at) => &after[..at],
                None => after,
            };
            let feedback = until_assignment.trim();
            SelfEvaluation {
                verdict: SelfVerdict::NeedsIteration,
                score: SELF_NEEDS_ITERATION_SCORE,
                goal_met: false,
                feedback: if feedback.is_empty() {
                    last_lines(synthesis)
                } else {
                    feedback.to_string()
                },
            }
        }
        _ => SelfEvaluation {
            verdict: SelfVerdict::NoSentinel,
            score: SELF_NO_SENTINEL_SCORE,
            goal_met: false,
            feedback: last_lines(synthesis),
        },
    }
}

fn last_needs_iteration_end(text: &str) -> Option<usize> {
    let mut offset = 0;
    let mut found = None;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if line_sentinel(line) == Some(Sentinel::NeedsIteration) {
            found = Some(offset);
        }
    }
    found
}

/// The last [`FEEDBACK_TAIL_LINES`] non-blank lines that are not sentinels, in order.
fn last_lines(text: &str) -> String {
    let mut tail: Vec<&str> = text
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty() && line_sentinel(l).is_none())
        .take(FEEDBACK_TAIL_LINES)
        .map(str::trim_end)
        .collect();
    tail.reverse();
    tail.join("\n")
}

/// A single agent put `[[REFLECTION_COMPLETE]]` on a line of its own.
pub fn is_reflection_complete(answer: &str) -> bool {
    has_sentinel(answer, Sentinel::ReflectionComplete)
}

/// A single-agent evaluator's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassFail {
    Pass,
    Fail { feedback: String },
}

/// Reads `PASS` or `FAIL: <feedback>` from the first non-blank line (emphasis ignored). Lines
/// after a `FAIL:` line are part of the feedback. Anything else is a fail with that line as
/// feedback.
pub fn parse_pass_fail(reply: &str) -> PassFail {
    let Some((first, rest)) = first_line_and_rest(reply) else {
        return PassFail::Fail {
            feedback: "the evaluator gave no answer".to_string(),
        };
    };
    let line = first
        .trim()
        .trim_matches(|c: char| matches!(c, '*' | '_' | '`'))
        .trim();
    if word_prefix(line, PASS).is_some() {
        return PassFail::Pass;
    }
    if let Some(after) = word_prefix(line, FAIL) {
        let after =
            after.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '*' | '_' | '-'));
        let mut feedback = after.trim().to_string();
        let rest = rest.trim();
        if !rest.is_empty() {
            if !feedback.is_empty() {
                feedback.push('\n');
            }
            feedback.push_str(rest);
        }
        if feedback.is_empty() {
            feedback = "the evaluator said FAIL without a reason".to_string();
        }
        return PassFail::Fail { feedback };
    }
    PassFail::Fail {
        feedback: line.to_string(),
    }
}

fn first_line_and_rest(text: &str) -> Option<(&str, &str)> {
    let start = text.len() - text.trim_start().len();
    let text = &text[start..];
    if text.is_empty() {
        return None;
    }
    Some(text.split_once('\n').unwrap_or((text, "")))
}

/// `line` without a leading `word` (ignoring case) that is not followed by a letter or digit.
fn word_prefix<'a>(line: &'a str, word: &str) -> Option<&'a str> {
    let rest = strip_prefix_ci(line, word)?;
    (!rest.starts_with(|c: char| c.is_alphanumeric())).then_some(rest)
}

#[cfg(test)]
#[path = "evaluation_tests.rs"]
mod tests;
