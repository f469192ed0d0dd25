//! When a rate or usage limit resets, from what a provider said: HTTP headers (`retry-after-ms`,
//! `retry-after`, `anthropic-ratelimit-*-reset`, `x-ratelimit-reset-*`), an error body (the Codex
//! backend's `resets_in_seconds` / `resets_at`), or a CLI agent's words (Claude Code's
//! `usage limit reached|<epoch>`, "try again in 2 hours 5 minutes", "try again at 7:58 PM",
//! "resets 5pm"). Pure: `now` is given; the engine decides whether to wait that long.

use std::time::Duration;

use chrono::{DateTime, Local, NaiveTime, TimeZone, Utc};
use reqwest::header::HeaderMap;

/// The wait a provider asked for, from its headers, in this order: `retry-after-ms`,
/// `retry-after` (seconds or an HTTP date), Anthropic's `anthropic-ratelimit-*-reset` (RFC 3339;
/// the latest of the limits used up, else the earliest), OpenAI's `x-ratelimit-reset-*`
/// (`6m0s`, `1.5s`, `20ms`; the longest of the limits used up).
pub fn wait_from_headers(headers: &HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX));
    }
    if let Some(wait) = text("retry-after").and_then(|v| parse_retry_after(v, now)) {
        return Some(wait);
    }
    let pairs = || {
        headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?.trim())))
    };
    // Anthropic: `anthropic-ratelimit-<limit>-reset` with its `-remaining`.
    let anthropic: Vec<(Duration, bool)> = pairs()
        .filter_map(|(name, value)| {
            let limit = name
                .strip_prefix("anthropic-ratelimit-")?
                .strip_suffix("-reset")?;
            let at = DateTime::parse_from_rfc3339(value).ok()?.with_timezone(&Utc);
            let used_up = text(&format!("anthropic-ratelimit-{limit}-remaining")) == Some("0");
            Some(((at - now).to_std().unwrap_or(Duration::ZERO), used_up))
        })
        .collect();
    if let Some(wait) = pick(&anthropic, false) {
        return Some(wait);
    }
    // OpenAI: `x-ratelimit-reset-<requests|tokens>` with `x-ratelimit-remaining-<…>`.
    let openai: Vec<(Duration, bool)> = pairs()
        .filter_map(|(name, value)| {
            let limit = name.strip_prefix("x-ratelimit-reset-")?;
            let used_up = text(&format!("x-ratelimit-remaining-{limit}")) == Some("0");
            Some((parse_go_duration(value)?, used_up))
        })
        .collect();
    pick(&openai, true)
}

/// The latest reset of the limits used up; with none used up, the earliest (`longest_else`:
/// the longest) of them all.
fn pick(resets: &[(Duration, bool)], longest_else: bool) -> Option<Duration> {
    let used_up = resets.iter().filter(|(_, u)| *u).map(|(d, _)| *d).max();
    used_up.or_else(|| {
        let all = resets.iter().map(|(d, _)| *d);
        if longest_else { all.max() } else { all.min() }
    })
}

