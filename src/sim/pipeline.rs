//! How the sim plays a pipeline member, deterministically: it hands the conversation to its
//! stage's `next` member, except that a stage with a return edge sends a first answer back once
//! ("Please revise"), and the member asked to revise marks its next handoff "(revised)". A stage
//! with nowhere to go answers; the supervisor never redirects. The same choice drives the tool
//! call and the text form.

use crate::engine::protocol::pipeline::{
    CONTEXT_PREFIX, HUMAN, HandoffRequest, PIPELINE_HEADING, SUPERVISION_HEADING, TARGETS_LINE, TEXT_HANDOFF,
    TEXT_REASON,
};

/// What the sim's reviewer asks for, and how the revised answer says it was revised.
const REVISE: &str = "Please revise";
const REVISED: &str = "(revised)";

/// The pipeline's instructions after a member's request, as they open.
fn instructions() -> String {
    format!("\n{PIPELINE_HEADING}")
}

/// Whether the prompt is a member's (it carries the pipeline's instructions).
pub fn is_member(prompt: &str) -> bool {
    prompt.contains(&instructions())
}

/// The user's request inside a member's prompt (without the context line and the pipeline
/// instructions).
pub fn request_of(prompt: &str) -> &str {
    let body = prompt.split(&instructions()).next().unwrap_or(prompt).trim();
    match body.strip_prefix(CONTEXT_PREFIX) {
        Some(rest) => rest.split_once("\n\n").map_or("", |(_, r)| r).trim(),
        None => body,
    }
}

/// Whether the prompt is the supervisor's look.
pub fn is_supervision(prompt: &str) -> bool {
    prompt.lines().any(|l| l.trim() == SUPERVISION_HEADING)
}

/// The handoff the sim makes from this member prompt, if any.
pub fn choice(prompt: &str) -> Option<HandoffRequest> {
    if is_supervision(prompt) || !is_member(prompt) {
        return None;
    }
    let targets: Vec<&str> = prompt
        .lines()
        .find_map(|l| l.trim().strip_prefix(TARGETS_LINE))?
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != HUMAN)
        .collect();
    let (first, last) = (targets.first()?, targets.last()?);
    let context = prompt
        .trim_start()
        .strip_prefix(CONTEXT_PREFIX)
        .and_then(|c| c.lines().next())
        .unwrap_or("");
    let request: String = request_of(prompt).chars().take(60).collect();
    let request = request.split_whitespace().collect::<Vec<_>>().join(" ");
    let (target, reason, summary) = if context.contains(REVISE) {
        (
            first,
            "revised as asked",
            format!("{REVISED} The answer to \"{request}\" now covers the missing steps."),
        )
    } else if targets.len() > 1 && !context.contains(REVISED) {
        (
            last,
            "needs another pass",
            format!("{REVISE}: add the missing steps for \"{request}\"."),
        )
    } else {
        (
            first,
            "ready for the next stage",
            format!("Handled \"{request}\"; ready for {first}."),
        )
    };
    Some(HandoffRequest {
        target: target.to_string(),
        reason: reason.to_string(),
        summary,
        next_phase: None,
    })
}

/// The text form of a member's reply: a line of its own, then the handoff block; or `None`
/// when it does not hand off.
pub fn text_reply(prompt: &str) -> Option<String> {
    let h = choice(prompt)?;
    Some(format!(
        "Passing this on to {}.\n{TEXT_HANDOFF}{}\n{TEXT_REASON} {}\n{}",
        h.target, h.target, h.reason, h.summary
    ))
}

/// The sim's side of pipelines, read against the prompts the protocol builds.
#[cfg(test)]
mod tests {
    use super::{REVISED, choice, request_of, text_reply};
    use crate::engine::protocol::pipeline::{context_line, member_prompt, parse_text_handoff};

    fn prompt(context: Option<&str>, targets: &[&str]) -> String {
        let targets: Vec<String> = targets.iter().map(|s| s.to_string()).collect();
        member_prompt("My printer is on fire", context, "x", &targets).text
    }

    #[test]
    fn the_sim_walks_the_desk_with_one_return() {
        let triage = choice(&prompt(None, &["handler", "human"])).unwrap();
        assert_eq!(triage.target, "handler");
        let c = context_line("triage", &triage.summary);
        let handler = choice(&prompt(Some(&c), &["reviewer", "human"])).unwrap();
        assert_eq!(handler.target, "reviewer");
        let c = context_line("handler", &handler.summary);
        let review = choice(&prompt(Some(&c), &["resolver", "handler", "human"])).unwrap();
        assert_eq!(review.target, "handler", "the first review sends it back");
        let c = context_line("reviewer", &review.summary);
        let again = choice(&prompt(Some(&c), &["reviewer", "human"])).unwrap();
        assert!(again.summary.starts_with(REVISED));
        let c = context_line("handler", &again.summary);
        let review = choice(&prompt(Some(&c), &["resolver", "handler", "human"])).unwrap();
        assert_eq!(review.target, "resolver");
        assert_eq!(choice(&prompt(None, &["human"])), None, "the last stage answers");
        assert_eq!(request_of(&prompt(Some(&c), &["x"])), "My printer is on fire");
        let text = text_reply(&prompt(None, &["handler", "human"])).unwrap();
        assert_eq!(parse_text_handoff(&text).unwrap().target, "handler");
        assert_eq!(choice("## SUPERVISION\nHandoff targets: a\n\n## PIPELINE"), None);
    }
}
