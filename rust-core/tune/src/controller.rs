//! The controller as a state machine without I/O: fed the job's cumulative
//! input record count at each poll and the outcome of each checkpoint it
//! asked for, it answers with what to do — trigger a checkpoint now, or a new
//! decision to log. The adapter (`fragstate tune`) only polls Flink and
//! carries the actions out, so every timing rule here is tested from numbers.

use std::collections::VecDeque;

use fragstate_core::{Error, Result};
use serde::Serialize;

use crate::budget::{BudgetPrice, CheckpointBudget};
use crate::choose::{choose, Constraints, Decision, Objective};
use crate::forecast::{forecast_throughput, samples_needed};
use crate::model::Model;
use crate::predict::RecoveryFigures;

/// Where the recovery-time prediction comes from.
#[derive(Clone, Debug)]
pub enum RecoveryPredictor {
    /// The regression fitted to failure experiments.
    Regression(Model),
    /// fragstate's restore figures, for a failure at a random moment (half an interval lost).
    Fragstate(RecoveryFigures),
}

impl RecoveryPredictor {
    pub fn predict(&self, interval_s: f64, throughput: f64) -> f64 {
        match self {
            RecoveryPredictor::Regression(m) => m.predict(interval_s, throughput),
            RecoveryPredictor::Fragstate(f) => f.expected_recovery_s(interval_s, throughput),
        }
    }
}

/// How the controller runs.
#[derive(Clone, Debug, Serialize)]
pub struct ControllerConfig {
    pub constraints: Constraints,
    /// Seconds between decisions.
    pub decide_every_s: f64,
    /// Throughput samples kept for the forecast (one per change of the record count).
    pub history: usize,
    /// Lags of the ARIMA(p,1,0) forecast.
    pub lags: usize,
    /// Samples ahead the forecast looks; the decision plans for the highest load forecast in them.
    pub horizon: usize,
    /// Mean seconds between failures expected before any is seen (the prior of [`Controller::mtbf_s`]).
    /// With it, the choice minimises the expected share of time lost to checkpoints and
    /// recoveries ([`Objective::TimeLost`], weighing the checkpoint durations measured and the
    /// failures seen); without it, Khaos's objective.
    pub mtbf_s: Option<f64>,
    /// The share of time checkpoints may take ([`crate::budget`]; needs `mtbf_s`): checkpoint
    /// time is priced so that the plan spends the budget over the load profile, and no
    /// checkpoint starts while the time spent is over the budget's share of the time elapsed.
    pub checkpoint_budget: Option<f64>,
    /// The job's load over a representative stretch (input records per second, any sampling
    /// rate; e.g. Khaos's steady state over a day) that the budget's price plans over; empty:
    /// the throughput seen since the start.
    #[serde(skip)]
    pub load_profile: Vec<f64>,
    /// Seconds between the load profile's samples, in the job's time: the bank's credit line
    /// ([`crate::budget`]) is the plan's largest overspend over the profile in seconds.
    pub load_profile_period_s: f64,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            constraints: Constraints::default(),
            decide_every_s: 30.0,
            history: 300,
            lags: 2,
            horizon: 30,
            mtbf_s: None,
            checkpoint_budget: None,
            load_profile: Vec::new(),
            load_profile_period_s: 1.0,
        }
    }
}

impl ControllerConfig {
    pub fn validate(&self) -> Result<()> {
        self.constraints.validate()?;
        if !(self.decide_every_s.is_finite() && self.decide_every_s >= 1.0) {
            return Err(Error::invalid("decision period (s)", self.decide_every_s, "≥ 1 s"));
        }
        let need = samples_needed(self.lags);
        if self.history < need {
            return Err(Error::invalid("throughput history (samples)", self.history, format!("≥ {need} (2 × lags + 3)")));
        }
        if self.horizon == 0 {
            return Err(Error::invalid("forecast horizon (polls)", 0, "≥ 1"));
        }
        if let Some(mtbf_s) = self.mtbf_s {
            Objective::time_lost(ASSUMED_CHECKPOINT_S, mtbf_s).validate()?;
        }
        if let Some(share) = self.checkpoint_budget {
            CheckpointBudget::new(share)?;
            if self.mtbf_s.is_none() {
                return Err(Error::invalid("checkpoint budget", share, "set together with the mean time between failures (it prices checkpoint time in the time-lost objective)"));
            }
        }
        if !(self.load_profile_period_s.is_finite() && self.load_profile_period_s > 0.0) {
            return Err(Error::invalid("load profile period (s)", self.load_profile_period_s, "a finite number > 0"));
        }
        if let Some(bad) = self.load_profile.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
            return Err(Error::invalid("load profile sample (records/s)", bad, "a finite number ≥ 0"));
        }
        Ok(())
    }
}

