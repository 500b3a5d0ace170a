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
mod tests {
    use super::*;
    use crate::model::{Experiment, Model};

    /// Models from exact experiments: latency 200 + 6000/i + t/100 ms, recovery 5 + i·t/10,000 s.
    fn models() -> (Model, Model) {
        let mut e = Vec::new();
        for i in [10.0, 30.0, 60.0, 120.0] {
            for t in [1_000.0, 5_000.0, 20_000.0] {
                e.push(Experiment { interval_s: i, throughput: t, latency_ms: 200.0 + 6_000.0 / i + t / 100.0, recovery_s: 5.0 + i * t / 10_000.0 });
            }
        }
        (Model::latency(&e).unwrap(), Model::recovery(&e).unwrap())
    }

    fn controller() -> Controller {
        controller_with(ControllerConfig { history: 20, horizon: 5, decide_every_s: 10.0, ..ControllerConfig::default() })
    }

    /// A controller on [`models`] with the regression's recovery, started at 0.
    fn controller_with(cfg: ControllerConfig) -> Controller {
        let (l, r) = models();
        Controller::new(cfg, l, RecoveryPredictor::Regression(r), 0.0).unwrap()
    }

    /// Polls once a second from `from` for `secs` seconds at `rate` records/s, starting at `records`; the actions.
    fn run(c: &mut Controller, from: u64, secs: u64, rate: u64, records: &mut u64) -> Vec<(u64, Action)> {
        let mut out = Vec::new();
        for s in from..from + secs {
            *records += rate;
            for a in c.observe(s as f64, *records) {
                if a == Action::Checkpoint {
                    c.checkpoint_ended(Some(0.5));
                }
                out.push((s, a));
            }
        }
        out
    }

    #[test]
    fn plans_for_the_load_seen_until_the_history_allows_a_forecast() {
        let mut c = controller();
        assert_eq!(c.interval_s(), 10.0, "the shortest candidate before any sample");
        let mut records = 0;
        let acts = run(&mut c, 1, 130, 2_000, &mut records);
        let plans: Vec<(u64, LoadBasis, f64)> =
            acts.iter().filter_map(|(s, a)| if let Action::Decided(p) = a { Some((*s, p.basis, p.decision.chosen.interval_s)) } else { None }).collect();
        // The first poll reads the count, the second anchors the clock, the third gives a sample;
        // 7 samples (2 lags) allow a forecast at the ninth, which decides at once, then every 10 s.
        // At 2,000 records/s: 60 s scores 320/1000 + 17/120 = 0.462, its neighbours 50 s 0.465
        // and 70 s 0.464, 10 s 0.878.
        assert_eq!(plans[0], (3, LoadBasis::Observed { samples: 1 }, 60.0));
        assert!(matches!(plans[1], (9, LoadBasis::Forecast { .. }, 60.0)), "{plans:?}");
        assert_eq!(plans[2].0, 19);
        assert_eq!(plans.len(), 14);
        let checkpoints: Vec<u64> = acts.iter().filter(|(_, a)| *a == Action::Checkpoint).map(|(s, _)| *s).collect();
        assert_eq!(checkpoints, vec![60, 120], "none at 10 s: the first decision came before it");
    }

    #[test]
    fn before_a_forecast_the_highest_sample_seen_is_planned_for() {
        let mut c = controller_with(ControllerConfig { history: 20, horizon: 5, decide_every_s: 1.0, ..ControllerConfig::default() });
        let mut records = 0;
        let mut acts = run(&mut c, 1, 3, 2_000, &mut records);
        acts.extend(run(&mut c, 4, 2, 8_000, &mut records));
        acts.extend(run(&mut c, 6, 4, 1_000, &mut records));
        let planned: Vec<(LoadBasis, f64)> = acts.iter().filter_map(|(_, a)| if let Action::Decided(p) = a { Some((p.basis, p.decision.throughput)) } else { None }).collect();
        let observed = |samples| LoadBasis::Observed { samples };
        assert_eq!(planned[..6], [(observed(1), 2_000.0), (observed(2), 8_000.0), (observed(3), 8_000.0), (observed(4), 8_000.0), (observed(5), 8_000.0), (observed(6), 8_000.0)]);
        assert!(matches!(planned[6].0, LoadBasis::Forecast { .. }), "{planned:?}");
    }