/// A Go-style duration (`6m0s`, `1.5s`, `20ms`, `2h3m`): numbers with units `h`, `m`, `s`, `ms`.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (0.001, 2)
        } else if rest.starts_with('h') {
            (3600.0, 1)
        } else if rest.starts_with('m') {
            (60.0, 1)
        } else if rest.starts_with('s') {
            (1.0, 1)
        } else if rest.is_empty() {
            // A bare number: seconds.
            (1.0, 0)
        } else {
            return None;
        };
        total += number * unit;
        rest = &rest[len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

/// A reset time in an error body or a CLI agent's output: JSON `resets_in_seconds` /
/// `resets_at` / `resetsAt` (epoch seconds, or milliseconds when larger than 10^12), Claude
/// Code's `usage limit reached|<epoch>`, `try again in 2 days 3 hours 5 minutes`, `try again at
/// 7:58 PM`, `resets 5pm` / `resets at 9am` (local time; tomorrow when it has passed today).
pub fn wait_from_text(text: &str, now: DateTime<Utc>) -> Option<Duration> {
    let until = |epoch: f64| -> Option<Duration> {
        let secs = if epoch > 1e12 { epoch / 1000.0 } else { epoch };
        let at = Utc.timestamp_opt(secs as i64, 0).single()?;
        Some((at - now).to_std().unwrap_or(Duration::ZERO))
    };
    if let Some(v) = json_in(text) {
        let found = find_number(&v, &["resets_in_seconds", "resetsInSeconds", "retry_after"]);
        if let Some(secs) = found {
            return Duration::try_from_secs_f64(secs.max(0.0)).ok();
        }
        if let Some(epoch) = find_number(&v, &["resets_at", "resetsAt"]) {
            return until(epoch);
        }
    }
    let lower = text.to_ascii_lowercase();
    // `Claude AI usage limit reached|1749924000`
    if let Some(at) = lower.find("limit reached|") {
        let digits: String = lower[at + "limit reached|".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(epoch) = digits.parse::<f64>() {
            return until(epoch);
        }
    }
    if let Some(at) = lower.find("try again in ") {
        let rest = &lower[at + "try again in ".len()..];
        if let Some(wait) = words_duration(rest) {
            return Some(wait);
        }
    }
    for key in ["try again at ", "resets at ", "reset at ", "resets "] {
        if let Some(at) = lower.find(key)
            && let Some(time) = clock_time(&lower[at + key.len()..])
        {
            return Some(until_local(time, now));
        }
    }
    None
}

/// A limit's reset in a CLI agent's words (its error, its stderr, an answer that is only the
/// notice): a wait when the text speaks of a limit and says when it resets.
pub fn limit_notice(text: &str, now: DateTime<Utc>) -> Option<Duration> {
    let lower = text.to_ascii_lowercase();
    let speaks_of_limit = ["limit", "rate_limit", "quota", "out of extra usage"]
        .iter()
        .any(|w| lower.contains(w));
    if !speaks_of_limit {
        return None;
    }
    wait_from_text(text, now)
}

/// The first JSON object in `text` (a whole body, or a line of output that is one).
fn json_in(text: &str) -> Option<serde_json::Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

/// The first number under one of `keys`, anywhere in `v`.
fn find_number(v: &serde_json::Value, keys: &[&str]) -> Option<f64> {
    match v {
        serde_json::Value::Object(map) => {
            for key in keys {
                if let Some(n) = map.get(*key).and_then(serde_json::Value::as_f64) {
                    return Some(n);
                }
            }
            map.values().find_map(|child| find_number(child, keys))
        }
        serde_json::Value::Array(items) => items.iter().find_map(|child| find_number(child, keys)),
        _ => None,
    }
}

/// `2 days 17 hours 14 minutes`, `3 hours`, `45 seconds`: the sum, or `None` without a unit.
fn words_duration(text: &str) -> Option<Duration> {
    let mut total = 0u64;
    let mut found = false;
    let mut words = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .filter(|w| !w.is_empty());
    while let Some(word) = words.next() {
        let Ok(n) = word.parse::<u64>() else {
            if found && word != "and" {
                break;
            }
            continue;
        };
        let Some(unit) = words.next() else { break };
        let secs = if unit.starts_with("day") {
            86_400
        } else if unit.starts_with("hour") || unit == "h" {
            3600
        } else if unit.starts_with("min") || unit == "m" {
            60
        } else if unit.starts_with("sec") || unit == "s" {
            1
        } else {
            break;
        };
        total = total.saturating_add(n.saturating_mul(secs));
        found = true;
    }
    found.then(|| Duration::from_secs(total))
}

/// `7:58 pm`, `5pm`, `12:50am`, `17:30` at the start of `text`.
fn clock_time(text: &str) -> Option<NaiveTime> {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == ' ' || c == 'a' || c == 'p' || c == 'm'))
        .unwrap_or(text.len());
    let clock = text[..end].trim();
    let (clock, pm) = match clock.strip_suffix("pm").or_else(|| clock.strip_suffix("p.m")) {
        Some(c) => (c.trim(), Some(true)),
        None => match clock.strip_suffix("am") {
            Some(c) => (c.trim(), Some(false)),
            None => (clock, None),
        },
    };
    let (h, m) = match clock.split_once(':') {
        Some((h, m)) => (
            h.trim().parse::<u32>().ok()?,
            m.trim().get(..2)?.parse::<u32>().ok()?,
        ),
        None => (clock.parse::<u32>().ok()?, 0),
    };
    let h = match pm {
        Some(true) if h < 12 => h + 12,
        Some(false) if h == 12 => 0,
        Some(_) if h > 12 => return None,
        _ => h,
    };
    NaiveTime::from_hms_opt(h, m, 0)
}

/// The wait until the next `time` in the local time zone.
fn until_local(time: NaiveTime, now: DateTime<Utc>) -> Duration {
    let local_now = now.with_timezone(&Local);
    let today = local_now.date_naive().and_time(time);
    let at = Local
        .from_local_datetime(&today)
        .earliest()
        .map(|t| t.with_timezone(&Utc));
    match at {
        Some(at) if at > now => (at - now).to_std().unwrap_or(Duration::ZERO),
        Some(at) => (at + chrono::Duration::days(1) - now)
            .to_std()
            .unwrap_or(Duration::ZERO),
        None => Duration::from_secs(3600),
    }
}

