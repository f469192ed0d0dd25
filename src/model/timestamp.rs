//! A time written as chrono writes it (RFC 3339, UTC, `Z`, the fraction in 0, 3, 6 or 9
//! digits as needed: `SecondsFormat::AutoSi`), made in a buffer on the stack. Every transcript
//! and run-file line has one; chrono hands serde_json a `Display` that is written a character at
//! a time, each checked for escaping: a tenth of the time a line took to make.

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::Serializer;

/// The longest: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
const LONGEST: usize = 30;

/// `at` as chrono's `Serialize` writes it, for years 0 to 9999 (outside them, chrono's own).
pub fn serialize<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    let mut buf = [0u8; LONGEST];
    match write(at, &mut buf) {
        Some(text) => serializer.serialize_str(text),
        None => serde::Serialize::serialize(at, serializer),
    }
}

/// Writes `at` into `buf`; `None` for a year outside 0 to 9999 (which chrono writes with a
/// sign).
fn write<'a>(at: &DateTime<Utc>, buf: &'a mut [u8; LONGEST]) -> Option<&'a str> {
    let year = u32::try_from(at.year()).ok().filter(|y| *y <= 9999)?;
    let nanos = at.nanosecond();
    // A leap second is held as 1_000_000_000 nanoseconds and more: written as second 60.
    let (second, nanos) = if nanos >= 1_000_000_000 {
        (at.second() + 1, nanos - 1_000_000_000)
    } else {
        (at.second(), nanos)
    };
    put(buf, 0, year, 4);
    buf[4] = b'-';
    put(buf, 5, at.month(), 2);
    buf[7] = b'-';
    put(buf, 8, at.day(), 2);
    buf[10] = b'T';
    put(buf, 11, at.hour(), 2);
    buf[13] = b':';
    put(buf, 14, at.minute(), 2);
    buf[16] = b':';
    put(buf, 17, second, 2);
    let (fraction, width) = match nanos {
        0 => (0, 0),
        n if n % 1_000_000 == 0 => (n / 1_000_000, 3),
        n if n % 1_000 == 0 => (n / 1_000, 6),
        n => (n, 9),
    };
    let mut end = 19;
    if width > 0 {
        buf[19] = b'.';
        put(buf, 20, fraction, width);
        end = 20 + width;
    }
    buf[end] = b'Z';
    std::str::from_utf8(&buf[..=end]).ok()
}

/// `value` in `width` decimal digits (zero-padded) at `at`.
fn put(buf: &mut [u8; LONGEST], at: usize, value: u32, width: usize) {
    let mut value = value;
    for slot in buf[at..at + width].iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone};

    use super::*;

    #[derive(serde::Serialize)]
    struct Ours(#[serde(serialize_with = "serialize")] DateTime<Utc>);

    fn same_as_chrono(at: DateTime<Utc>) {
        let ours = serde_json::to_string(&Ours(at)).unwrap();
        let chrono = serde_json::to_string(&at).unwrap();
        assert_eq!(ours, chrono, "{at:?}");
    }

    #[test]
    fn written_as_chrono_writes_it() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
        for nanos in [
            0,
            1,
            7_000,
            123_000_000,
            123_400_000,
            123_456_000,
            123_456_789,
            999_999_999,
            // A leap second's.
            1_000_000_000,
            1_500_000_000,
            1_999_999_999,
        ] {
            let time = day.and_hms_nano_opt(23, 59, 59, nanos).unwrap();
            same_as_chrono(Utc.from_utc_datetime(&time));
        }
        for (y, m, d) in [
            (1, 1, 1),
            (999, 12, 31),
            (1970, 1, 1),
            (2000, 2, 29),
            (9999, 12, 31),
        ] {
            let time = NaiveDate::from_ymd_opt(y, m, d)
                .unwrap()
                .and_hms_milli_opt(4, 5, 6, 7)
                .unwrap();
            same_as_chrono(Utc.from_utc_datetime(&time));
        }
        same_as_chrono(Utc::now());
        let mut rng = fastrand::Rng::with_seed(14);
        for _ in 0..10_000 {
            let at = Utc.timestamp_nanos(rng.i64(0..i64::MAX));
            same_as_chrono(at);
        }
    }

    #[test]
    fn years_past_four_digits_are_chronos_own() {
        for y in [-1, 10_000, 262_000] {
            let time = NaiveDate::from_ymd_opt(y, 1, 2)
                .unwrap()
                .and_hms_opt(3, 4, 5)
                .unwrap();
            same_as_chrono(Utc.from_utc_datetime(&time));
        }
    }
}
