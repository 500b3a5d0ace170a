//! The controller's timing rules, from numbers.

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