    #[test]
    fn a_rising_load_shortens_the_interval() {
        let mut c = controller();
        let mut records = 0;
        run(&mut c, 1, 30, 1_000, &mut records);
        let calm = c.interval_s();
        run(&mut c, 31, 30, 30_000, &mut records);
        assert!(c.interval_s() < calm, "{} then {}", calm, c.interval_s());
    }

    #[test]
    fn no_second_checkpoint_while_one_is_in_flight() {
        let mut c = controller();
        let mut n = 0;
        let mut records = 0;
        for s in 1..=100u64 {
            records += 1_000;
            n += c.observe(s as f64, records).iter().filter(|a| **a == Action::Checkpoint).count();
        }
        assert_eq!(n, 1, "never told that the first checkpoint ended");
        c.checkpoint_ended(None);
        records += 1_000;
        assert!(c.observe(300.0, records).contains(&Action::Checkpoint), "due once it ended (the longest candidate is 120 s)");
    }

    #[test]
    fn a_counter_reset_is_a_restart_not_a_negative_rate() {
        let mut c = controller();
        let mut records = 0;
        run(&mut c, 1, 20, 1_000, &mut records);
        let samples = c.throughput.len();
        c.observe(21.0, 500);
        c.observe(22.0, 1_500);
        assert_eq!(c.throughput.len(), samples, "the first change after the reset only anchors the clock");
        c.observe(23.0, 2_500);
        assert_eq!(c.throughput.back(), Some(&1_000.0));
        assert!(c.throughput.iter().all(|t| *t >= 0.0));
    }

    #[test]
    fn samples_just_after_a_restart_count_at_most_as_the_highest_before_it() {
        let mut c = controller_with(ControllerConfig { history: 100, horizon: 5, decide_every_s: 10.0, ..ControllerConfig::default() });
        let mut records = 0;
        run(&mut c, 1, 30, 5_000, &mut records);
        // the restart: the count falls twice (subtasks coming back), then jumps by a million in a second
        c.observe(31.0, 100_000);
        c.observe(32.0, 50_000);
        c.observe(33.0, 55_000);
        c.observe(34.0, 1_055_000);
        c.observe(35.0, 1_060_000);
        assert!(c.throughput.iter().all(|t| *t <= 5_000.0), "{:?}", c.throughput);
        // once AFTER_RESTART_S has passed, a real rise counts
        let mut records = 1_060_000;
        run(&mut c, 36, 60, 8_000, &mut records);
        assert_eq!(c.throughput.back(), Some(&8_000.0));
    }

    #[test]
    fn a_count_refreshed_every_10_s_gives_the_mean_rate_and_silence_gives_zero() {
        let mut c = controller();
        let mut records = 0;
        for s in 1..=45u64 {
            if s % 10 == 0 {
                records += 10 * 3_000;
            }
            c.observe(s as f64, records);
        }
        assert_eq!(c.throughput.iter().copied().collect::<Vec<_>>(), vec![3_000.0; 3], "10 anchors; 10→20, 20→30, 30→40");
        c.observe(100.0, records);
        assert_eq!(c.throughput.back(), Some(&0.0), "60 s without a change");
    }