/// Seconds without a change of the record count after which the job counts as idle (a 0 sample).
pub const STALE_AFTER_S: f64 = 60.0;

/// Seconds after the record count falls (a restart) during which a throughput sample counts at
/// most as the highest one before it. In the 2026-12-05 evaluation a sample just after a restart
/// read 81,000 records/s at a peak of 14,000 (the sources' catch-up, or counters of the old and
/// the new attempts summed), and the time-lost controller planned for 101,000.
pub const AFTER_RESTART_S: f64 = 60.0;

/// Restarts closer than this to the previous one count as one failure: one TaskManager killed in
/// the 2026-12-04 evaluation failed two regions 1.1 s apart, and Flink counted two restarts.
pub const SAME_FAILURE_WITHIN_S: f64 = 30.0;

/// The checkpoint duration the time-lost objective weighs until one has been measured.
pub const ASSUMED_CHECKPOINT_S: f64 = 1.0;

/// Completed checkpoints whose mean duration the time-lost objective weighs.
const CHECKPOINT_DURATIONS_KEPT: usize = 10;

/// How far above the highest load seen the decision may plan. An ARIMA forecast extrapolates a
/// rise: in the 2026-12-04 evaluation it planned for 21,900–81,000 records/s at peaks of 15,000,
/// which pushed the regression's predictions for short intervals below zero.
pub const FORECAST_HEADROOM: f64 = 0.25;

/// What the adapter should do.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Action {
    /// Trigger a checkpoint now (none of ours is in flight and the interval has passed).
    Checkpoint,
    /// A new decision (log it; the interval it chose applies from now on).
    Decided(Plan),
}

/// A decision, what its load came from and, under a checkpoint budget, the price it set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub basis: LoadBasis,
    pub decision: Decision,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetPrice>,
}

/// Where the load a decision planned for came from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBasis {
    /// The highest of the few samples seen, before there are enough for a forecast.
    Observed { samples: usize },
    /// The ARIMA forecast's highest value over the horizon, capped by [`FORECAST_HEADROOM`].
    Forecast { lags: usize },
}

/// The controller's state between polls.
#[derive(Debug)]
pub struct Controller {
    cfg: ControllerConfig,
    latency: Model,
    recovery: RecoveryPredictor,
    /// Input records per second, one per poll, oldest first.
    throughput: VecDeque<f64>,
    /// When the record count last changed, and to what.
    last_change: Option<(f64, u64)>,
    /// Whether `last_change` is a moment the count changed (not just the first poll).
    anchored: bool,
    /// When the record count last fell, and the highest sample before the first fall of that
    /// window ([`AFTER_RESTART_S`]).
    restart: Option<(f64, f64)>,
    last_decision_s: Option<f64>,
    /// Whether the last decision planned from a forecast (the first one that can is not delayed).
    last_forecast: bool,
    interval_s: f64,
    /// When the last checkpoint we triggered (or the start) was; the next is due an interval later.
    last_checkpoint_s: f64,
    in_flight: bool,
    /// When the controller started (the failures seen are counted from then).
    start_s: f64,
    /// Job failures since the start, the last restart total the adapter reported (Flink's
    /// count), and when that total last rose.
    failures: u64,
    last_restart_total: Option<u64>,
    last_restart_s: Option<f64>,
    /// Durations of the last completed checkpoints, oldest first.
    checkpoint_durations: VecDeque<f64>,
    /// Seconds of all completed checkpoints since the start.
    checkpoint_spent_s: f64,
    budget: Option<CheckpointBudget>,
    /// The bank's credit line the last budget decision set.
    budget_credit_s: f64,
}

impl Controller {
    /// A controller starting at `now_s` with the smallest candidate interval (the safe side for
    /// recovery) until the first throughput sample, then planning for the highest load seen until
    /// it has the history for a forecast.
    pub fn new(cfg: ControllerConfig, latency: Model, recovery: RecoveryPredictor, now_s: f64) -> Result<Controller> {
        cfg.validate()?;
        let interval_s = cfg.constraints.candidates_s.iter().copied().fold(f64::INFINITY, f64::min);
        let budget = cfg.checkpoint_budget.map(CheckpointBudget::new).transpose()?;
        Ok(Controller {
            cfg,
            latency,
            recovery,
            throughput: VecDeque::new(),
            last_change: None,
            anchored: false,
            restart: None,
            last_decision_s: None,
            last_forecast: false,
            interval_s,
            last_checkpoint_s: now_s,
            in_flight: false,
            start_s: now_s,
            failures: 0,
            last_restart_total: None,
            last_restart_s: None,
            checkpoint_durations: VecDeque::new(),
            checkpoint_spent_s: 0.0,
            budget,
            budget_credit_s: 0.0,
        })
    }

