//! Linear models of what failure experiments measure: the recovery time and
//! the latency of a job as functions of its checkpoint interval and its
//! throughput, fitted by ordinary least squares (`linregress`), each with its
//! fit quality so a decision can say how far to trust it.

use fragstate_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// One failure experiment (or one steady-state window, for latency): the
/// conditions and what was measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// Checkpoint interval in seconds.
    pub interval_s: f64,
    /// Input records per second.
    pub throughput: f64,
    /// Mean end-to-end latency in milliseconds.
    pub latency_ms: f64,
    /// Seconds from the failure until the job was back to its steady-state latency.
    pub recovery_s: f64,
}

/// A regressor of a model: a function of the interval `i` (s) and the throughput `t` (records/s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Term {
    /// `i`: replay after a failure grows with the work since the last checkpoint.
    Interval,
    /// `t`
    Throughput,
    /// `i × t`: the records to replay after a failure at the end of an interval.
    IntervalTimesThroughput,
    /// `1 / i`: checkpoint overhead on latency, paid once per interval.
    InverseInterval,
}

impl Term {
    fn uses_interval(self) -> bool {
        !matches!(self, Term::Throughput)
    }

    fn uses_throughput(self) -> bool {
        matches!(self, Term::Throughput | Term::IntervalTimesThroughput)
    }

    fn value(self, interval_s: f64, throughput: f64) -> f64 {
        match self {
            Term::Interval => interval_s,
            Term::Throughput => throughput,
            Term::IntervalTimesThroughput => interval_s * throughput,
            Term::InverseInterval => 1.0 / interval_s,
        }
    }
}

/// How well a model fits the experiments it was fitted to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    /// Coefficient of determination (1: every point on the model).
    pub r_squared: f64,
    /// Root mean square of the residuals, in the target's unit.
    pub rms_residual: f64,
    /// Residual of each experiment, in their order.
    pub residuals: Vec<f64>,
}

/// `target ≈ intercept + Σ coefficient × term(interval, throughput)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Model {
    pub target: &'static str,
    pub terms: Vec<Term>,
    pub intercept: f64,
    pub coefficients: Vec<f64>,
    pub fit: Fit,
}

impl Model {
    /// The recovery-time model: replay grows with interval × throughput, and
    /// with each of them alone.
    pub const RECOVERY_TERMS: [Term; 3] = [Term::Interval, Term::Throughput, Term::IntervalTimesThroughput];
    /// The latency model: overhead once per interval, and load.
    pub const LATENCY_TERMS: [Term; 2] = [Term::InverseInterval, Term::Throughput];

    /// Fits `target` of `experiments` on `terms`. Needs more experiments than
    /// coefficients (terms + intercept), every value finite, every interval > 0.
    pub fn fit(target: &'static str, terms: &[Term], experiments: &[Experiment], value: impl Fn(&Experiment) -> f64) -> Result<Model> {
        let columns = terms.len() + 1;
        if experiments.len() <= columns {
            return Err(Error::invalid(
                "failure experiments",
                experiments.len(),
                format!("more than {columns} (the {target} model has {columns} coefficients)"),
            ));
        }
        let mut rows = Vec::with_capacity(experiments.len() * (columns + 1));
        for e in experiments {
            if e.interval_s <= 0.0 || ![e.interval_s, e.throughput, value(e)].iter().all(|v| v.is_finite()) {
                return Err(Error::invalid("experiment", format!("{e:?}"), "finite figures and an interval > 0 s"));
            }
            rows.push(value(e));
            rows.push(1.0);
            rows.extend(terms.iter().map(|t| t.value(e.interval_s, e.throughput)));
        }
        // The fit uses a pseudo-inverse: with one interval (or one load) only, it would still
        // return coefficients, split arbitrarily between collinear terms.
        for (what, uses, value) in [
            ("interval", terms.iter().any(|t| t.uses_interval()), (|e: &Experiment| e.interval_s) as fn(&Experiment) -> f64),
            ("throughput", terms.iter().any(|t| t.uses_throughput()), |e: &Experiment| e.throughput),
        ] {
            let mut seen: Vec<f64> = experiments.iter().map(value).collect();
            seen.sort_by(f64::total_cmp);
            seen.dedup();
            if uses && seen.len() < 2 {
                return Err(Error::invalid(
                    "failure experiments",
                    format!("one {what} only ({})", seen[0]),
                    format!("at least 2 different values of the {what} for the {target} model: vary both the interval and the load"),
                ));
            }
        }
        let fitted = linregress::fit_low_level_regression_model(&rows, experiments.len(), columns + 1)
            .map_err(|err| Error::invalid("failure experiments", experiments.len(), format!("conditions the {target} model can be fitted to ({err})")))?;
        let params = fitted.parameters();
        if params.iter().any(|p| !p.is_finite()) {
            return Err(Error::invalid(
                "failure experiments",
                experiments.len(),
                format!("conditions that vary independently (the {target} fit is singular: vary both the interval and the load)"),
            ));
        }
        let residuals = fitted.residuals().to_vec();
        let rms_residual = (residuals.iter().map(|r| r * r).sum::<f64>() / residuals.len() as f64).sqrt();
        Ok(Model {
            target,
            terms: terms.to_vec(),
            intercept: params[0],
            coefficients: params[1..].to_vec(),
            fit: Fit { r_squared: fitted.rsquared(), rms_residual, residuals },
        })
    }