    #[test]
    fn a_steep_rise_is_planned_for_at_most_a_quarter_above_the_highest_load_seen() {
        let mut c = controller_with(ControllerConfig { history: 20, horizon: 20, decide_every_s: 10.0, ..ControllerConfig::default() });
        let mut records = 0;
        run(&mut c, 1, 10, 1_000, &mut records);
        let mut planned = Vec::new();
        for (k, s) in (11..40).enumerate() {
            let rate = (1_000.0 * 1.15f64.powi(k as i32)) as u64;
            for (_, a) in run(&mut c, s, 1, rate, &mut records) {
                if let Action::Decided(Plan { basis: LoadBasis::Forecast { .. }, decision, .. }) = a {
                    planned.push((decision.throughput, rate as f64));
                }
            }
        }
        // a 15 % rise per second, forecast 20 samples ahead, is many times the last rate: capped
        assert_eq!(planned.len(), 3, "{planned:?}");
        for (plan, seen) in &planned {
            assert!(*plan <= seen * 1.25 + 1e-9 && *plan > *seen, "planned {plan} with {seen} seen");
        }
    }

    #[test]
    fn the_time_lost_objective_weighs_the_mean_of_the_last_checkpoints_measured() {
        let mut c = controller_with(ControllerConfig { history: 20, horizon: 5, decide_every_s: 10.0, mtbf_s: Some(600.0), ..ControllerConfig::default() });
        assert_eq!(c.checkpoint_cost_s(), ASSUMED_CHECKPOINT_S);
        c.checkpoint_ended(None);
        assert_eq!(c.checkpoint_cost_s(), ASSUMED_CHECKPOINT_S, "a failed checkpoint has no duration");
        for d in [9.0, 9.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0] {
            c.checkpoint_ended(Some(d));
        }
        assert_eq!(c.checkpoint_cost_s(), 2.0, "the last 10 only");
        let mut records = 0;
        // the first decision (second 3) comes before the first checkpoint (second 10)
        let acts = run(&mut c, 1, 20, 2_000, &mut records);
        let d = acts.iter().find_map(|(_, a)| if let Action::Decided(p) = a { Some(&p.decision) } else { None }).unwrap();
        assert_eq!(d.objective, Objective::time_lost(2.0, 603.0), "the prior 600 s and 3 s without a failure");
    }

    /// The interval of every decision and the seconds of every checkpoint.
    fn decisions_and_checkpoints(acts: &[(u64, Action)]) -> (Vec<(u64, f64, f64)>, Vec<u64>) {
        let decided = acts
            .iter()
            .filter_map(|(s, a)| match a {
                Action::Decided(p) => Some((*s, p.decision.chosen.interval_s, p.budget.map_or(1.0, |b| b.price))),
                Action::Checkpoint => None,
            })
            .collect();
        (decided, acts.iter().filter(|(_, a)| *a == Action::Checkpoint).map(|(s, _)| *s).collect())
    }

    #[test]
    fn a_checkpoint_budget_prices_checkpoint_time_and_the_bank_holds_it() {
        // At 2,000 records/s the time lost is least at 40–70 s (0.5/i + (5 + 0.2 i)/MTBF, the MTBF
        // growing from 600 s while nothing fails): 0.7–1.25 % of the time in 0.5 s checkpoints.
        // A budget of 0.5 % allows one every 100 s.
        let cfg = |budget| ControllerConfig { history: 20, horizon: 5, decide_every_s: 10.0, mtbf_s: Some(600.0), checkpoint_budget: budget, ..ControllerConfig::default() };
        let mut free = controller_with(cfg(None));
        let mut budgeted = controller_with(cfg(Some(0.005)));
        let (mut r1, mut r2) = (0, 0);
        let (free_decided, free_checkpoints) = decisions_and_checkpoints(&run(&mut free, 1, 1_200, 2_000, &mut r1));
        let (decided, checkpoints) = decisions_and_checkpoints(&run(&mut budgeted, 1, 1_200, 2_000, &mut r2));
        assert!(free_decided.iter().all(|d| d.1 <= 70.0 && d.2 == 1.0), "{free_decided:?}");
        assert!(free.checkpoint_spent_s() > 0.005 * 1_200.0 + 0.5, "{free_checkpoints:?}");
        let (_, interval, price) = *decided.last().unwrap();
        assert!(interval >= 100.0 && price > 1.0, "{decided:?}");
        assert!(budgeted.checkpoint_spent_s() <= 0.005 * 1_200.0 + 0.5, "{} s in {checkpoints:?}", budgeted.checkpoint_spent_s());
        assert!(checkpoints.len() >= 10, "the budget is spent, not hoarded: {checkpoints:?}");
    }