    /// The interval in force.
    pub fn interval_s(&self) -> f64 {
        self.interval_s
    }

    /// The last throughput sample (input records per second), if any.
    pub fn last_throughput(&self) -> Option<f64> {
        self.throughput.back().copied()
    }

    /// Seconds of all the checkpoints completed since the start.
    pub fn checkpoint_spent_s(&self) -> f64 {
        self.checkpoint_spent_s
    }

    /// Job failures since the controller started.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// The job's total of restarts at `now_s` as Flink counts them (`numRestarts`). The first
    /// report is the baseline; a total that goes down (a new JobMaster counts from 0) is a new
    /// baseline. Restarts within [`SAME_FAILURE_WITHIN_S`] of the previous one are the same failure.
    /// Returns whether this report counted a new failure.
    pub fn restarts_seen(&mut self, now_s: f64, total: u64) -> bool {
        let mut new_failure = false;
        if self.last_restart_total.is_some_and(|last| total > last) {
            new_failure = self.last_restart_s.is_none_or(|t| now_s - t > SAME_FAILURE_WITHIN_S);
            self.failures += new_failure as u64;
            self.last_restart_s = Some(now_s);
        }
        self.last_restart_total = Some(total);
        new_failure
    }

    /// The mean time between failures at `now_s`: the reciprocal of the posterior mean failure
    /// rate under a gamma prior worth one failure in `--mtbf` seconds, i.e.
    /// (prior + time observed) / (1 + failures seen). With none seen it grows with the time
    /// observed; after many it tends to the observed mean. `None` without a prior.
    pub fn mtbf_s(&self, now_s: f64) -> Option<f64> {
        self.cfg.mtbf_s.map(|prior| (prior + (now_s - self.start_s).max(0.0)) / (1 + self.failures) as f64)
    }

    /// A poll at `now_s` (seconds, monotonic) that read `records` input records in all.
    ///
    /// Flink's REST API refreshes job metrics every `metrics.fetcher.update-interval`
    /// (10 s by default), so most polls see the count unchanged: a sample is the rate
    /// between two changes of the count, or 0 after [`STALE_AFTER_S`] without one.
    pub fn observe(&mut self, now_s: f64, records: u64) -> Vec<Action> {
        match self.last_change {
            // The job restarted and its counters with it (Flink's numRestarts counts the failures:
            // a restart's counters can go down several times while its subtasks come back).
            Some((_, r)) if records < r => {
                self.last_change = Some((now_s, records));
                self.anchored = false;
                // the ceiling comes from before the first fall of a restart (its subtasks come back one by one)
                let ceiling = match self.restart {
                    Some((at, ceiling)) if now_s - at < AFTER_RESTART_S => ceiling,
                    _ => self.throughput.iter().copied().fold(0.0, f64::max),
                };
                self.restart = Some((now_s, ceiling));
            }
            // The first change after the start (or a restart) only anchors the clock: when the
            // count changed before the first poll is unknown.
            Some((_, r)) if records > r && !self.anchored => {
                self.last_change = Some((now_s, records));
                self.anchored = true;
            }
            Some((t, r)) if now_s > t && (records > r || now_s - t >= STALE_AFTER_S) => {
                let mut sample = (records - r) as f64 / (now_s - t);
                // nothing seen before the restart (a ceiling of 0) gives nothing to cap by
                if let Some((_, ceiling)) = self.restart.filter(|&(at, ceiling)| now_s - at < AFTER_RESTART_S && ceiling > 0.0) {
                    sample = sample.min(ceiling);
                }
                push_bounded(&mut self.throughput, sample, self.cfg.history);
                self.last_change = Some((now_s, records));
            }
            Some(_) => {}
            None => self.last_change = Some((now_s, records)),
        }
        let mut actions = Vec::new();
        let decision_due = self.last_decision_s.is_none_or(|t| now_s - t >= self.cfg.decide_every_s) || self.can_forecast() && !self.last_forecast;
        if decision_due && !self.throughput.is_empty() {
            if let Some(plan) = self.decide(now_s) {
                self.last_decision_s = Some(now_s);
                self.last_forecast = matches!(plan.basis, LoadBasis::Forecast { .. });
                self.interval_s = plan.decision.chosen.interval_s;
                self.budget_credit_s = plan.budget.map_or(0.0, |b| b.credit_s);
                actions.push(Action::Decided(plan));
            }
        }
        let within_budget = self.budget.is_none_or(|b| b.allows(self.checkpoint_spent_s, now_s - self.start_s, self.budget_credit_s));
        if !self.in_flight && now_s - self.last_checkpoint_s >= self.interval_s && within_budget {
            self.in_flight = true;
            self.last_checkpoint_s = now_s;
            actions.push(Action::Checkpoint);
        }
        actions
    }

