//! The choice of checkpoint interval: every candidate's predicted latency
//! and recovery time against their constraints; among those that meet both,
//! the one with the smallest [`Objective`] — Khaos's latency/constraint +
//! recovery/constraint, or the expected share of time lost to checkpoints and
//! recoveries. When none meets both, the one whose worse ratio is smallest,
//! marked as such — the decision never hides a violation.

use fragstate_core::{Error, Result};
use serde::Serialize;

/// Khaos's default constraints and candidates (10, 20, …, 120 s).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Constraints {
    /// Mean end-to-end latency allowed, in milliseconds.
    pub max_latency_ms: f64,
    /// Recovery time allowed, in seconds.
    pub max_recovery_s: f64,
    /// Intervals to choose from, in seconds.
    pub candidates_s: Vec<f64>,
}

impl Default for Constraints {
    fn default() -> Self {
        Constraints { max_latency_ms: 1_000.0, max_recovery_s: 120.0, candidates_s: (1..=12).map(|i| 10.0 * i as f64).collect() }
    }
}

impl Constraints {
    /// Constraints > 0, at least one candidate, every candidate ≥ 1 s (Flink's checkpoint
    /// interval is at least 10 ms, but below a second the checkpoints themselves are the load).
    pub fn validate(&self) -> Result<()> {
        if !(self.max_latency_ms.is_finite() && self.max_latency_ms > 0.0) {
            return Err(Error::invalid("latency constraint (ms)", self.max_latency_ms, "a number > 0"));
        }
        if !(self.max_recovery_s.is_finite() && self.max_recovery_s > 0.0) {
            return Err(Error::invalid("recovery-time constraint (s)", self.max_recovery_s, "a number > 0"));
        }
        if self.candidates_s.is_empty() {
            return Err(Error::invalid("candidate intervals", "none", "at least one interval"));
        }
        if let Some(bad) = self.candidates_s.iter().find(|c| !(c.is_finite() && **c >= 1.0)) {
            return Err(Error::invalid("candidate interval (s)", bad, "≥ 1 s"));
        }
        Ok(())
    }
}

/// What the choice minimises among the candidates that meet both constraints.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Objective {
    /// Khaos's: latency / its constraint + recovery / its constraint. Where checkpoints cost no
    /// latency the models can see (the evaluation's experiments: 293–361 ms at every interval),
    /// the recovery term alone decides and the shortest interval always wins, whatever it costs.
    Khaos,
    /// The expected share of the job's time lost (Young's first-order model of checkpointing):
    /// a checkpoint taking `checkpoint_s` every interval, plus one recovery every `mtbf_s` on
    /// average — `checkpoint_s / interval + recovery / mtbf_s`. A longer interval costs less
    /// checkpointing and, at a high load, much longer recoveries; the balance moves with the load.
    /// Under a checkpoint budget the checkpoint term is weighed `checkpoint_price` times (see
    /// [`crate::budget`]); 1 without one.
    TimeLost {
        /// Seconds one checkpoint takes (measured, see `Controller`).
        checkpoint_s: f64,
        /// Mean seconds between failures.
        mtbf_s: f64,
        /// How many seconds of lost time one second of checkpointing counts for (≥ 1).
        checkpoint_price: f64,
    },
}

impl Objective {
    /// The time lost, a second of checkpointing counting as one (no budget).
    pub fn time_lost(checkpoint_s: f64, mtbf_s: f64) -> Objective {
        Objective::TimeLost { checkpoint_s, mtbf_s, checkpoint_price: 1.0 }
    }

    /// `checkpoint_s` finite and ≥ 0, `mtbf_s` finite and > 0, `checkpoint_price` finite and ≥ 1.
    pub fn validate(&self) -> Result<()> {
        if let Objective::TimeLost { checkpoint_s, mtbf_s, checkpoint_price } = *self {
            if !(checkpoint_s.is_finite() && checkpoint_s >= 0.0) {
                return Err(Error::invalid("checkpoint duration (s)", checkpoint_s, "a finite number ≥ 0"));
            }
            if !(mtbf_s.is_finite() && mtbf_s > 0.0) {
                return Err(Error::invalid("mean time between failures (s)", mtbf_s, "a finite number > 0"));
            }
            if !(checkpoint_price.is_finite() && checkpoint_price >= 1.0) {
                return Err(Error::invalid("checkpoint price", checkpoint_price, "a finite number ≥ 1"));
            }
        }
        Ok(())
    }