    #[test]
    fn the_bank_holds_a_checkpoint_the_interval_says_is_due() {
        // the decision (the history: 2,000 records/s) prices for 100 s, but a 12 s checkpoint
        // spends the budget of 2,400 s: the next waits for it
        let cfg = ControllerConfig { history: 20, horizon: 5, decide_every_s: 10.0, mtbf_s: Some(600.0), checkpoint_budget: Some(0.005), ..ControllerConfig::default() };
        let mut c = controller_with(cfg);
        let mut records = 0;
        let mut checkpoints = Vec::new();
        for s in 1..=3_000u64 {
            records += 2_000;
            if c.observe(s as f64, records).contains(&Action::Checkpoint) {
                checkpoints.push(s);
                c.checkpoint_ended(Some(12.0));
            }
        }
        assert_eq!(checkpoints.len(), 2, "{checkpoints:?}");
        assert!(checkpoints[1] >= 2_400, "{checkpoints:?}");
    }

    #[test]
    fn the_credit_line_lets_a_peak_that_comes_first_spend_as_planned() {
        // the profile's 2 peak minutes (20,000 records/s, 40 s planned) are paid for by its 10 calm
        // ones; a run that starts at the peak has saved nothing yet
        let mut profile = vec![1_000.0; 10];
        profile.extend([20_000.0; 2]);
        let constraints = Constraints { candidates_s: (1..=30).map(|i| 10.0 * i as f64).collect(), ..Constraints::default() };
        let peak_checkpoints = |period_s: f64| {
            let cfg = ControllerConfig {
                constraints: constraints.clone(),
                history: 20,
                horizon: 5,
                decide_every_s: 10.0,
                mtbf_s: Some(600.0),
                checkpoint_budget: Some(0.005),
                load_profile: profile.clone(),
                load_profile_period_s: period_s,
                ..ControllerConfig::default()
            };
            let mut c = controller_with(cfg);
            let mut records = 0;
            let (_, checkpoints) = decisions_and_checkpoints(&run(&mut c, 1, 150, 20_000, &mut records));
            (checkpoints, c.budget_credit_s)
        };
        let (with_credit, credit) = peak_checkpoints(60.0);
        let (without, no_credit) = peak_checkpoints(1e-6);
        assert!(credit > 0.5 && no_credit < 1e-6, "{credit} {no_credit}");
        assert!(with_credit.len() >= 3, "{with_credit:?}");
        assert!(without.len() < with_credit.len(), "{without:?} against {with_credit:?}");
    }

    #[test]
    fn a_load_profile_moves_the_budget_from_calm_hours_to_the_peaks() {
        // A day of 10 calm hours (1,000 records/s) for every 2 at 20,000. Over that profile the
        // budget is spent at about 160 s when calm and 40 s at the peak (recovery 5 + 2 i there,
        // 120 s at most: 57 s is the longest allowed).
        let mut profile = vec![1_000.0; 10];
        profile.extend([20_000.0; 2]);
        let constraints = Constraints { candidates_s: (1..=30).map(|i| 10.0 * i as f64).collect(), ..Constraints::default() };
        let cfg = ControllerConfig { constraints, history: 20, horizon: 5, decide_every_s: 10.0, mtbf_s: Some(600.0), checkpoint_budget: Some(0.005), load_profile: profile, ..ControllerConfig::default() };
        let mut c = controller_with(cfg);
        let mut records = 0;
        let (calm, _) = decisions_and_checkpoints(&run(&mut c, 1, 300, 1_000, &mut records));
        let (peak, _) = decisions_and_checkpoints(&run(&mut c, 301, 300, 20_000, &mut records));
        let (calm_interval, peak_interval) = (calm.last().unwrap().1, peak.last().unwrap().1);
        assert!(calm_interval > 120.0 && peak_interval < 60.0, "calm {calm:?}, peak {peak:?}");
        assert!(calm.iter().chain(&peak).skip(1).all(|d| d.2 > 1.0), "calm {calm:?}, peak {peak:?}");
    }

