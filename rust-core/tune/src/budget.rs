//! A checkpoint budget: at most a given share of the job's time spent
//! checkpointing (e.g. 0.005, what 0.6 s checkpoints every 120 s spend),
//! placed where it saves the most recovery time. Two parts:
//!
//! - **the price** ([`CheckpointBudget::price`]): with a second of checkpointing
//!   weighed `price` seconds of lost time, the time-lost objective is the
//!   Lagrangian of "least expected recovery time for the checkpoint time
//!   allowed". The price is the smallest ≥ 1 at which the intervals chosen
//!   over the job's load profile (its steady state: how much of the time it
//!   runs at each load) spend no more than the budget on average. A replay
//!   grows with the load and faster than linearly near the job's capacity, so
//!   at that price the intervals are long when the job is calm and short at
//!   its peaks: calm hours pay for the peaks' checkpoints.
//! - **the bank** ([`CheckpointBudget::allows`]): a checkpoint may start only
//!   while the checkpoint time spent so far is within the budget's share of
//!   the time elapsed plus a credit line, so the budget holds whatever the
//!   profile said — over by at most the credit and the checkpoint in flight.
//!   The credit is what the plan borrows at its worst over the profile (its
//!   largest overspend over any stretch of it, the profile taken as a cycle):
//!   peaks that come before the calm hours paying for them are spent as
//!   planned, as long as the profile's promise holds. Without a profile
//!   (planning over the load seen) there is no promise and no credit.

use fragstate_core::{Error, Result};
use serde::Serialize;

/// The highest price the search goes to: at 10⁶ a second of checkpointing outweighs 11 days of
/// lost time, beyond any interval candidate; if the constraints still need more checkpoints than
/// the budget there, the bank holds it.
pub const MAX_PRICE: f64 = 1e6;

/// The share of time checkpoints may take.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CheckpointBudget {
    /// Checkpoint seconds per second of running, in (0, 1].
    pub share: f64,
}

/// The price of checkpoint time a budget sets, and what the plan spends at it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BudgetPrice {
    /// Seconds of lost time one second of checkpointing counts for (≥ 1).
    pub price: f64,
    /// The mean share of time the intervals chosen at this price spend checkpointing over the
    /// load profile (above the budget only at [`MAX_PRICE`]: the constraints need more).
    pub planned_share: f64,
    /// Checkpoint seconds the plan overspends at most over any stretch of the profile (the
    /// profile a cycle; samples `period_s` apart): the bank's credit line.
    pub credit_s: f64,
}

impl CheckpointBudget {
    /// A share in (0, 1].
    pub fn new(share: f64) -> Result<CheckpointBudget> {
        if !(share.is_finite() && share > 0.0 && share <= 1.0) {
            return Err(Error::invalid("checkpoint budget (share of time)", share, "a number in (0, 1], e.g. 0.005 for 0.5 %"));
        }
        Ok(CheckpointBudget { share })
    }

    /// Whether a checkpoint may start `elapsed_s` seconds after the start, `spent_s` checkpoint
    /// seconds having been spent, with `credit_s` of credit.
    pub fn allows(&self, spent_s: f64, elapsed_s: f64, credit_s: f64) -> bool {
        spent_s <= self.share * elapsed_s + credit_s
    }