/// `Retry-After` as seconds (integer or decimal) or an RFC 2822/HTTP date relative to `now`.
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        // A huge value is a long wait (the policy caps it), never a panic.
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.with_timezone(&chrono::Utc) - now;
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn headers_are_read_in_their_order_of_trust() {
        let now = Utc.with_ymd_and_hms(2026, 3, 7, 10, 0, 0).unwrap();
        let s = |n: u64| Some(Duration::from_secs(n));
        assert_eq!(
            wait_from_headers(&headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(wait_from_headers(&headers(&[("retry-after", "3")]), now), s(3));
        assert_eq!(
            wait_from_headers(&headers(&[("retry-after", "Sat, 07 Mar 2026 10:00:20 GMT")]), now),
            s(20)
        );
        // Anthropic: the latest of the used-up limits.
        let anthropic = headers(&[
            ("anthropic-ratelimit-requests-reset", "2026-03-07T10:01:00Z"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2026-03-07T10:05:00Z"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-input-tokens-reset", "2026-03-07T10:09:00Z"),
            ("anthropic-ratelimit-input-tokens-remaining", "500"),
        ]);
        assert_eq!(wait_from_headers(&anthropic, now), s(300));
        // None used up: the earliest.
        let none_used = headers(&[
            ("anthropic-ratelimit-requests-reset", "2026-03-07T10:01:00Z"),
            ("anthropic-ratelimit-tokens-reset", "2026-03-07T10:05:00Z"),
        ]);
        assert_eq!(wait_from_headers(&none_used, now), s(60));
        // OpenAI: the longest of the used-up ones.
        let openai = headers(&[
            ("x-ratelimit-reset-requests", "1.5s"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-tokens", "6m0s"),
            ("x-ratelimit-remaining-tokens", "120"),
        ]);
        assert_eq!(wait_from_headers(&openai, now), Some(Duration::from_millis(1500)));
        assert_eq!(wait_from_headers(&HeaderMap::new(), now), None);
    }

    #[test]
    fn go_durations_read() {
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(parse_go_duration("2h3m"), Some(Duration::from_secs(7380)));
        assert_eq!(parse_go_duration("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_go_duration("soon"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn words_of_providers_and_agents_give_the_reset() {
        let now = Utc.with_ymd_and_hms(2026, 3, 7, 10, 0, 0).unwrap();
        let epoch = now.timestamp() + 300;
        assert_eq!(
            wait_from_text(&format!("Claude AI usage limit reached|{epoch}"), now),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            wait_from_text(&format!("Claude AI usage limit reached|{}", epoch * 1000), now),
            Some(Duration::from_secs(300)),
            "milliseconds"
        );
        assert_eq!(
            wait_from_text(
                "You've hit your usage limit. Upgrade to Pro or try again in 2 days 17 hours 14 minutes.",
                now
            ),
            Some(Duration::from_secs(2 * 86_400 + 17 * 3600 + 14 * 60))
        );
        let body = r#"{"type":"error","error":{"type":"usage_limit_reached","resets_in_seconds":13872}}"#;
        assert_eq!(wait_from_text(body, now), Some(Duration::from_secs(13_872)));
        let event = format!(
            r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{epoch}}}}}"#
        );
        assert_eq!(wait_from_text(&event, now), Some(Duration::from_secs(300)));
        // A local clock time: within a day.
        let at = wait_from_text(
            "You're out of extra usage · resets 5pm (America/Los_Angeles)",
            now,
        )
        .unwrap();
        assert!(at <= Duration::from_secs(86_400), "{at:?}");
        assert!(wait_from_text("try again at 7:58 PM", now).is_some());
        assert_eq!(wait_from_text("some other failure", now), None);
        assert_eq!(wait_from_text("resets soon", now), None);
    }

    #[test]
    fn only_words_about_a_limit_are_a_limit_notice() {
        let now = Utc.with_ymd_and_hms(2026, 3, 7, 10, 0, 0).unwrap();
        let epoch = now.timestamp() + 3;
        assert_eq!(
            limit_notice(&format!("usage limit reached|{epoch}"), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(limit_notice("build failed: try again in 5 minutes", now), None);
    }

    #[test]
    fn clock_times_read_in_twelve_and_twenty_four_hours() {
        assert_eq!(clock_time("7:58 pm."), NaiveTime::from_hms_opt(19, 58, 0));
        assert_eq!(clock_time("5pm (x)"), NaiveTime::from_hms_opt(17, 0, 0));
        assert_eq!(clock_time("12:50am"), NaiveTime::from_hms_opt(0, 50, 0));
        assert_eq!(clock_time("17:30"), NaiveTime::from_hms_opt(17, 30, 0));
        assert_eq!(clock_time("13pm"), None);
        assert_eq!(clock_time("later"), None);
    }
}
