//! Money and tokens in words: a turn's or an execution's cost, what a run spent in all, and the
//! forecast of a run from earlier ones. An unknown cost reads as unknown, never as $0.

use super::{Line, Tone, duration};
use crate::engine::events::RunTotals;
use crate::model::forecast::{Basis, Forecast};
use crate::model::{Cost, Usage, usd_text};
use crate::text::thousands;

/// `$0.042`: dollars with the digits that matter.
pub fn usd(usd: f64) -> String {
    usd_text(usd)
}

/// A cost that may be unknown: `$0.042`, or `cost unknown`.
pub fn maybe(cost_usd: Option<f64>) -> String {
    cost_usd.map_or_else(|| "cost unknown".to_string(), usd)
}

/// What several turns cost: `$0.42`; `≥ $0.42 (3 turns without a price)` when some had none;
/// `cost unknown (no price for its model)` when none had one. `None` when nothing was spent
/// that anyone counted (no turn at all).
pub fn total(cost: &Cost) -> Option<String> {
    match (cost.priced, cost.unpriced) {
        (0, 0) => None,
        (_, 0) => Some(usd(cost.usd)),
        (0, n) => Some(format!(
            "cost unknown (no price for its model{})",
            if n == 1 { "" } else { "s" }
        )),
        (_, n) => Some(format!(
            "≥ {} ({} without a price)",
            usd(cost.usd),
            super::counted(u64::from(n), "turn")
        )),
    }
}

/// The short form of [`total`], for a line with other figures: `$0.42`, `≥ $0.42`, `cost
/// unknown`.
pub fn short(cost: &Cost) -> Option<String> {
    match (cost.priced, cost.unpriced) {
        (0, 0) => None,
        (_, 0) => Some(usd(cost.usd)),
        (0, _) => Some("cost unknown".to_string()),
        _ => Some(format!("≥ {}", usd(cost.usd))),
    }
}

/// The narrowest form, for a list (the sidebar): `$0.42`, `≥$0.42`, `$?` (unknown); nothing
/// when nothing was spent.
pub fn compact(cost: &Cost) -> Option<String> {
    match (cost.priced, cost.unpriced) {
        (0, 0) => None,
        (_, 0) if cost.usd == 0.0 => None,
        (_, 0) => Some(usd(cost.usd)),
        (0, _) => Some("$?".to_string()),
        _ => Some(format!("≥{}", usd(cost.usd))),
    }
}

/// `9,700 tokens (8,000 read from the cache, 500 written to it)`.
pub fn tokens(usage: &Usage) -> String {
    let total = thousands(usage.total());
    let (read, written) = (
        thousands(usage.cache_read_tokens),
        thousands(usage.cache_write_tokens),
    );
    match (usage.cache_read_tokens, usage.cache_write_tokens) {
        (0, 0) => format!("{total} tokens"),
        (_, 0) => format!("{total} tokens ({read} read from the cache)"),
        (0, _) => format!("{total} tokens ({written} written to the cache)"),
        _ => format!("{total} tokens ({read} read from the cache, {written} written to it)"),
    }
}

/// The cost of a run's totals (see [`total`]).
fn totals_cost(totals: &RunTotals) -> Option<String> {
    let cost = Cost {
        usd: totals.cost_usd.unwrap_or(0.0),
        priced: u32::from(totals.cost_usd.is_some()),
        unpriced: totals.unpriced_turns,
    };
    total(&cost)
}

/// What a run spent, at its end: `spent $0.0103 · 9,700 tokens (8,000 read from the cache,
/// 500 written to it) · 3.2s`.
pub fn spent(totals: &RunTotals) -> Line {
    let mut parts = Vec::new();
    if let Some(cost) = totals_cost(totals) {
        parts.push(cost);
    }
    if totals.usage.total() > 0 {
        parts.push(tokens(&totals.usage));
    }
    parts.push(duration(totals.duration_ms));
    let tone = if totals.unpriced_turns > 0 {
        Tone::Warn
    } else {
        Tone::Info
    };
    // An unknown cost is not said to be spent: `cost unknown (no price for its models) · …`.
    let verb = if totals.cost_usd.is_none() && totals.unpriced_turns > 0 {
        ""
    } else {
        "spent "
    };
    Line::new(tone, format!("{verb}{}", parts.join(" · ")))
}