    /// The smallest price ≥ 1 at which checkpoints of `checkpoint_s` seconds at the intervals
    /// `interval_at(price, load)` chooses spend at most the budget, averaged over `loads` (one
    /// sample per moment of the profile, so that each load counts as long as the job runs at it),
    /// and the credit that plan needs with samples `period_s` apart (`None`: no credit).
    pub fn price(&self, checkpoint_s: f64, loads: &[f64], period_s: Option<f64>, interval_at: impl Fn(f64, f64) -> Result<f64>) -> Result<BudgetPrice> {
        if loads.is_empty() {
            return Err(Error::invalid("load profile (samples)", 0, "at least one sample"));
        }
        if !(checkpoint_s.is_finite() && checkpoint_s >= 0.0) {
            return Err(Error::invalid("checkpoint duration (s)", checkpoint_s, "a finite number ≥ 0"));
        }
        // each profile sample's checkpoint seconds per second at a price, and their mean
        let rates_at = |price: f64| -> Result<Vec<f64>> { loads.iter().map(|&load| Ok(checkpoint_s / interval_at(price, load)?)).collect() };
        let mean = |rates: &[f64]| rates.iter().sum::<f64>() / rates.len() as f64;
        let priced = |price: f64, rates: Vec<f64>| {
            let credit_s = period_s.map_or(0.0, |p| largest_cyclic_sum(&rates.iter().map(|r| (r - self.share) * p).collect::<Vec<_>>()));
            Ok(BudgetPrice { price, planned_share: mean(&rates), credit_s })
        };
        let at_one = rates_at(1.0)?;
        if mean(&at_one) <= self.share {
            return priced(1.0, at_one);
        }
        let at_max = rates_at(MAX_PRICE)?;
        if mean(&at_max) > self.share {
            return priced(MAX_PRICE, at_max);
        }
        // Bisection on the logarithm of the price (the share is a step function of it: the
        // intervals are candidates); `high` always within the budget, `planned` its rates.
        let (mut low, mut high, mut planned) = (0.0_f64, MAX_PRICE.ln(), at_max);
        while high - low > 1e-3 {
            let mid = (low + high) / 2.0;
            let rates = rates_at(mid.exp())?;
            if mean(&rates) <= self.share {
                (high, planned) = (mid, rates);
            } else {
                low = mid;
            }
        }
        priced(high.exp(), planned)
    }
}