    /// The checkpoint last asked for has ended: completed after `duration_s` seconds, or
    /// failed (`None`). The next may be triggered.
    pub fn checkpoint_ended(&mut self, duration_s: Option<f64>) {
        self.in_flight = false;
        if let Some(d) = duration_s.filter(|d| d.is_finite() && *d >= 0.0) {
            push_bounded(&mut self.checkpoint_durations, d, CHECKPOINT_DURATIONS_KEPT);
            self.checkpoint_spent_s += d;
        }
    }

    /// The mean duration of the last completed checkpoints ([`ASSUMED_CHECKPOINT_S`] before any).
    pub fn checkpoint_cost_s(&self) -> f64 {
        match self.checkpoint_durations.len() {
            0 => ASSUMED_CHECKPOINT_S,
            n => self.checkpoint_durations.iter().sum::<f64>() / n as f64,
        }
    }

    /// Khaos's objective without an MTBF; else the time lost, checkpoint time at the price the
    /// budget sets over `history` (or the load profile given) if there is one.
    fn objective(&self, now_s: f64, history: &[f64]) -> Result<(Objective, Option<BudgetPrice>)> {
        let Some(mtbf_s) = self.mtbf_s(now_s) else {
            return Ok((Objective::Khaos, None));
        };
        let checkpoint_s = self.checkpoint_cost_s();
        let Some(budget) = self.budget else {
            return Ok((Objective::time_lost(checkpoint_s, mtbf_s), None));
        };
        // the profile promises the calm that pays back a credit; the load seen promises nothing
        let (loads, period_s) = if self.cfg.load_profile.is_empty() { (history, None) } else { (&self.cfg.load_profile[..], Some(self.cfg.load_profile_period_s)) };
        let price = budget.price(checkpoint_s, loads, period_s, |checkpoint_price, load| {
            let objective = Objective::TimeLost { checkpoint_s, mtbf_s, checkpoint_price };
            Ok(self.choose(objective, load)?.chosen.interval_s)
        })?;
        Ok((Objective::TimeLost { checkpoint_s, mtbf_s, checkpoint_price: price.price }, Some(price)))
    }

    fn choose(&self, objective: Objective, load: f64) -> Result<Decision> {
        choose(&self.cfg.constraints, objective, load, |i, t| self.latency.predict(i, t), |i, t| self.recovery.predict(i, t))
    }

    /// Whether the history holds the samples the forecast needs.
    fn can_forecast(&self) -> bool {
        self.throughput.len() >= samples_needed(self.cfg.lags)
    }

    fn decide(&self, now_s: f64) -> Option<Plan> {
        let history: Vec<f64> = self.throughput.iter().copied().collect();
        let seen = history.iter().copied().fold(0.0, f64::max);
        let (basis, load) = if self.can_forecast() {
            let forecast = forecast_throughput(&history, self.cfg.lags, self.cfg.horizon).ok()?;
            // Plan for the busiest moment ahead, but not far beyond any load seen; a forecast
            // below zero means no load.
            (LoadBasis::Forecast { lags: forecast.lags }, forecast.values.iter().copied().fold(0.0, f64::max).min(seen * (1.0 + FORECAST_HEADROOM)))
        } else {
            // Holding the shortest interval until a forecast is possible cost the 2026-12-04
            // evaluation 7 checkpoints in its first 75 s.
            (LoadBasis::Observed { samples: history.len() }, seen)
        };
        let (objective, budget) = self.objective(now_s, &history).ok()?;
        let decision = self.choose(objective, load).ok()?;
        Some(Plan { basis, decision, budget })
    }
}

/// Appends `value`, dropping the oldest so that at most `keep` remain.
fn push_bounded(samples: &mut VecDeque<f64>, value: f64, keep: usize) {
    samples.push_back(value);
    if samples.len() > keep {
        samples.pop_front();
    }
}

#[cfg(test)]
mod tests;
