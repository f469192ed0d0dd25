//! Limits shared by every way a value gets in (presets, the command line, the TUI, a loaded
//! organization), so that what one accepts the others accept too.

use std::ops::RangeInclusive;

/// A team's `max_iterations` when nothing says otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 5;

/// Every valid `max_iterations`.
pub const MAX_ITERATIONS: RangeInclusive<u32> = 1..=100;

/// A `max_iterations` outside [`MAX_ITERATIONS`] (or not a number at all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "max iterations must be a whole number from {} to {}, got {got}",
    MAX_ITERATIONS.start(),
    MAX_ITERATIONS.end()
)]
pub struct MaxIterationsError {
    /// The value as it was given.
    pub got: String,
}

/// `n` when it is a valid `max_iterations`.
pub fn check_max_iterations(n: u32) -> Result<u32, MaxIterationsError> {
    if MAX_ITERATIONS.contains(&n) {
        Ok(n)
    } else {
        Err(MaxIterationsError { got: n.to_string() })
    }
}

/// A `max_iterations` typed by a person (surrounding blanks allowed).
pub fn parse_max_iterations(text: &str) -> Result<u32, MaxIterationsError> {
    let not_valid = || MaxIterationsError {
        got: format!("`{text}`"),
    };
    let n: u32 = text.trim().parse().map_err(|_| not_valid())?;
    check_max_iterations(n).map_err(|_| not_valid())
}

/// The nearest valid `max_iterations` (for values stored before the range was enforced).
pub fn clamp_max_iterations(n: u32) -> u32 {
    n.clamp(*MAX_ITERATIONS.start(), *MAX_ITERATIONS.end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid() {
        assert_eq!(
            check_max_iterations(DEFAULT_MAX_ITERATIONS),
            Ok(DEFAULT_MAX_ITERATIONS)
        );
    }

    #[test]
    fn the_range_is_one_to_a_hundred() {
        assert_eq!(check_max_iterations(1), Ok(1));
        assert_eq!(check_max_iterations(100), Ok(100));
        assert_eq!(
            check_max_iterations(0).unwrap_err().to_string(),
            "max iterations must be a whole number from 1 to 100, got 0"
        );
        assert!(check_max_iterations(101).is_err());
    }

    #[test]
    fn typed_values_are_whole_numbers_in_range() {
        assert_eq!(parse_max_iterations(" 7 "), Ok(7));
        for bad in ["0", "101", "-1", "1.5", "", "five", "99999999999"] {
            let err = parse_max_iterations(bad).unwrap_err();
            assert_eq!(err.got, format!("`{bad}`"));
        }
        assert_eq!(
            parse_max_iterations("abc").unwrap_err().to_string(),
            "max iterations must be a whole number from 1 to 100, got `abc`"
        );
    }

    #[test]
    fn stored_values_are_clamped_into_range() {
        assert_eq!(clamp_max_iterations(0), 1);
        assert_eq!(clamp_max_iterations(42), 42);
        assert_eq!(clamp_max_iterations(u32::MAX), 100);
    }
}