/// The largest sum over any run of consecutive values, the values taken as a cycle (a run may
/// wrap from the end to the start), at least 0 (the empty run).
fn largest_cyclic_sum(values: &[f64]) -> f64 {
    // the largest straight run (Kadane), or the whole cycle less its smallest straight run
    let (mut best, mut here, mut worst, mut here_low) = (0.0_f64, 0.0_f64, 0.0_f64, 0.0_f64);
    for &v in values {
        here = (here + v).max(0.0);
        best = best.max(here);
        here_low = (here_low + v).min(0.0);
        worst = worst.min(here_low);
    }
    best.max(values.iter().sum::<f64>() - worst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::{choose, Constraints, Objective};

    /// Young's optimum among 10, 20, …, 300 s for recovery 5 + i·t/(20,000 − t) (the replay of
    /// half an interval at the spare capacity), checkpoints of 0.5 s, one failure in 600 s.
    fn interval_at(price: f64, load: f64) -> Result<f64> {
        let c = Constraints { candidates_s: (1..=30).map(|i| 10.0 * i as f64).collect(), ..Constraints::default() };
        let objective = Objective::TimeLost { checkpoint_s: 0.5, mtbf_s: 600.0, checkpoint_price: price };
        Ok(choose(&c, objective, load, |_, _| 300.0, |i, t| 5.0 + i / 2.0 * t / (20_000.0 - t))?.chosen.interval_s)
    }

    /// A day of 10 calm hours for every 2 at the peak.
    fn profile() -> Vec<f64> {
        let mut loads = vec![2_000.0; 10];
        loads.extend([15_000.0; 2]);
        loads
    }

    #[test]
    fn a_budget_already_met_costs_nothing_extra() {
        let p = CheckpointBudget::new(0.5).unwrap().price(0.5, &profile(), None, interval_at).unwrap();
        assert_eq!(p.price, 1.0);
        assert!(p.planned_share <= 0.5);
    }

    #[test]
    fn the_price_spends_the_budget_and_moves_checkpoints_to_the_peak() {
        let budget = CheckpointBudget::new(0.5 / 120.0).unwrap(); // what fixed 120 s spends
        let p = budget.price(0.5, &profile(), None, interval_at).unwrap();
        assert_eq!(p.credit_s, 0.0, "no period: no credit");
        assert!(p.price > 1.0, "{p:?}");
        assert!(p.planned_share <= budget.share && p.planned_share > 0.8 * budget.share, "{p:?}");
        // a cheaper price would overspend: the smallest price within the budget
        let slightly_cheaper = profile().iter().map(|&t| 0.5 / interval_at(p.price * 0.99, t).unwrap()).sum::<f64>() / 12.0;
        assert!(slightly_cheaper > budget.share, "{slightly_cheaper} at 0.99 × {}", p.price);
        let (calm, peak) = (interval_at(p.price, 2_000.0).unwrap(), interval_at(p.price, 15_000.0).unwrap());
        assert!(calm > 120.0 && peak < 120.0, "calm {calm} s, peak {peak} s");
    }

    #[test]
    fn a_budget_the_constraints_cannot_meet_is_the_highest_price() {
        // only 10 s meets the recovery constraint at the peak: 0.5 s per 10 s there alone is 0.8 %
        let interval = |price: f64, load: f64| if load > 10_000.0 { Ok(10.0) } else { interval_at(price, load) };
        let p = CheckpointBudget::new(0.001).unwrap().price(0.5, &profile(), None, interval).unwrap();
        assert_eq!(p.price, MAX_PRICE);
        assert!(p.planned_share > 0.001);
    }

    #[test]
    fn the_bank_allows_a_checkpoint_only_within_the_share_of_time_elapsed() {
        let b = CheckpointBudget::new(0.01).unwrap();
        assert!(b.allows(0.0, 0.0, 0.0), "the first checkpoint");
        assert!(!b.allows(0.6, 30.0, 0.0));
        assert!(b.allows(0.6, 60.0, 0.0));
        assert!(b.allows(0.6, 30.0, 0.3), "within the credit");
    }

    #[test]
    fn the_credit_is_the_plans_largest_overspend_over_the_profile_as_a_cycle() {
        // each profile hour is a sample 3,600 s long: 10 calm hours save, the 2 peak hours spend
        let budget = CheckpointBudget::new(0.5 / 120.0).unwrap();
        let p = budget.price(0.5, &profile(), Some(3_600.0), interval_at).unwrap();
        let (calm, peak) = (interval_at(p.price, 2_000.0).unwrap(), interval_at(p.price, 15_000.0).unwrap());
        let expected = 2.0 * (0.5 / peak - budget.share) * 3_600.0;
        assert!((p.credit_s - expected).abs() < 1e-9, "{p:?}, calm {calm} s, peak {peak} s");
        assert!(p.credit_s > 0.0);
        // a peak in the middle of a cycle, or split across its ends: the same credit
        let mut wrapped = vec![15_000.0];
        wrapped.extend([2_000.0; 10]);
        wrapped.push(15_000.0);
        let q = budget.price(0.5, &wrapped, Some(3_600.0), interval_at).unwrap();
        assert!((q.credit_s - p.credit_s).abs() < 1e-9, "{q:?} vs {p:?}");
    }

    #[test]
    fn largest_cyclic_sum_takes_the_best_run_even_across_the_ends() {
        assert_eq!(largest_cyclic_sum(&[]), 0.0);
        assert_eq!(largest_cyclic_sum(&[-1.0, -2.0]), 0.0);
        assert_eq!(largest_cyclic_sum(&[1.0, -5.0, 2.0, 3.0, -1.0]), 5.0);
        assert_eq!(largest_cyclic_sum(&[3.0, -5.0, -1.0, 2.0]), 5.0, "2 then 3 across the ends");
    }

    #[test]
    fn bad_budgets_and_profiles_are_named() {
        for bad in [0.0, -0.1, 1.5, f64::NAN] {
            let e = CheckpointBudget::new(bad).unwrap_err().to_string();
            assert!(e.contains("checkpoint budget") && e.contains("(0, 1]"), "{e}");
        }
        let e = CheckpointBudget::new(0.01).unwrap().price(0.5, &[], None, interval_at).unwrap_err().to_string();
        assert!(e.contains("load profile"), "{e}");
    }
}