    #[test]
    fn the_mtbf_learns_from_the_failures_flink_counts_after_the_start() {
        let (l, r) = models();
        let cfg = ControllerConfig { mtbf_s: Some(160.0), ..ControllerConfig::default() };
        let mut c = Controller::new(cfg, l, RecoveryPredictor::Regression(r), 100.0).unwrap();
        assert_eq!(c.mtbf_s(100.0), Some(160.0), "the prior before anything is observed");
        assert_eq!(c.mtbf_s(260.0), Some(320.0), "no failure in 160 s: (160 + 160) / 1");
        assert!(!c.restarts_seen(101.0, 5));
        assert_eq!(c.failures(), 0, "restarts before the start are the baseline");
        assert!(c.restarts_seen(150.0, 6));
        assert!(!c.restarts_seen(151.0, 7));
        assert!(!c.restarts_seen(175.0, 9));
        assert_eq!(c.failures(), 1, "restarts 1 s and then 24 s apart: one failure");
        c.restarts_seen(206.0, 9);
        c.restarts_seen(207.0, 10);
        c.restarts_seen(300.0, 11);
        assert_eq!(c.failures(), 3);
        assert_eq!(c.mtbf_s(500.0), Some(140.0), "(160 + 400) / (1 + 3)");
        c.restarts_seen(400.0, 1);
        assert_eq!(c.failures(), 3, "a new JobMaster counting from 0 is a new baseline");
        c.restarts_seen(450.0, 2);
        assert_eq!(c.failures(), 4);
        assert_eq!(controller_with(ControllerConfig::default()).mtbf_s(1e6), None, "Khaos's objective has no MTBF");
    }

    #[test]
    fn bad_settings_are_named() {
        let (l, r) = models();
        let cfg = ControllerConfig { history: 4, ..ControllerConfig::default() };
        let e = Controller::new(cfg, l, RecoveryPredictor::Regression(r), 0.0).unwrap_err().to_string();
        assert!(e.contains("history") && e.contains("≥ 7"), "{e}");
        let (l, r) = models();
        let cfg = ControllerConfig { mtbf_s: Some(-1.0), ..ControllerConfig::default() };
        let e = Controller::new(cfg, l, RecoveryPredictor::Regression(r), 0.0).unwrap_err().to_string();
        assert!(e.contains("between failures") && e.contains("-1"), "{e}");
        let (l, r) = models();
        let cfg = ControllerConfig { checkpoint_budget: Some(0.01), ..ControllerConfig::default() };
        let e = Controller::new(cfg, l, RecoveryPredictor::Regression(r), 0.0).unwrap_err().to_string();
        assert!(e.contains("checkpoint budget") && e.contains("mean time between failures"), "{e}");
        let (l, r) = models();
        let cfg = ControllerConfig { mtbf_s: Some(600.0), checkpoint_budget: Some(2.0), ..ControllerConfig::default() };
        let e = Controller::new(cfg, l, RecoveryPredictor::Regression(r), 0.0).unwrap_err().to_string();
        assert!(e.contains("checkpoint budget") && e.contains("(0, 1]"), "{e}");
        let (l, r) = models();
        let cfg = ControllerConfig { mtbf_s: Some(600.0), checkpoint_budget: Some(0.01), load_profile: vec![5.0, f64::NAN], ..ControllerConfig::default() };
        let e = Controller::new(cfg, l, RecoveryPredictor::Regression(r), 0.0).unwrap_err().to_string();
        assert!(e.contains("load profile"), "{e}");
        let (l, r) = models();
        let cfg = ControllerConfig { load_profile_period_s: 0.0, ..ControllerConfig::default() };
        let e = Controller::new(cfg, l, RecoveryPredictor::Regression(r), 0.0).unwrap_err().to_string();
        assert!(e.contains("load profile period"), "{e}");
    }
}
