//! What a run will probably cost, from earlier runs of the same team or preset: the median and
//! the 90th percentile of their cost, tokens and time. Plain computation; reading the runs is
//! the caller's.

/// What one earlier run used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSample {
    /// `None`: some turn of it had no price.
    pub cost_usd: Option<f64>,
    pub tokens: u64,
    pub duration_ms: u64,
}

/// The middle and the 90th percentile of some figure over the runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub p90: f64,
}

/// A forecast from `runs` earlier runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Forecast {
    pub runs: usize,
    /// Over the runs whose cost is known (`priced_runs` of them); `None` when none is.
    pub cost_usd: Option<Spread>,
    pub priced_runs: usize,
    pub tokens: Spread,
    pub duration_ms: Spread,
}

/// What a forecast is based on: how many of its runs were the team's own, and how many were
/// runs of other teams made from the same preset (and the preset's name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Basis {
    pub own: usize,
    pub preset: Option<(usize, String)>,
}

/// Runs a forecast uses at most (the newest).
pub const FORECAST_RUNS: usize = 20;

/// The `q`-quantile (0 to 1) of `values`, interpolated between the two nearest ranks (the
/// usual "linear" rule); `None` for no values.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
    let weight = rank - low as f64;
    Some(sorted[low] + (sorted[high] - sorted[low]) * weight)
}

fn spread(values: &[f64]) -> Option<Spread> {
    Some(Spread {
        median: quantile(values, 0.5)?,
        p90: quantile(values, 0.9)?,
    })
}

/// The forecast from `samples` (oldest first; the newest [`FORECAST_RUNS`] are used); `None`
/// with no samples.
pub fn forecast(samples: &[RunSample]) -> Option<Forecast> {
    let newest = &samples[samples.len().saturating_sub(FORECAST_RUNS)..];
    let costs: Vec<f64> = newest.iter().filter_map(|s| s.cost_usd).collect();
    let tokens: Vec<f64> = newest.iter().map(|s| s.tokens as f64).collect();
    let durations: Vec<f64> = newest.iter().map(|s| s.duration_ms as f64).collect();
    Some(Forecast {
        runs: newest.len(),
        cost_usd: spread(&costs),
        priced_runs: costs.len(),
        tokens: spread(&tokens)?,
        duration_ms: spread(&durations)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cost: Option<f64>, tokens: u64, secs: u64) -> RunSample {
        RunSample {
            cost_usd: cost,
            tokens,
            duration_ms: secs * 1000,
        }
    }

    #[test]
    fn quantiles_interpolate_between_ranks() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[4.0], 0.9), Some(4.0));
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.5), Some(2.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.5));
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((quantile(&ten, 0.9).unwrap() - 9.1).abs() < 1e-9);
        assert_eq!(quantile(&ten, 1.0), Some(10.0));
        assert_eq!(quantile(&[f64::NAN, 1.0], 0.5), Some(1.0));
    }

    #[test]
    fn no_history_is_no_forecast() {
        assert_eq!(forecast(&[]), None);
    }

    #[test]
    fn a_forecast_has_the_median_and_90th_percentile_of_each_figure() {
        let runs = [
            sample(Some(0.10), 1000, 10),
            sample(Some(0.30), 3000, 30),
            sample(Some(0.20), 2000, 20),
        ];
        let f = forecast(&runs).unwrap();
        assert_eq!(f.runs, 3);
        assert_eq!(f.priced_runs, 3);
        let cost = f.cost_usd.unwrap();
        assert!((cost.median - 0.20).abs() < 1e-12);
        assert!((cost.p90 - 0.28).abs() < 1e-12);
        assert_eq!(f.tokens.median, 2000.0);
        assert_eq!(f.duration_ms.median, 20_000.0);
    }

    #[test]
    fn runs_without_a_price_count_for_tokens_and_time_only() {
        let f = forecast(&[sample(None, 10, 1), sample(Some(1.0), 30, 3)]).unwrap();
        assert_eq!((f.runs, f.priced_runs), (2, 1));
        assert_eq!(f.cost_usd.unwrap().median, 1.0);
        assert_eq!(f.tokens.median, 20.0);
        let f = forecast(&[sample(None, 10, 1)]).unwrap();
        assert_eq!(f.cost_usd, None);
    }

    #[test]
    fn only_the_newest_runs_count() {
        let mut runs: Vec<RunSample> = (0..30).map(|_| sample(Some(100.0), 1, 1)).collect();
        runs.extend((0..FORECAST_RUNS).map(|_| sample(Some(1.0), 1, 1)));
        let f = forecast(&runs).unwrap();
        assert_eq!(f.runs, FORECAST_RUNS);
        assert_eq!(f.cost_usd.unwrap().p90, 1.0);
    }
}
