//! The throughput forecast of the controller's third phase: ARIMA(p,1,0)
//! fitted by least squares — the next difference of the series as a linear
//! function of the p differences before it — iterated over the horizon.
//! Khaos forecasts with ARIMA too; p = 0 is a random walk with drift.

use fragstate_core::{Error, Result};

/// A forecast and the model it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Forecast {
    /// The lags used: the `p` asked for, or fewer when the differences do not
    /// vary enough to fit that many (down to 0: the mean drift).
    pub lags: usize,
    /// The next values of the series, one per step of the horizon.
    pub values: Vec<f64>,
}

/// The history an ARIMA(`p`,1,0) forecast needs: `2p + 3` values.
pub fn samples_needed(p: usize) -> usize {
    2 * p + 3
}

/// The forecast of the next `horizon` values of `history` (oldest first),
/// from an ARIMA(`p`,1,0) fitted to all of it. Needs at least `2p + 3`
/// values, all finite.
pub fn forecast_throughput(history: &[f64], p: usize, horizon: usize) -> Result<Forecast> {
    let need = samples_needed(p);
    if history.len() < need {
        return Err(Error::invalid("throughput history", format!("{} samples", history.len()), format!("at least {need} for an ARIMA({p},1,0) forecast")));
    }
    if let Some(bad) = history.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid("throughput sample", bad, "a finite number"));
    }
    let diffs: Vec<f64> = history.windows(2).map(|w| w[1] - w[0]).collect();
    // A series whose differences are constant (a straight line) leaves the lag columns
    // collinear with the intercept, and a short or noisy one can fit an explosive AR (seen on a
    // job's first minute: a forecast of 459 M records/s): fall back to fewer lags.
    let (lags, params) = (0..=p)
        .rev()
        .find_map(|lags| fit_lags(&diffs, lags).filter(|params| not_explosive(params)).map(|params| (lags, params)))
        .expect("0 lags always fit");
    let mut recent: Vec<f64> = diffs[diffs.len() - lags..].to_vec();
    let mut level = *history.last().expect("history is not empty");
    let mut values = Vec::with_capacity(horizon);
    for _ in 0..horizon {
        let next = params[0] + (1..=lags).map(|k| params[k] * recent[recent.len() - k]).sum::<f64>();
        level += next;
        // a rate is never negative (a falling trend levels out at 0)
        values.push(level.max(0.0));
        if lags > 0 {
            recent.remove(0);
            recent.push(next);
        }
    }
    Ok(Forecast { lags, values })
}

/// No explosive growth when iterated: the lag coefficients' absolute values sum to at most 1
/// (every root of the AR polynomial then lies on or outside the unit circle; φ = -1, an
/// alternation, is kept).
fn not_explosive(params: &[f64]) -> bool {
    params[1..].iter().map(|p| p.abs()).sum::<f64>() <= 1.0 + 1e-9
}

/// The intercept and the `lags` coefficients of d[t] ~ 1 + d[t-1] + … + d[t-lags]
/// by least squares; `None` when they cannot be fitted. 0 lags: the mean difference.
fn fit_lags(diffs: &[f64], lags: usize) -> Option<Vec<f64>> {
    if lags == 0 {
        return Some(vec![diffs.iter().sum::<f64>() / diffs.len() as f64]);
    }
    let rows = diffs.len() - lags;
    let mut data = Vec::with_capacity(rows * (lags + 2));
    for t in lags..diffs.len() {
        data.push(diffs[t]);
        data.push(1.0);
        data.extend((1..=lags).map(|k| diffs[t - k]));
    }
    let params = linregress::fit_low_level_regression_model_without_statistics(&data, rows, lags + 2).ok()?;
    params.iter().all(|p| p.is_finite()).then_some(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explosive_fit_falls_back_to_fewer_lags_and_a_rate_never_goes_negative() {
        // a start-up ramp whose differences triple: AR(1) and AR(2) fit φ = 3, which iterated
        // over 30 steps forecasts ~10^17 records/s; the mean drift is what is left
        let h = [0.0, 1.0, 4.0, 13.0, 40.0, 121.0, 364.0, 1_093.0, 3_280.0];
        let f = forecast_throughput(&h, 2, 30).unwrap();
        let max = f.values.iter().cloned().fold(0.0, f64::max);
        assert_eq!(f.lags, 0);
        assert!(max < 100_000.0, "lags {}: {:?}", f.lags, f.values);
        let falling: Vec<f64> = (0..20).map(|i| 1_000.0 - 100.0 * i as f64).collect();
        let f = forecast_throughput(&falling, 0, 30).unwrap();
        assert!(f.values.iter().all(|v| *v >= 0.0), "{:?}", f.values);
        assert_eq!(*f.values.last().unwrap(), 0.0);
    }

    #[test]
    fn a_linear_trend_is_continued() {
        let h: Vec<f64> = (0..20).map(|i| 1_000.0 + 50.0 * i as f64).collect();
        for p in [0, 1, 2] {
            let f = forecast_throughput(&h, p, 3).unwrap().values;
            for (k, v) in f.iter().enumerate() {
                let want = 1_000.0 + 50.0 * (20 + k) as f64;
                assert!((v - want).abs() < 1e-6, "p={p}: {f:?}");
            }
        }
    }

    #[test]
    fn an_oscillation_in_the_differences_is_followed() {
        // Differences +100, -100, +100, …: AR(1) on them has φ = -1.
        let h: Vec<f64> = (0..30).map(|i| if i % 2 == 0 { 5_000.0 } else { 5_100.0 }).collect();
        let f = forecast_throughput(&h, 1, 4).unwrap();
        assert_eq!(f.lags, 1);
        let f = f.values;
        let want = [5_000.0, 5_100.0, 5_000.0, 5_100.0];
        for (v, w) in f.iter().zip(want) {
            assert!((v - w).abs() < 1e-6, "{f:?}");
        }
    }

    #[test]
    fn a_constant_series_stays_constant() {
        let f = forecast_throughput(&[700.0; 12], 2, 5).unwrap().values;
        assert!(f.iter().all(|v| (v - 700.0).abs() < 1e-9), "{f:?}");
    }

    #[test]
    fn short_or_broken_histories_are_errors_naming_the_need() {
        let e = forecast_throughput(&[1.0, 2.0, 3.0, 4.0], 1, 1).unwrap_err().to_string();
        assert!(e.contains("4 samples") && e.contains("at least 5"), "{e}");
        let e = forecast_throughput(&[1.0, 2.0, f64::NAN, 4.0, 5.0], 0, 1).unwrap_err().to_string();
        assert!(e.contains("NaN"), "{e}");
    }
}