    fn score(&self, c: &Constraints, interval_s: f64, latency_ms: f64, recovery_s: f64) -> f64 {
        match *self {
            Objective::Khaos => latency_ms / c.max_latency_ms + recovery_s / c.max_recovery_s,
            Objective::TimeLost { checkpoint_s, mtbf_s, checkpoint_price } => checkpoint_price * checkpoint_s / interval_s + recovery_s / mtbf_s,
        }
    }
}

/// One candidate interval with its predictions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    pub interval_s: f64,
    pub latency_ms: f64,
    pub recovery_s: f64,
    /// The objective's value (smaller is better).
    pub score: f64,
    /// Both predictions positive and within their constraints.
    pub meets_constraints: bool,
}

/// The interval chosen for a throughput, and every candidate considered (for the log and the metrics).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// The load planned for, in input records per second.
    pub throughput: f64,
    pub objective: Objective,
    pub chosen: Candidate,
    pub candidates: Vec<Candidate>,
}

/// Chooses among `c.candidates_s` for `throughput` by `objective`, with
/// `latency_ms(interval, throughput)` and `recovery_s(interval, throughput)` as the models.
/// A prediction ≤ 0 or not finite (a model far outside its experiments) never meets the
/// constraints.
pub fn choose(
    c: &Constraints,
    objective: Objective,
    throughput: f64,
    latency_ms: impl Fn(f64, f64) -> f64,
    recovery_s: impl Fn(f64, f64) -> f64,
) -> Result<Decision> {
    c.validate()?;
    objective.validate()?;
    if !(throughput.is_finite() && throughput >= 0.0) {
        return Err(Error::invalid("throughput", throughput, "a finite number ≥ 0"));
    }
    let candidates: Vec<Candidate> = c
        .candidates_s
        .iter()
        .map(|&i| {
            let (l, r) = (latency_ms(i, throughput), recovery_s(i, throughput));
            let sane = l.is_finite() && r.is_finite() && l > 0.0 && r > 0.0;
            Candidate {
                interval_s: i,
                latency_ms: l,
                recovery_s: r,
                score: objective.score(c, i, l, r),
                meets_constraints: sane && l <= c.max_latency_ms && r <= c.max_recovery_s,
            }
        })
        .collect();
    let best_feasible = candidates.iter().filter(|x| x.meets_constraints).min_by(|a, b| a.score.total_cmp(&b.score));
    let worst_ratio = |x: &Candidate| {
        let ratio = (x.latency_ms / c.max_latency_ms).max(x.recovery_s / c.max_recovery_s);
        if ratio.is_finite() { ratio } else { f64::INFINITY }
    };
    let sane = |x: &&Candidate| x.latency_ms.is_finite() && x.recovery_s.is_finite() && x.latency_ms > 0.0 && x.recovery_s > 0.0;
    // When nothing is feasible: the sane candidate whose worse ratio is smallest; when no
    // prediction is sane (the models far outside their experiments, e.g. at a load never
    // measured), the shortest interval — the least work lost by a failure — since the models
    // say nothing to go by. A negative prediction is never "small".
    let shortest = || candidates.iter().min_by(|a, b| a.interval_s.total_cmp(&b.interval_s));
    let chosen = match best_feasible {
        Some(x) => x.clone(),
        None => candidates
            .iter()
            .filter(sane)
            .min_by(|a, b| worst_ratio(a).total_cmp(&worst_ratio(b)))
            .or_else(shortest)
            .expect("validated: at least one candidate")
            .clone(),
    };
    Ok(Decision { throughput, objective, chosen, candidates })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Latency falls with the interval (less checkpoint overhead), recovery grows with it.
    fn latency(i: f64, t: f64) -> f64 {
        200.0 + 6_000.0 / i + t / 100.0
    }
    fn recovery(i: f64, t: f64) -> f64 {
        5.0 + i * t / 10_000.0
    }

    #[test]
    fn the_feasible_candidate_with_the_smallest_score_is_chosen() {
        let c = Constraints::default();
        let d = choose(&c, Objective::Khaos, 10_000.0, latency, recovery).unwrap();
        assert!(d.chosen.meets_constraints, "{d:?}");
        // 10 s: latency 900 ms, recovery 15 s; 20 s: 600 ms, 25 s; ...; 110 s: 354 ms, 115 s.
        let best = d.candidates.iter().filter(|x| x.meets_constraints).map(|x| x.score).fold(f64::INFINITY, f64::min);
        assert_eq!(d.chosen.score, best);
        assert!(d.candidates.iter().all(|x| x.meets_constraints == (x.latency_ms <= 1_000.0 && x.recovery_s <= 120.0)));
        assert_eq!(d.candidates.len(), 12);
    }

    #[test]
    fn higher_load_moves_the_choice_to_shorter_intervals() {
        let c = Constraints::default();
        let low = choose(&c, Objective::Khaos, 2_000.0, latency, recovery).unwrap();
        let high = choose(&c, Objective::Khaos, 40_000.0, latency, recovery).unwrap();
        assert!(high.chosen.interval_s < low.chosen.interval_s, "{} vs {}", high.chosen.interval_s, low.chosen.interval_s);
    }

    #[test]
    fn when_nothing_meets_both_the_least_bad_is_chosen_and_marked() {
        let c = Constraints { max_recovery_s: 1.0, ..Constraints::default() };
        let d = choose(&c, Objective::Khaos, 10_000.0, latency, recovery).unwrap();
        assert!(!d.chosen.meets_constraints);
        assert!(d.candidates.iter().all(|x| !x.meets_constraints));
        assert_eq!(d.chosen.interval_s, 10.0, "the shortest interval has the smallest recovery ratio: {d:?}");
    }

    #[test]
    fn non_positive_or_infinite_predictions_never_meet_the_constraints() {
        let c = Constraints::default();
        let d = choose(&c, Objective::Khaos, 100.0, |i, _| if i < 50.0 { -5.0 } else { 500.0 }, |i, _| if i > 100.0 { f64::INFINITY } else { 30.0 }).unwrap();
        assert!(d.chosen.meets_constraints);
        assert!((50.0..=100.0).contains(&d.chosen.interval_s), "{d:?}");
    }

    #[test]
    fn a_negative_prediction_is_never_the_least_bad_and_without_a_sane_one_the_shortest_interval_is_chosen() {
        let c = Constraints { max_recovery_s: 1.0, ..Constraints::default() };
        // long intervals predict a negative recovery (a regression far outside its experiments)
        let d = choose(&c, Objective::Khaos, 40_000.0, |_, _| 300.0, |i, _| if i >= 60.0 { -10.0 } else { 5.0 + i }).unwrap();
        assert!(!d.chosen.meets_constraints);
        assert_eq!(d.chosen.interval_s, 10.0, "{d:?}");
        let d = choose(&c, Objective::Khaos, 40_000.0, |_, _| -1.0, |_, _| f64::NAN).unwrap();
        assert_eq!(d.chosen.interval_s, 10.0, "{d:?}");
    }

    #[test]
    fn bad_constraints_are_errors_naming_the_value_and_the_range() {
        let e = choose(&Constraints { candidates_s: vec![10.0, 0.5], ..Constraints::default() }, Objective::Khaos, 1.0, latency, recovery).unwrap_err().to_string();
        assert!(e.contains("0.5") && e.contains("≥ 1 s"), "{e}");
        let e = choose(&Constraints { max_latency_ms: 0.0, ..Constraints::default() }, Objective::Khaos, 1.0, latency, recovery).unwrap_err().to_string();
        assert!(e.contains("latency") && e.contains("> 0"), "{e}");
        let e = choose(&Constraints::default(), Objective::Khaos, f64::NAN, latency, recovery).unwrap_err().to_string();
        assert!(e.contains("throughput"), "{e}");
        let e = choose(&Constraints::default(), Objective::time_lost(1.0, 0.0), 1.0, latency, recovery).unwrap_err().to_string();
        assert!(e.contains("between failures") && e.contains("> 0"), "{e}");
        let e = choose(&Constraints::default(), Objective::time_lost(f64::NAN, 60.0), 1.0, latency, recovery).unwrap_err().to_string();
        assert!(e.contains("checkpoint duration") && e.contains("≥ 0"), "{e}");
    }

    /// Latency the same at every interval (as measured: checkpoints cost no visible latency);
    /// recovery grows with the interval the faster the higher the load (replay of what arrived
    /// since the last checkpoint).
    fn flat_latency(_: f64, _: f64) -> f64 {
        300.0
    }
    fn replay_recovery(i: f64, t: f64) -> f64 {
        6.0 + i / 2.0 * t / 5_000.0
    }

    #[test]
    fn khaos_picks_the_shortest_interval_when_checkpoints_cost_no_latency() {
        let c = Constraints::default();
        for t in [500.0, 5_000.0, 15_000.0] {
            assert_eq!(choose(&c, Objective::Khaos, t, flat_latency, replay_recovery).unwrap().chosen.interval_s, 10.0, "at {t} records/s");
        }
    }

    #[test]
    fn time_lost_lengthens_the_interval_at_low_load_and_shortens_it_at_high_load() {
        let c = Constraints::default();
        let objective = Objective::time_lost(0.6, 3_600.0);
        let at = |t: f64| choose(&c, objective, t, flat_latency, replay_recovery).unwrap().chosen.interval_s;
        // cost = 0.6/i + (6 + i·t/10,000)/3,600, least at i = √(0.6 · 3,600 · 10,000 / t):
        // 208 s at 500/s (beyond the longest candidate), 66 s at 5,000/s, 38 s at 15,000/s.
        assert_eq!(at(500.0), 120.0);
        assert_eq!(at(5_000.0), 70.0);
        assert_eq!(at(15_000.0), 40.0);
    }

    #[test]
    fn time_lost_is_young_s_optimum_among_the_candidates() {
        // recovery 5 + i: cost 1/i + (5 + i)/4,900 is least at i = √4,900 = 70 s.
        let c = Constraints::default();
        let d = choose(&c, Objective::time_lost(1.0, 4_900.0), 1.0, flat_latency, |i, _| 5.0 + i).unwrap();
        assert_eq!(d.chosen.interval_s, 70.0, "{d:?}");
        assert!((d.chosen.score - (1.0 / 70.0 + 75.0 / 4_900.0)).abs() < 1e-12);
        assert_eq!(d.objective, Objective::time_lost(1.0, 4_900.0));
    }

    #[test]
    fn a_higher_checkpoint_price_lengthens_the_interval_by_its_square_root() {
        // recovery 5 + i: cost p/i + (5 + i)/900 is least at i = √(900 p): 30 s at p = 1, 60 s at p = 4.
        let c = Constraints::default();
        let at = |price: f64| {
            let objective = Objective::TimeLost { checkpoint_s: 1.0, mtbf_s: 900.0, checkpoint_price: price };
            choose(&c, objective, 1.0, flat_latency, |i, _| 5.0 + i).unwrap().chosen.interval_s
        };
        assert_eq!(at(1.0), 30.0);
        assert_eq!(at(4.0), 60.0);
        let e = choose(&c, Objective::TimeLost { checkpoint_s: 1.0, mtbf_s: 900.0, checkpoint_price: 0.5 }, 1.0, flat_latency, |i, _| i)
            .unwrap_err()
            .to_string();
        assert!(e.contains("checkpoint price") && e.contains("≥ 1"), "{e}");
    }

    #[test]
    fn time_lost_never_trades_a_constraint_for_cheaper_checkpoints() {
        // Checkpoints so dear that the longest interval would be cheapest, but recoveries
        // beyond 40 s are not allowed: the longest interval that keeps recovery within 40 s.
        let c = Constraints { max_recovery_s: 40.0, ..Constraints::default() };
        let d = choose(&c, Objective::time_lost(30.0, 600.0), 1.0, flat_latency, |i, _| 5.0 + i / 2.0).unwrap();
        assert!(d.chosen.meets_constraints);
        assert_eq!(d.chosen.interval_s, 70.0, "{d:?}");
    }
}
