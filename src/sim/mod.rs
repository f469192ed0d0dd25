//! The built-in `sim` provider: offline and deterministic, seeded by a hash of the whole prompt.
//! `sim/slow-200ms` spreads 200 ms of latency over its deltas; any other model answers at once.
//! Usage is an estimate in words (no tokenizer offline).
//!
//! It sits above the engine and plays every mode: it reads the prompts the engine writes with
//! `engine::protocol`'s own constants and readers (no prompt words copied here). `text.rs` tells
//! a prompt's kind and hands it to the player of its mode, beside each other here: `cycle.rs`
//! (orchestrator, orchestrator_reflect, a session's reflection), `chat.rs` (broadcast,
//! sequential, plain chat), `relay.rs`, `flow.rs`, `pipeline.rs`, `dispatch.rs`, `team.rs`;
//! `tools.rs` plays tool use. The provider registry gets it from here ([`providers`]).

mod chat;
mod cycle;
mod dispatch;
mod flow;
mod pipeline;
mod prompt;
mod relay;
mod team;
mod text;
mod tools;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ProviderKind};
use crate::model::Usage;
use crate::providers::{
    DeltaSink, Finished, Provider, ProviderError, ProviderOptions, Providers, TextSink, TurnOutput,
    TurnRequest, conclude, guarded, render_plain_prompt,
};
use prompt::stable_hash;
use text::answer;

pub use cycle::evaluator_score;
pub use prompt::SimPrompt;
pub use text::{PromptKind, classify};

/// Every provider of `config`, the simulator among them (a config without one still gets
/// `sim`): what front ends, tests and benches open.
pub fn providers(config: &Config) -> Result<Providers, ProviderError> {
    Providers::from_config(config, provider)
}

/// As [`providers`], with explicit timeouts and retry policy (tests use short ones).
pub fn providers_with_options(config: &Config, options: ProviderOptions) -> Result<Providers, ProviderError> {
    Providers::with_options(config, options, provider)
}

/// [`providers`] for a front end's environment (`env`: where keys are read, what programs
/// get).
pub fn providers_in(config: &Config, env: &crate::env::Env) -> Result<Providers, ProviderError> {
    Providers::with_env(config, ProviderOptions::from_config(config), env, provider)
}

/// A `kind: sim` provider named `name` (the registry's [`crate::providers::Simulator`]).
pub fn provider(name: &str) -> Arc<dyn Provider> {
    Arc::new(SimProvider::new(name))
}

/// Deltas per answer (fewer for short answers).
const DELTAS: usize = 6;

pub struct SimProvider {
    name: String,
}

impl SimProvider {
    pub fn new(name: &str) -> SimProvider {
        SimProvider {
            name: name.to_string(),
        }
    }

    async fn turn(
        &self,
        req: TurnRequest,
        deltas: DeltaSink<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnOutput, ProviderError> {
        let started = Instant::now();
        let mut sink = TextSink::new(deltas);
        let work = async {
            let (calls, text, mut usage) = match dispatch::play(&req) {
                Some(dispatch::Play::Calls(calls)) => {
                    let text = format!("Dispatching {} sub-agent(s).", calls.len());
                    (calls, text, Usage::default())
                }
                Some(dispatch::Play::Say(text)) => {
                    let usage = Usage::new(
                        estimate_tokens(&render_plain_prompt(&req)),
                        estimate_tokens(&text),
                    );
                    (Vec::new(), text, usage)
                }
                None => match tools::call_for(&req) {
                    Some((call, preamble)) => (vec![call], preamble, Usage::default()),
                    None => {
                        let (text, usage) = simulate(&req);
                        (Vec::new(), text, usage)
                    }
                },
            };
            if !calls.is_empty() {
                usage.input_tokens = estimate_tokens(&render_plain_prompt(&req));
                usage.output_tokens = estimate_tokens(&text);
            }
            let latency = latency_of(&req.model) * dispatch::latency_factor(&req);
            let pieces = split_pieces(&text, DELTAS);
            let pause = latency / u32::try_from(pieces.len().max(1)).unwrap_or(1);
            for piece in pieces {
                if pause.is_zero() {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(pause).await;
                }
                sink.push(piece);
            }
            let finish_reason = if calls.is_empty() { "stop" } else { "tool_calls" };
            Ok(Finished {
                usage: Some(usage),
                finish_reason: Some(finish_reason.to_string()),
                tool_calls: calls,
                ..Finished::default()
            })
        };
        let result = guarded(&self.name, &cancel, req.turn_timeout, work).await;
        conclude(result, sink.text, started, true)
    }
}

impl Provider for SimProvider {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Sim
    }
    fn stream_turn<'a>(
        &'a self,
        req: TurnRequest,
        deltas: DeltaSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(self.turn(req, deltas, cancel))
    }
}

/// The sim's whole answer and usage estimate for a request (no latency, no streaming).
pub fn simulate(req: &TurnRequest) -> (String, Usage) {
    let system = req.system.as_deref().unwrap_or("");
    let prompt = SimPrompt {
        system,
        user: req.last_user_text(),
    };
    let full = render_plain_prompt(req);
    let mut text = team::text(req).unwrap_or_else(|| answer(&prompt, stable_hash(&[system, &full])));
    // What the tools said opens the answer, so the markers parsed from the rest (plans,
    // scores, sentinels) stay where the protocol expects them.
    if let Some(note) = tools::results_note(req) {
        text = format!("{note}\n\n{text}");
    }
    let usage = Usage::new(
        estimate_tokens(system) + estimate_tokens(&full),
        estimate_tokens(&text),
    );
    (text, usage)
}

/// The sim's usage unit: whitespace-separated words.
pub fn estimate_tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// `slow-200ms`, `slow-2s` (anywhere in the model name) to a latency; zero otherwise.
pub fn latency_of(model: &str) -> Duration {
    let Some(i) = model.find("slow-") else {
        return Duration::ZERO;
    };
    let rest = &model[i + "slow-".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(n) = digits.parse::<u64>() else {
        return Duration::ZERO;
    };
    match &rest[digits.len()..] {
        u if u.starts_with("ms") => Duration::from_millis(n),
        u if u.starts_with('s') => Duration::from_secs(n),
        _ => Duration::from_millis(n),
    }
}

/// Splits text into at most `n` pieces at word boundaries, keeping every byte.
fn split_pieces(text: &str, n: usize) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let target = text.len().div_ceil(n.max(1));
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + target).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        // Extend to the next space so words stay whole.
        if let Some(space) = text[end..].find(' ') {
            end += space + 1;
        } else {
            end = text.len();
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

#[cfg(test)]
mod tests;