/// What a forecast is based on: `7 earlier runs of this team and 2 runs of teams made from
/// preset `Code Review``.
fn basis_words(basis: &Basis) -> String {
    let mut parts = Vec::new();
    if basis.own > 0 {
        parts.push(format!(
            "{} of this team",
            super::counted(basis.own as u64, "earlier run")
        ));
    }
    if let Some((n, name)) = basis.preset.as_ref().filter(|(n, _)| *n > 0) {
        parts.push(format!(
            "{} of teams made from preset `{name}`",
            super::counted(*n as u64, "run")
        ));
    }
    parts.join(" and ")
}

/// A forecast in one line: `≈ $0.12 (90%: $0.31) · 24,000 tokens (90%: 51,000) · 2m10s (90%:
/// 4m30s)`, or that there is no history.
pub fn forecast_line(forecast: Option<&Forecast>) -> Line {
    let Some(f) = forecast else {
        return Line::info("no forecast: no earlier run to go by");
    };
    let cost = match &f.cost_usd {
        Some(c) => format!("≈ {} (90%: {})", usd(c.median), usd(c.p90)),
        None => "cost unknown".to_string(),
    };
    Line::info(format!(
        "{cost} · {} tokens (90%: {}) · {} (90%: {})",
        thousands(f.tokens.median.round() as u64),
        thousands(f.tokens.p90.round() as u64),
        duration(f.duration_ms.median.round() as u64),
        duration(f.duration_ms.p90.round() as u64),
    ))
}

/// What a forecast goes by, said under it: `from 7 earlier runs of this team` (with how many
/// had a price, when not all).
pub fn forecast_basis(forecast: Option<&Forecast>, basis: &Basis) -> Line {
    let Some(f) = forecast else {
        return Line::info("runs of this team (or of teams made from its preset) leave their cost here");
    };
    let mut text = format!("median and 90th percentile of {}", basis_words(basis));
    if f.priced_runs < f.runs {
        text.push_str(&format!(
            "; cost from the {} with a price for every model",
            super::counted(f.priced_runs as u64, "run")
        ));
    }
    Line::info(text)
}

/// A preset's forecast in the new-team picker: `forecast ≈ $0.12/run (90%: $0.31) · 2m10s, from
/// 3 runs of teams made from preset `Code Review``, or that there is none yet.
pub fn preset_forecast(forecast: Option<&Forecast>, basis: &Basis) -> String {
    match forecast {
        Some(f) => format!(
            "forecast {} · {}, from {}",
            forecast_short(f),
            duration(f.duration_ms.median.round() as u64),
            basis_words(basis)
        ),
        None => "forecast: none yet (no earlier run of a team made from it)".to_string(),
    }
}

/// The short form for a header: `≈ $0.12/run (90%: $0.31)`, `≈ 24,000 tok/run` when unpriced
/// (or free).
pub fn forecast_short(forecast: &Forecast) -> String {
    match forecast.cost_usd.as_ref().filter(|c| c.p90 > 0.0) {
        Some(c) => format!("≈ {}/run (90%: {})", usd(c.median), usd(c.p90)),
        None => format!("≈ {} tok/run", thousands(forecast.tokens.median.round() as u64)),
    }
}

