//! What a model's tokens cost: prices (a built-in table of well-known models, overridden and
//! extended by config.yaml's `prices:`), the cost of one turn's [`Usage`], and the money a run
//! spent so far ([`Cost`]). A model without a price has an unknown cost, never $0.
//!
//! Prices are US dollars per million tokens. Input tokens are priced three ways: read from the
//! provider's prompt cache (`cache_read`), written to it (`cache_write`), or neither (`input`).
//! A price that leaves a cache rate out charges the input rate for those tokens.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::Usage;

/// Prices of one model, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    /// Input tokens neither read from nor written to the prompt cache.
    pub input: f64,
    pub output: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Price {
    /// A model that costs nothing (a local server, the simulator).
    pub const FREE: Price = Price::new(0.0, 0.0, Some(0.0), Some(0.0));

    pub const fn new(input: f64, output: f64, cache_read: Option<f64>, cache_write: Option<f64>) -> Price {
        Price {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    /// `$3.00 in / $15.00 out / $0.30 cache read / $3.75 cache write per million tokens` (the
    /// cache rates where given), or `free`.
    pub fn per_million(&self) -> String {
        if *self == Price::FREE {
            return "free".to_string();
        }
        let usd = super::usd_text;
        let mut text = format!("{} in / {} out", usd(self.input), usd(self.output));
        if let Some(read) = self.cache_read {
            text.push_str(&format!(" / {} cache read", usd(read)));
        }
        if let Some(write) = self.cache_write {
            text.push_str(&format!(" / {} cache write", usd(write)));
        }
        format!("{text} per million tokens")
    }

    /// What `usage` costs at these prices, in USD.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let read = usage.cache_read_tokens.min(usage.input_tokens);
        let write = usage.cache_write_tokens.min(usage.input_tokens - read);
        let per_million = usage.uncached_input() as f64 * self.input
            + read as f64 * self.cache_read.unwrap_or(self.input)
            + write as f64 * self.cache_write.unwrap_or(self.input)
            + usage.output_tokens as f64 * self.output;
        per_million / 1_000_000.0
    }

    fn check(&self) -> Result<(), String> {
        let rates = [
            ("input", Some(self.input)),
            ("output", Some(self.output)),
            ("cache_read", self.cache_read),
            ("cache_write", self.cache_write),
        ];
        for (key, value) in rates {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(format!(
                    "{key}: {v} is not a price (USD per million tokens, 0 or more)"
                ));
            }
        }
        Ok(())
    }
}

