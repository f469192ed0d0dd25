//! How the sim plays mode `flow`'s router, deterministically: it routes a request to the
//! destination a hash of the request picks, by the `handoff_to` tool when it is offered, else in
//! the text form. (A routed or advised member answers as any session does: see `chat`.)

use super::prompt::{SimPrompt, stable_hash, summary};
use crate::engine::protocol::flow::{
    DESTINATIONS_LINE, ROUTING_HEADING, TEXT_ROUTE, destinations, handoff_arguments,
};
use crate::model::ToolSpec;

/// A flow router's destinations, from its prompt's `Destinations:` line.
fn router_destinations(text: &str) -> Vec<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(DESTINATIONS_LINE))
        .map(|l| {
            l.split(',')
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The destination the sim routes `request` to: picked by a hash of the request, so the same
/// request always goes the same way.
fn sim_route(request: &str, destinations: &[String]) -> Option<String> {
    let n = destinations.len() as u64;
    (n > 0).then(|| destinations[(stable_hash(&[request]) % n) as usize].clone())
}

/// The request in a router's message (before any routing instructions written after it).
fn request_before_routing(prompt: &str) -> &str {
    prompt
        .split(&format!("\n{ROUTING_HEADING}"))
        .next()
        .unwrap_or(prompt)
}

/// A router without tools: the `@handoff:` line and a note for the destination.
pub(super) fn text_reply(p: &SimPrompt) -> String {
    let request = request_before_routing(p.user);
    // The destinations are in the router's system prompt (or, written by hand, after the request).
    let mut destinations = router_destinations(p.system);
    if destinations.is_empty() {
        destinations = router_destinations(p.user);
    }
    let Some(to) = sim_route(request, &destinations) else {
        return format!("I will answer this myself: {}", summary(request, 80));
    };
    format!(
        "This is one for {to}.\n{}{to}\nThe user asks: {}",
        TEXT_ROUTE,
        summary(request, 80)
    )
}

/// The `handoff_to` call of a router offered the tool: its arguments (the same destination as
/// the text form would pick, and a note quoting the request) and what the sim says before it.
pub(super) fn call(spec: &ToolSpec, prompt: &str) -> Option<(String, String)> {
    let request = request_before_routing(prompt);
    let agent = sim_route(request, &destinations(spec))?;
    let words: Vec<&str> = request.split_whitespace().take(12).collect();
    let arguments = handoff_arguments(&agent, &format!("The user asks: {}", words.join(" ")));
    Some((arguments, format!("This is one for {agent}.")))
}