    /// The recovery-time model of `experiments` ([`Self::RECOVERY_TERMS`]).
    pub fn recovery(experiments: &[Experiment]) -> Result<Model> {
        Model::fit("recovery time (s)", &Self::RECOVERY_TERMS, experiments, |e| e.recovery_s)
    }

    /// The latency model of `experiments` ([`Self::LATENCY_TERMS`]).
    pub fn latency(experiments: &[Experiment]) -> Result<Model> {
        Model::fit("latency (ms)", &Self::LATENCY_TERMS, experiments, |e| e.latency_ms)
    }

    /// The model's value at this interval and throughput.
    pub fn predict(&self, interval_s: f64, throughput: f64) -> f64 {
        self.intercept + self.terms.iter().zip(&self.coefficients).map(|(t, c)| c * t.value(interval_s, throughput)).sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Experiments on a grid of intervals and loads, with `recovery` and `latency` as given.
    fn grid(mut recovery: impl FnMut(f64, f64) -> f64, latency: impl Fn(f64, f64) -> f64) -> Vec<Experiment> {
        let mut v = Vec::new();
        for i in [10.0, 30.0, 60.0, 120.0] {
            for t in [1_000.0, 5_000.0, 20_000.0] {
                v.push(Experiment { interval_s: i, throughput: t, recovery_s: recovery(i, t), latency_ms: latency(i, t) });
            }
        }
        v
    }

    #[test]
    fn exact_data_gives_its_coefficients_back_with_r_squared_one() {
        let e = grid(|i, t| 4.0 + 0.1 * i + 0.0002 * t + 0.00005 * i * t, |i, t| 80.0 + 900.0 / i + 0.01 * t);
        let r = Model::recovery(&e).unwrap();
        for (got, want) in [r.intercept].iter().chain(&r.coefficients).zip([4.0, 0.1, 0.0002, 0.00005]) {
            assert!((got - want).abs() < 1e-6 * want.abs().max(1.0), "{r:?}");
        }
        assert!(r.fit.r_squared > 0.999_999 && r.fit.rms_residual < 1e-6, "{:?}", r.fit);
        assert!((r.predict(45.0, 10_000.0) - (4.0 + 4.5 + 2.0 + 22.5)).abs() < 1e-6);
        let l = Model::latency(&e).unwrap();
        assert!((l.predict(20.0, 2_000.0) - (80.0 + 45.0 + 20.0)).abs() < 1e-6, "{l:?}");
    }

    #[test]
    fn noise_lowers_r_squared_and_shows_in_the_residuals() {
        // A deterministic ±3 s zig-zag on a recovery time of 10-60 s.
        let mut k = 0;
        let e = grid(
            |i, _| {
                k += 1;
                10.0 + 0.4 * i + if k % 2 == 0 { 3.0 } else { -3.0 }
            },
            |_, _| 100.0,
        );
        let r = Model::recovery(&e).unwrap();
        assert!(r.fit.r_squared < 0.99 && r.fit.r_squared > 0.8, "{:?}", r.fit);
        assert!((r.fit.rms_residual - 3.0).abs() < 1.0, "{:?}", r.fit);
        assert_eq!(r.fit.residuals.len(), e.len());
    }

    #[test]
    fn too_few_or_degenerate_experiments_are_errors_naming_what_is_missing() {
        let e = grid(|i, _| i, |_, _| 1.0);
        let err = Model::recovery(&e[..4]).unwrap_err().to_string();
        assert!(err.contains('4') && err.contains("more than 4"), "{err}");
        // The same interval everywhere: interval and intercept cannot be told apart.
        let same: Vec<Experiment> = e.iter().map(|x| Experiment { interval_s: 30.0, ..*x }).collect();
        let err = Model::recovery(&same).unwrap_err().to_string();
        assert!(err.contains("vary"), "{err}");
        let mut bad = e.clone();
        bad[3].interval_s = 0.0;
        let err = Model::latency(&bad).unwrap_err().to_string();
        assert!(err.contains("interval > 0"), "{err}");
    }
}