/// Read from config.yaml: `{input, output, cache_read, cache_write}` (the cache rates may be
/// left out), or `0` for a model that costs nothing.
impl<'de> Deserialize<'de> for Price {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Price, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Rates {
            input: f64,
            output: f64,
            #[serde(default)]
            cache_read: Option<f64>,
            #[serde(default)]
            cache_write: Option<f64>,
        }
        struct V;
        const EXPECTED: &str = "a price {input, output, cache_read, cache_write} in USD per million tokens, or 0 for a free model";
        impl<'de> Visitor<'de> for V {
            type Value = Price;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Price, E> {
                self.visit_f64(v as f64)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Price, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Price, E> {
                if v == 0.0 {
                    Ok(Price::FREE)
                } else {
                    Err(E::custom(format!(
                        "{v} is not a price: write {{input: .., output: ..}} (USD per million tokens), or 0 for a free model"
                    )))
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Price, A::Error> {
                let r = Rates::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let price = Price::new(r.input, r.output, r.cache_read, r.cache_write);
                price.check().map_err(de::Error::custom)?;
                Ok(price)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A model's prices, with the dearer ones some models charge for a whole request whose prompt
/// is longer than a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub price: Price,
    /// `(prompt tokens above which, the prices then)`.
    pub long_context: Option<(u64, Price)>,
}

impl Rate {
    pub const fn flat(price: Price) -> Rate {
        Rate {
            price,
            long_context: None,
        }
    }

    /// What one request's `usage` costs, in USD.
    pub fn cost(&self, usage: &Usage) -> f64 {
        match self.long_context {
            Some((above, long)) if usage.input_tokens > above => long.cost(usage),
            _ => self.price.cost(usage),
        }
    }
}

/// One row of the built-in table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownPrice {
    /// The model's name as its API spells it, without a date suffix.
    pub model: &'static str,
    pub rate: Rate,
    /// The day these prices take effect (`YYYY-MM-DD`), when the table knows a change coming.
    pub from: Option<&'static str>,
}

/// When the built-in table was taken from its sources.
pub const PRICES_TAKEN_ON: &str = "2026-11-27";

/// Where the built-in table comes from.
pub const PRICES_SOURCES: &str = "platform.claude.com/docs/en/about-claude/pricing and the models' overview pages (Anthropic); developers.openai.com/api/docs/models and /pricing (OpenAI); ai.google.dev/gemini-api/docs/pricing (Google); rows the providers' pages did not show were taken from price trackers that copy them (PromptFuel, claudit, TokenMeter)";

const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
    Price::new(input, output, Some(cache_read), Some(cache_write))
}

/// A model that charges no premium for writing the cache (or whose write price is not known):
/// written tokens cost the input price.
const fn read_only(input: f64, output: f64, cache_read: f64) -> Price {
    Price::new(input, output, Some(cache_read), None)
}

const fn row(model: &'static str, price: Price) -> KnownPrice {
    KnownPrice {
        model,
        rate: Rate::flat(price),
        from: None,
    }
}

const fn long(model: &'static str, price: Price, above: u64, long: Price) -> KnownPrice {
    KnownPrice {
        model,
        rate: Rate {
            price,
            long_context: Some((above, long)),
        },
        from: None,
    }
}

const fn from(model: &'static str, price: Price, day: &'static str) -> KnownPrice {
    KnownPrice {
        model,
        rate: Rate::flat(price),
        from: Some(day),
    }
}

/// GPT-6.x: a prompt over 272K tokens doubles the input and cache prices and makes the
/// output 1.5 times dearer, for the whole request.
const fn gpt6(model: &'static str, input: f64, cache_read: f64, cache_write: f64, output: f64) -> KnownPrice {
    long(
        model,
        p(input, output, cache_read, cache_write),
        272_000,
        p(input * 2.0, output * 1.5, cache_read * 2.0, cache_write * 2.0),
    )
}

/// List prices of well-known models (standard tier, cache writes with the shortest retention),
/// taken on [`PRICES_TAKEN_ON`] from [`PRICES_SOURCES`]. Models whose prices were not found are
/// left out: their cost is unknown until config.yaml's `prices:` gives one.
pub const KNOWN_PRICES: &[KnownPrice] = &[
    // Anthropic: cache writes are the 5-minute ones (1.25 x input), reads 0.1 x input unless said.
    row("claude-fable-5-1", p(10.0, 50.0, 0.25, 12.5)),
    row("claude-fable-5", p(10.0, 50.0, 1.0, 12.5)),
    row("claude-mythos-5-1", p(10.0, 50.0, 0.25, 12.5)),
    row("claude-mythos-5", p(10.0, 50.0, 1.0, 12.5)),
    row("claude-opus-5-5", p(4.0, 20.0, 0.2, 5.0)),
    row("claude-opus-5", p(5.0, 25.0, 0.5, 6.25)),
    row("claude-opus-4-8", p(5.0, 25.0, 0.5, 6.25)),
    row("claude-opus-4-7", p(5.0, 25.0, 0.5, 6.25)),
    row("claude-opus-4-6", p(5.0, 25.0, 0.5, 6.25)),
    row("claude-opus-4-5", p(5.0, 25.0, 0.5, 6.25)),
    row("claude-opus-4-1", p(15.0, 75.0, 1.5, 18.75)),
    row("claude-opus-4", p(15.0, 75.0, 1.5, 18.75)),
    // Sonnet 5.5's cache reads went from 0.20 to 0.10 on 2026-10-07.
    row("claude-sonnet-5-5", p(2.0, 10.0, 0.1, 2.5)),
    row("claude-sonnet-5", p(2.0, 10.0, 0.2, 2.5)),
    row("claude-sonnet-4-6", p(3.0, 15.0, 0.3, 3.75)),
    row("claude-sonnet-4-5", p(3.0, 15.0, 0.3, 3.75)),
    long(
        "claude-sonnet-4",
        p(3.0, 15.0, 0.3, 3.75),
        200_000,
        Price::new(6.0, 22.5, None, None),
    ),
    long(
        "claude-haiku-5-5",
        p(0.1, 0.5, 0.01, 0.125),
        100_000,
        p(0.5, 2.5, 0.05, 0.625),
    ),
    row("claude-haiku-4-5", p(1.0, 5.0, 0.1, 1.25)),
    row("claude-haiku-3-5", p(0.8, 4.0, 0.08, 1.0)),
    row("claude-3-5-haiku", p(0.8, 4.0, 0.08, 1.0)),
    // OpenAI: cache writes are billed from GPT-5.6 on (30-minute retention); before, written
    // tokens cost the input price.
    gpt6("gpt-6.2-astra", 8.0, 0.4, 10.0, 40.0),
    gpt6("gpt-6.2-sol", 2.0, 0.1, 2.5, 10.0),
    gpt6("gpt-6.1-sol", 2.0, 0.1, 2.5, 10.0),
    gpt6("gpt-6.1-terra", 1.0, 0.05, 1.25, 5.0),
    gpt6("gpt-6-astra", 10.0, 1.0, 12.5, 50.0),
    gpt6("gpt-6-sol", 2.0, 0.2, 2.5, 10.0),
    gpt6("gpt-6-luna", 0.1, 0.01, 0.125, 0.5),
    row("gpt-5.6-sol", read_only(4.0, 20.0, 0.4)),
    row("gpt-5.6-terra", read_only(2.0, 12.0, 0.2)),
    row("gpt-5.6-luna", read_only(0.2, 1.2, 0.02)),
    row("gpt-5.5", read_only(5.0, 30.0, 0.5)),
    row("gpt-5.5-pro", read_only(30.0, 180.0, 3.0)),
    row("gpt-5.4-pro", read_only(30.0, 180.0, 3.0)),
    row("gpt-5.4", read_only(2.5, 15.0, 0.25)),
    row("gpt-5.4-mini", read_only(0.75, 4.5, 0.075)),
    row("gpt-5", read_only(1.25, 10.0, 0.125)),
    // Google (Developer API, paid tier): cached input only by implicit caching; a cache price
    // not found is left out (cached tokens then cost the input price: an upper bound).
    row("gemini-4-neon", read_only(3.0, 15.0, 0.15)),
    row("gemini-4-hydrogen", read_only(1.5, 7.5, 0.075)),
    row("gemini-3.8-flash", Price::new(0.75, 3.75, None, None)),
    from("gemini-3.8-flash", Price::new(1.5, 7.5, None, None), "2027-01-01"),
    row("gemini-3.5-flash", Price::new(1.5, 9.0, None, None)),
    row("gemini-3.5-flash-lite", Price::new(0.3, 2.5, None, None)),
    long(
        "gemini-3.1-pro-preview",
        Price::new(2.0, 12.0, None, None),
        200_000,
        Price::new(4.0, 18.0, None, None),
    ),
    long(
        "gemini-2.5-pro",
        read_only(1.25, 10.0, 0.125),
        200_000,
        Price::new(2.5, 15.0, None, None),
    ),
    row("gemini-2.5-flash", read_only(0.3, 2.5, 0.03)),
    row("gemini-2.5-flash-lite", read_only(0.1, 0.4, 0.01)),
];

/// A model name as the table spells it: lower case, the part after the last `/` (a gateway's
/// `anthropic/claude-…`), without a `[1m]`-style suffix (Claude Code's), a `-latest` or a
/// date (`-20251101`, `-2026-09-29`), and a Codex model's `-codex` (priced as its base model).
pub fn table_name(model: &str) -> String {
    let mut name = model.trim().to_ascii_lowercase();
    if let Some(i) = name.rfind('/') {
        name.drain(..=i);
    }
    if let Some(i) = name.find('[') {
        name.truncate(i);
    }
    for suffix in ["-latest", "-codex"] {
        if let Some(stripped) = name.strip_suffix(suffix) {
            name.truncate(stripped.len());
        }
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // -YYYYMMDD
    if let Some((head, tail)) = name.rsplit_once('-')
        && tail.len() == 8
        && digits(tail)
    {
        name.truncate(head.len());
    }
    // -YYYY-MM-DD
    let mut parts = name.rsplitn(4, '-');
    if let (Some(day), Some(month), Some(year), Some(head)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
        && year.len() == 4
        && month.len() == 2
        && day.len() == 2
        && digits(year)
        && digits(month)
        && digits(day)
    {
        let keep = head.len();
        name.truncate(keep);
    }
    name
}

/// The built-in prices of `model` on `day` (`YYYY-MM-DD`), if the table has the model.
pub fn known_rate(model: &str, day: &str) -> Option<Rate> {
    known_rate_of(&table_name(model), day)
}

/// [`known_rate`] of a model by its [`table_name`].
fn known_rate_of(name: &str, day: &str) -> Option<Rate> {
    KNOWN_PRICES
        .iter()
        .filter(|k| k.model == name && k.from.is_none_or(|from| from <= day))
        .max_by_key(|k| k.from.unwrap_or(""))
        .map(|k| k.rate)
}

/// Where a model's prices come from: config.yaml's `prices:` (by slug, by bare model name, or
/// `<provider>/*` for all of a provider's models), the providers that cost nothing (the
/// simulator), then the built-in table.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceBook {
    overrides: BTreeMap<String, Price>,
    free_providers: Vec<String>,
}

/// The built-in table, and the simulator (`sim`) free.
impl Default for PriceBook {
    fn default() -> PriceBook {
        PriceBook::new(BTreeMap::new(), vec!["sim".to_string()])
    }
}

impl PriceBook {
    pub fn new(overrides: BTreeMap<String, Price>, free_providers: Vec<String>) -> PriceBook {
        PriceBook {
            overrides,
            free_providers,
        }
    }

    /// The prices of the model `slug` (`<provider>/<model>`) on `day`; `None`: unknown.
    pub fn rate_on(&self, slug: &str, day: &str) -> Option<Rate> {
        self.rate_when(slug, || day.to_string())
    }

    /// The prices of `slug` today.
    pub fn rate(&self, slug: &str) -> Option<Rate> {
        self.rate_when(slug, today)
    }

    /// [`PriceBook::rate_on`] with the day asked for only when the built-in table is read (a
    /// price is looked up for every turn: config's prices and the free providers need no date,
    /// and no copy of the slug).
    fn rate_when(&self, slug: &str, day: impl FnOnce() -> String) -> Option<Rate> {
        let (provider, model) = slug.split_once('/')?;
        let overridden = || {
            self.overrides
                .get(slug)
                .or_else(|| self.overrides.get(model))
                .or_else(|| self.overrides.get(&format!("{provider}/*")))
        };
        (!self.overrides.is_empty())
            .then(overridden)
            .flatten()
            .map(|p| Rate::flat(*p))
            .or_else(|| {
                self.free_providers
                    .iter()
                    .any(|f| f == provider)
                    .then_some(Rate::flat(Price::FREE))
            })
            .or_else(|| {
                // The date only matters to a model whose price changed on one (and formatting
                // it was a tenth of a costless turn's price lookup).
                let name = table_name(model);
                let dated = KNOWN_PRICES.iter().any(|k| k.model == name && k.from.is_some());
                known_rate_of(&name, &if dated { day() } else { String::new() })
            })
    }

    /// What `usage` of `slug` costs today, in USD; `None` when the model has no price.
    pub fn cost(&self, slug: &str, usage: &Usage) -> Option<f64> {
        self.rate(slug).map(|r| r.cost(usage))
    }
}

/// Today (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// The most one turn may say it cost (an agent's own figure, ACP's `cost` or Claude Code's
/// `total_cost_usd`): a larger figure is taken as this much.
pub const MAX_REPORTED_TURN_USD: f64 = 10_000.0;

/// What becomes of a cost a peer reported for its turn: a figure huddle did not work out
/// itself, so it is checked before it is added up (a negative one would lower a run's spending
/// under its `max_cost_usd`, an infinite one would poison every total).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReportedCost {
    /// Finite, at least $0 and at most [`MAX_REPORTED_TURN_USD`]: taken as it is.
    Taken(f64),
    /// Above [`MAX_REPORTED_TURN_USD`] (or infinite): taken as that much, so a budget still
    /// stops the run.
    Clipped(f64),
    /// Negative or not a number: dropped (the turn counts as unpriced).
    Dropped,
}

impl ReportedCost {
    pub fn check(usd: f64) -> ReportedCost {
        if usd.is_nan() || usd < 0.0 {
            ReportedCost::Dropped
        } else if usd > MAX_REPORTED_TURN_USD {
            ReportedCost::Clipped(MAX_REPORTED_TURN_USD)
        } else {
            // `-0.0` is `0.0` here (it would print `$-0.00`).
            ReportedCost::Taken(if usd == 0.0 { 0.0 } else { usd })
        }
    }

    /// The dollars to count, if any.
    pub fn usd(self) -> Option<f64> {
        match self {
            ReportedCost::Taken(usd) | ReportedCost::Clipped(usd) => Some(usd),
            ReportedCost::Dropped => None,
        }
    }
}

/// Money spent, summed over turns: the dollars of the turns whose cost is known (`priced` of
/// them), and how many turns had no price (then the true cost is higher than `usd`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cost {
    pub usd: f64,
    #[serde(skip_serializing_if = "is_zero")]
    pub priced: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub unpriced: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Cost {
    /// One turn's cost (`None`: its model has no price).
    pub fn of_turn(cost_usd: Option<f64>) -> Cost {
        match cost_usd {
            Some(usd) => Cost {
                usd,
                priced: 1,
                unpriced: 0,
            },
            None => Cost {
                usd: 0.0,
                priced: 0,
                unpriced: 1,
            },
        }
    }

    pub fn is_zero(&self) -> bool {
        self.usd == 0.0 && self.priced == 0 && self.unpriced == 0
    }

    pub fn add(&mut self, other: Cost) {
        self.usd += other.usd;
        self.priced = self.priced.saturating_add(other.priced);
        self.unpriced = self.unpriced.saturating_add(other.unpriced);
    }

    /// The dollars when every turn had a price (nothing spent is $0).
    pub fn known(&self) -> Option<f64> {
        (self.unpriced == 0).then_some(self.usd)
    }

    /// The dollars of the priced turns, unless every turn had no price: what a run's
    /// `cost_usd` says (with its unpriced turns counted beside it).
    pub fn usd_if_any(&self) -> Option<f64> {
        (self.priced > 0 || self.unpriced == 0).then_some(self.usd)
    }

    /// What was spent since `earlier` (a running total taken before).
    pub fn since(&self, earlier: Cost) -> Cost {
        Cost {
            usd: (self.usd - earlier.usd).max(0.0),
            priced: self.priced.saturating_sub(earlier.priced),
            unpriced: self.unpriced.saturating_sub(earlier.unpriced),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reported_cost_is_finite_not_negative_and_at_most_the_cap() {
        assert_eq!(ReportedCost::check(0.045), ReportedCost::Taken(0.045));
        assert_eq!(
            ReportedCost::check(MAX_REPORTED_TURN_USD).usd(),
            Some(MAX_REPORTED_TURN_USD)
        );
        let zero = ReportedCost::check(-0.0).usd().unwrap();
        assert!(zero == 0.0 && zero.is_sign_positive(), "-0.0 is counted as 0.0");
        for bad in [-5.0, -1e-9, f64::NEG_INFINITY, f64::NAN] {
            assert_eq!(ReportedCost::check(bad), ReportedCost::Dropped, "{bad}");
        }
        for huge in [1e308, f64::INFINITY, MAX_REPORTED_TURN_USD + 0.01] {
            assert_eq!(
                ReportedCost::check(huge),
                ReportedCost::Clipped(MAX_REPORTED_TURN_USD),
                "{huge}"
            );
        }
    }

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn tokens_are_priced_per_million_with_cached_input_apart() {
        let price = p(3.0, 15.0, 0.3, 3.75);
        // 1M uncached in, 1M out.
        assert!((price.cost(&Usage::new(1_000_000, 1_000_000)) - 18.0).abs() < 1e-9);
        // 20,098 in: 18,000 read, 2,048 written, 50 plain; 300 out.
        let u = usage(20_098, 300, 18_000, 2_048);
        let expected = (50.0 * 3.0 + 18_000.0 * 0.3 + 2_048.0 * 3.75 + 300.0 * 15.0) / 1e6;
        assert!((price.cost(&u) - expected).abs() < 1e-12);
        // Without cache rates, cached tokens cost the input rate.
        let plain = Price::new(3.0, 15.0, None, None);
        assert!((plain.cost(&u) - (20_098.0 * 3.0 + 300.0 * 15.0) / 1e6).abs() < 1e-12);
        // Counts that do not add up are held to the input.
        assert!(price.cost(&usage(10, 0, 50, 50)) <= 10.0 * 0.3 / 1e6 + 1e-15);
        assert_eq!(Price::FREE.cost(&u), 0.0);
    }

    #[test]
    fn a_long_prompt_is_priced_whole_at_the_dearer_rate() {
        let haiku = known_rate("claude-haiku-5-5", "2026-12-01").unwrap();
        assert!((haiku.cost(&Usage::new(100_000, 0)) - 0.01).abs() < 1e-12);
        assert!((haiku.cost(&Usage::new(100_001, 0)) - 100_001.0 * 0.5 / 1e6).abs() < 1e-12);
        let sol = known_rate("gpt-6-sol", "2026-12-01").unwrap();
        assert!((sol.cost(&Usage::new(300_000, 1_000_000)) - (300_000.0 * 4.0 / 1e6 + 15.0)).abs() < 1e-9);
    }

    #[test]
    fn model_names_are_matched_without_dates_suffixes_and_gateways() {
        for (given, name) in [
            ("claude-opus-4-5-20251101", "claude-opus-4-5"),
            ("gpt-6.1-sol-2026-09-29", "gpt-6.1-sol"),
            ("claude-opus-5-5[1m]", "claude-opus-5-5"),
            ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("Claude-Sonnet-4-5", "claude-sonnet-4-5"),
            ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
            ("gpt-5-codex", "gpt-5"),
            ("qwen3:8b", "qwen3:8b"),
            ("gpt-4-0613", "gpt-4-0613"),
        ] {
            assert_eq!(table_name(given), name, "{given}");
        }
        assert!(known_rate("claude-sonnet-4-5-20250929", "2026-11-27").is_some());
        assert_eq!(known_rate("qwen3:8b", "2026-11-27"), None);
        // Prefixes are not names: gpt-5 is not gpt-5.5-pro.
        assert_ne!(
            known_rate("gpt-5.5-pro", "2026-11-27"),
            known_rate("gpt-5", "2026-11-27")
        );
    }

    #[test]
    fn a_price_change_with_a_date_applies_from_that_day() {
        let before = known_rate("gemini-3.8-flash", "2026-12-31").unwrap();
        let after = known_rate("gemini-3.8-flash", "2027-01-01").unwrap();
        assert_eq!(before.price.input, 0.75);
        assert_eq!(after.price.input, 1.5);
    }

    /// A price is looked up for every turn: the day is made only for a model whose price
    /// changed on one, and the answer is the same as with the day given.
    #[test]
    fn the_day_is_asked_only_for_a_model_priced_by_date() {
        let book = PriceBook::default();
        let asked = std::cell::Cell::new(0);
        let day = || {
            asked.set(asked.get() + 1);
            "2027-01-01".to_string()
        };
        assert_eq!(
            book.rate_when("anthropic/claude-sonnet-4-5", day),
            book.rate_on("anthropic/claude-sonnet-4-5", "2027-01-01")
        );
        assert_eq!(book.rate_when("null/zero", day), None);
        assert_eq!(asked.get(), 0);
        let dated = book
            .rate_when("google/gemini-3.8-flash", day)
            .expect("in the table");
        assert_eq!((asked.get(), dated.price.input), (1, 1.5));
    }

    #[test]
    fn every_row_is_a_price_and_no_model_is_listed_twice_for_a_day() {
        for (i, k) in KNOWN_PRICES.iter().enumerate() {
            assert!(k.rate.price.check().is_ok(), "{}", k.model);
            assert_eq!(table_name(k.model), k.model, "{} is not in table form", k.model);
            assert!(
                !KNOWN_PRICES[..i]
                    .iter()
                    .any(|o| o.model == k.model && o.from == k.from),
                "{} twice",
                k.model
            );
        }
    }

    #[test]
    fn config_prices_come_first_then_free_providers_then_the_table() {
        let mut overrides = BTreeMap::new();
        overrides.insert("mock/m".to_string(), p(3.0, 15.0, 0.3, 3.75));
        overrides.insert("claude-sonnet-4-5".to_string(), p(1.0, 1.0, 1.0, 1.0));
        overrides.insert("ollama/*".to_string(), Price::FREE);
        let book = PriceBook::new(overrides, vec!["sim".into()]);
        let day = "2026-11-27";
        assert_eq!(book.rate_on("mock/m", day).unwrap().price.input, 3.0);
        assert_eq!(book.rate_on("mock/other", day), None);
        assert_eq!(
            book.rate_on("gw/claude-sonnet-4-5", day).unwrap().price.input,
            1.0
        );
        assert_eq!(book.rate_on("ollama/qwen3:8b", day).unwrap().price, Price::FREE);
        assert_eq!(book.rate_on("sim/default", day).unwrap().price, Price::FREE);
        assert_eq!(
            book.rate_on("anthropic/claude-opus-4-5", day)
                .unwrap()
                .price
                .input,
            5.0
        );
        assert_eq!(book.rate_on("local/unheard-of", day), None);
        assert_eq!(book.rate_on("no slug", day), None);
        assert_eq!(book.cost("local/unheard-of", &Usage::new(5, 5)), None);
    }

    #[test]
    fn config_reads_a_price_map_or_zero_and_nothing_else() {
        let read = |yaml: &str| serde_yaml::from_str::<Price>(yaml);
        assert_eq!(read("0").unwrap(), Price::FREE);
        assert_eq!(read("0.0").unwrap(), Price::FREE);
        assert_eq!(
            read("{ input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 }").unwrap(),
            p(3.0, 15.0, 0.3, 3.75)
        );
        assert_eq!(
            read("{ input: 1, output: 2 }").unwrap(),
            Price::new(1.0, 2.0, None, None)
        );
        let err = read("3").unwrap_err().to_string();
        assert!(err.contains("0 for a free model"), "{err}");
        assert!(read("{ input: 1 }").is_err());
        assert!(read("{ input: 1, output: 2, cached: 1 }").is_err());
        let err = read("{ input: -1, output: 2 }").unwrap_err().to_string();
        assert!(err.contains("input: -1 is not a price"), "{err}");
    }

    #[test]
    fn costs_add_up_and_say_when_a_turn_had_no_price() {
        let mut c = Cost::default();
        c.add(Cost::of_turn(Some(0.25)));
        assert_eq!(c.known(), Some(0.25));
        c.add(Cost::of_turn(None));
        assert_eq!(c.known(), None);
        assert_eq!((c.usd, c.priced, c.unpriced), (0.25, 1, 1));
        assert_eq!(c.usd_if_any(), Some(0.25));
        assert_eq!(Cost::of_turn(None).usd_if_any(), None);
        assert_eq!(Cost::default().usd_if_any(), Some(0.0));
        let later = {
            let mut l = c;
            l.add(Cost::of_turn(Some(0.5)));
            l
        };
        assert_eq!(later.since(c), Cost::of_turn(Some(0.5)));
    }
}