/// The next run's forecast for a panel line: `next run ≈ $0.12 (90%: $0.31)`, `next run ≈
/// 24,000 tok (90%: 51,000)` when unpriced (or free).
pub fn forecast_next(forecast: &Forecast) -> String {
    match forecast.cost_usd.as_ref().filter(|c| c.p90 > 0.0) {
        Some(c) => format!("next run ≈ {} (90%: {})", usd(c.median), usd(c.p90)),
        None => format!(
            "next run ≈ {} tok (90%: {})",
            thousands(forecast.tokens.median.round() as u64),
            thousands(forecast.tokens.p90.round() as u64)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::forecast::{RunSample, forecast};

    #[test]
    fn a_cost_is_dollars_or_unknown_never_zero_for_unknown() {
        assert_eq!(maybe(Some(0.0103)), "$0.010");
        assert_eq!(maybe(None), "cost unknown");
        assert_eq!(total(&Cost::default()), None);
        assert_eq!(total(&Cost::of_turn(Some(1.5))).as_deref(), Some("$1.50"));
        assert_eq!(
            total(&Cost::of_turn(None)).as_deref(),
            Some("cost unknown (no price for its model)")
        );
        let mut mixed = Cost::of_turn(Some(0.25));
        mixed.add(Cost::of_turn(None));
        mixed.add(Cost::of_turn(None));
        assert_eq!(
            total(&mixed).as_deref(),
            Some("≥ $0.250 (2 turns without a price)")
        );
        assert_eq!(short(&mixed).as_deref(), Some("≥ $0.250"));
        assert_eq!(compact(&mixed).as_deref(), Some("≥$0.250"));
        assert_eq!(compact(&Cost::of_turn(None)).as_deref(), Some("$?"));
        assert_eq!(
            compact(&Cost::of_turn(Some(0.0))),
            None,
            "free: nothing to say in a list"
        );
    }

    #[test]
    fn a_run_says_what_it_spent() {
        let totals = RunTotals {
            duration_ms: 3200,
            usage: Usage {
                cache_read_tokens: 8000,
                cache_write_tokens: 500,
                ..Usage::new(9500, 200)
            },
            cost_usd: Some(0.010275),
            unpriced_turns: 0,
        };
        let line = spent(&totals);
        assert_eq!(
            line.text,
            "spent $0.010 · 9,700 tokens (8,000 read from the cache, 500 written to it) · 3.2s"
        );
        assert_eq!(line.tone, Tone::Info);
        let unknown = spent(&RunTotals {
            cost_usd: None,
            unpriced_turns: 2,
            usage: Usage::new(10, 5),
            duration_ms: 40,
        });
        assert_eq!(
            unknown.text,
            "cost unknown (no price for its models) · 15 tokens · 40ms"
        );
        assert_eq!(unknown.tone, Tone::Warn);
        assert_eq!(
            tokens(&Usage {
                cache_write_tokens: 2048,
                ..Usage::new(3000, 10)
            }),
            "3,010 tokens (2,048 written to the cache)"
        );
    }

    #[test]
    fn a_forecast_says_its_figures_and_what_it_goes_by() {
        assert_eq!(forecast_line(None).text, "no forecast: no earlier run to go by");
        let samples: Vec<RunSample> = [(0.10, 10_000, 60), (0.30, 30_000, 180), (0.20, 20_000, 120)]
            .into_iter()
            .map(|(usd, tokens, secs)| RunSample {
                cost_usd: Some(usd),
                tokens,
                duration_ms: secs * 1000,
            })
            .collect();
        let f = forecast(&samples).unwrap();
        assert_eq!(
            forecast_line(Some(&f)).text,
            "≈ $0.200 (90%: $0.280) · 20,000 tokens (90%: 28,000) · 2m00s (90%: 2m48s)"
        );
        let basis = Basis {
            own: 2,
            preset: Some((1, "Code Review".into())),
        };
        assert_eq!(
            forecast_basis(Some(&f), &basis).text,
            "median and 90th percentile of 2 earlier runs of this team and 1 run of teams made from preset `Code Review`"
        );
        assert_eq!(forecast_short(&f), "≈ $0.200/run (90%: $0.280)");
        assert_eq!(forecast_next(&f), "next run ≈ $0.200 (90%: $0.280)");
        let from_preset = Basis {
            own: 0,
            preset: Some((3, "Code Review".into())),
        };
        assert_eq!(
            preset_forecast(Some(&f), &from_preset),
            "forecast ≈ $0.200/run (90%: $0.280) · 2m00s, from 3 runs of teams made from preset `Code Review`"
        );
        assert_eq!(
            preset_forecast(None, &from_preset),
            "forecast: none yet (no earlier run of a team made from it)"
        );
        let unpriced = crate::model::forecast::Forecast { cost_usd: None, ..f };
        assert_eq!(forecast_short(&unpriced), "≈ 20,000 tok/run");
        assert_eq!(forecast_next(&unpriced), "next run ≈ 20,000 tok (90%: 28,000)");
        let free = crate::model::forecast::Forecast {
            cost_usd: Some(crate::model::forecast::Spread {
                median: 0.0,
                p90: 0.0,
            }),
            ..f
        };
        assert_eq!(
            forecast_short(&free),
            "≈ 20,000 tok/run",
            "a free run's dollars say nothing"
        );
    }
}
