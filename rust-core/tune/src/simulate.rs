//! An evaluation run replayed in numbers, without Flink: the job's input
//! rate second by second, a failure at each kill moment, and a checkpoint
//! policy — Flink's own periodic trigger at a fixed interval, or the
//! [`Controller`] itself, fed what its adapter reads from Flink. Two real runs
//! on a noisy 2-core machine cannot say how a policy fares over the draws of
//! the failure moments; this can, over hundreds of draws, for the policies
//! compared side by side on the same kills (and it is calibrated against the
//! real runs: the same kill moments, measured against predicted).
//!
//! The job is the one fragstate's figures predict recovery with
//! ([`RecoveryFigures`]), as a fluid: records arrive at the input rate and
//! are processed in order at up to `max_throughput`; a checkpoint records the
//! position processed when it is triggered and counts once it completes
//! (`checkpoint_s` later, unless a kill comes first); a kill stops
//! processing for the figures' downtime and rewinds to the last completed
//! checkpoint. The latency of a second is the harness's (`LatencySeries`):
//! the steady latency plus how long the next window whose output has not
//! been seen has been closable — windows fire when the watermark passes
//! their end, so a kill costs latency only once the next window was due,
//! and output already seen once does not count again. A recovery ends when
//! the job has worked off its backlog (within 250 ms). Not modelled: the
//! latency a checkpoint itself adds, and any slowdown of the job near its
//! capacity other than the backlog.
//!
//! Flink's periodic trigger starts after a random delay up to the interval,
//! at the job's start and again after every restore (`CheckpointCoordinator`
//! re-phases it when the job restarts), then fires every interval.

use fragstate_core::sample::Rng;
use fragstate_core::{Error, Result};
use serde::Serialize;

use crate::controller::{Action, Controller};
use crate::predict::RecoveryFigures;

/// Simulation steps per second.
const STEPS_PER_S: usize = 10;
/// Seconds between the adapter's polls of the job (`fragstate tune --poll-every`'s default).
const POLL_S: usize = 1;
/// Seconds between refreshes of the job metrics Flink's REST API serves (`metrics.fetcher.update-interval`).
const METRICS_REFRESH_S: usize = 10;
/// Seconds from which a run's latency counts (`RunTuneEval.COUNT_FROM_S`: the job's first windows settle).
pub const COUNT_FROM_S: usize = 60;
/// A recovery ends when the latency is back within this of the steady latency.
const RECOVERED_WITHIN_MS: f64 = 250.0;

/// The job and its QoS constraints.
#[derive(Clone, Debug)]
pub struct SimJob {
    /// Input records per second, one per second of the run.
    pub input: Vec<f64>,
    /// Downtime after a failure and the rate a backlog is worked off at.
    pub figures: RecoveryFigures,
    /// Seconds from a checkpoint's trigger to its completion.
    pub checkpoint_s: f64,
    /// The latency without a backlog (the job's windows and pipeline), ms.
    pub steady_latency_ms: f64,
    /// The job's tumbling windows, s (Traffic Monitoring: 10).
    pub window_s: f64,
    /// The watermark's bounded out-of-orderness, s (Traffic Monitoring: 2).
    pub out_of_orderness_s: f64,
    /// The latency constraint, ms.
    pub max_latency_ms: f64,
    /// The recovery-time constraint, s.
    pub max_recovery_s: f64,
}

impl SimJob {
    /// Every figure in range, the input non-empty.
    pub fn validate(&self) -> Result<()> {
        self.figures.validate()?;
        if self.input.is_empty() || self.input.iter().any(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(Error::invalid("input rate", format!("{} samples", self.input.len()), "at least one sample, each a finite number ≥ 0"));
        }
        for (name, v) in [("checkpoint_s", self.checkpoint_s), ("steady_latency_ms", self.steady_latency_ms)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(name, v, "a finite number ≥ 0"));
            }
        }
        if !(self.out_of_orderness_s.is_finite() && self.out_of_orderness_s >= 0.0) {
            return Err(Error::invalid("out_of_orderness_s", self.out_of_orderness_s, "a finite number ≥ 0"));
        }
        for (name, v) in [("max_latency_ms", self.max_latency_ms), ("max_recovery_s", self.max_recovery_s), ("window_s", self.window_s)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(name, v, "a finite number > 0"));
            }
        }
        Ok(())
    }

    /// Seconds the run lasts.
    pub fn duration_s(&self) -> usize {
        self.input.len()
    }

    /// How long, at `now`, the next window whose output has not been seen has been closable
    /// (0 if it is not yet), when the newest record processed is input of moment `front_s`: a
    /// window fires once the watermark (the input's time less the out-of-orderness) passes its
    /// end, so a job that stops keeps its latency until the next window was due.
    fn staleness_s(&self, front_s: f64, now: f64) -> f64 {
        let next_end = ((front_s - self.out_of_orderness_s) / self.window_s).floor() * self.window_s + self.window_s;
        (now - (next_end + self.out_of_orderness_s)).max(0.0)
    }
}

/// Who triggers the checkpoints.
#[derive(Debug)]
pub enum Policy {
    /// Flink's periodic trigger at this interval.
    Fixed { interval_s: f64 },
    /// The controller, polled as `fragstate tune` polls it.
    Controller(Box<Controller>),
}

/// What a simulated run measured, in the harness's terms.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimOutcome {
    /// Checkpoints completed.
    pub checkpoints: u32,
    /// Seconds they took in all.
    pub checkpoint_s: f64,
    /// For each kill: seconds since the trigger of the last checkpoint completed before it (since
    /// the start without one) — the work it lost.
    pub lost_s: Vec<f64>,
    /// For each kill: seconds until the latency was back within 250 ms of steady (until the next
    /// kill or the end when it was not).
    pub recovery_s: Vec<f64>,
    /// For each kill: seconds above the latency constraint from it to the next kill or the end.
    pub seconds_above_per_kill: Vec<u32>,
    /// Seconds (from [`COUNT_FROM_S`]) whose latency is above the constraint.
    pub seconds_above: u32,
    /// Recoveries longer than the constraint, or not back before the next kill or the end.
    pub recoveries_above: u32,
}

impl SimOutcome {
    /// The harness's QoS violations: seconds above the latency constraint plus recoveries above theirs.
    pub fn violations(&self) -> u32 {
        self.seconds_above + self.recoveries_above
    }
}

/// `count` kill moments (seconds) at least `min_gap_s` apart within `[from_s, to_s]`, uniform among
/// such sets — the harness's draw (`LatencySeries.killSeconds`: sorted uniform draws in the
/// freedom left, the i-th shifted by i × the gap), from this crate's generator.
pub fn kill_moments(seed: u64, count: usize, from_s: usize, to_s: usize, min_gap_s: usize) -> Result<Vec<f64>> {
    let span = count.saturating_sub(1) * min_gap_s;
    if to_s < from_s || span > to_s - from_s {
        return Err(Error::invalid("kills", count, format!("at most {} kills at least {min_gap_s} s apart between second {from_s} and {to_s}", (to_s.saturating_sub(from_s)) / min_gap_s.max(1) + 1)));
    }
    let freedom = to_s - from_s - span;
    let mut rng = Rng::new(seed);
    let mut drawn: Vec<usize> = (0..count).map(|_| rng.below(freedom + 1)).collect();
    drawn.sort_unstable();
    Ok(drawn.iter().enumerate().map(|(i, d)| (from_s + d + i * min_gap_s) as f64).collect())
}

/// The arrival curve: cumulative input records at each step boundary, and when a position arrived.
struct Arrivals {
    cumulative: Vec<f64>,
}

impl Arrivals {
    fn total(&self) -> f64 {
        *self.cumulative.last().expect("starts with 0")
    }

    /// The moment (s) the record at `position` arrived, interpolated within its step.
    fn time_of(&self, position: f64) -> f64 {
        let i = self.cumulative.partition_point(|&c| c < position).max(1);
        let (before, after) = (self.cumulative[i - 1], self.cumulative[i.min(self.cumulative.len() - 1)]);
        let within = if after > before { (position - before) / (after - before) } else { 1.0 };
        (i - 1) as f64 / STEPS_PER_S as f64 + within / STEPS_PER_S as f64
    }
}

/// Runs `job` under `policy` with a kill at each of `kills_s` (seconds, ascending); `seed` draws
/// the phases of Flink's periodic trigger.
pub fn simulate(job: &SimJob, mut policy: Policy, kills_s: &[f64], seed: u64) -> Result<SimOutcome> {
    job.validate()?;
    if let Policy::Fixed { interval_s } = policy {
        if !(interval_s.is_finite() && interval_s > 0.0) {
            return Err(Error::invalid("fixed interval (s)", interval_s, "a finite number > 0"));
        }
    }
    let mut rng = Rng::new(seed);
    let dt = 1.0 / STEPS_PER_S as f64;
    let downtime = job.figures.downtime_s();
    let rate = job.figures.max_throughput;
    let mut arrivals = Arrivals { cumulative: vec![0.0] };
    let mut out = SimOutcome::default();
    // positions in the input: processed so far, and the furthest whose output was ever seen
    let (mut position, mut front) = (0.0_f64, 0.0_f64);
    let mut up_at = 0.0;
    // Flink's count of input records since the last (re)start, what its REST API shows, its restarts
    let (mut records, mut shown, mut restarts) = (0.0_f64, 0_u64, 0_u64);
    let mut in_flight: Option<(f64, f64)> = None;
    let mut last_completed: Option<(f64, f64)> = None;
    let mut next_periodic = match &policy {
        Policy::Fixed { interval_s } => rng.unit() * interval_s,
        Policy::Controller(_) => f64::INFINITY,
    };
    let mut next_kill = 0;
    let mut recovering: Option<f64> = None;
    for step in 0..job.duration_s() * STEPS_PER_S {
        let t = step as f64 * dt;
        if kills_s.get(next_kill).is_some_and(|&k| k <= t) {
            next_kill += 1;
            if in_flight.take().is_some() {
                if let Policy::Controller(c) = &mut policy {
                    c.checkpoint_ended(None);
                }
            }
            if let Some(killed) = recovering.replace(t) {
                out.recovery_s.push(t - killed);
                out.recoveries_above += 1;
            }
            out.seconds_above_per_kill.push(0);
            out.lost_s.push(t - last_completed.map_or(0.0, |(at, _)| at));
            position = last_completed.map_or(0.0, |(_, p)| p);
            up_at = t + downtime;
            restarts += 1;
            records = 0.0;
            if let Policy::Fixed { interval_s } = policy {
                next_periodic = up_at + rng.unit() * interval_s;
            }
        }
        let up = t >= up_at;
        if let Some((at, at_position)) = in_flight {
            if t >= at + job.checkpoint_s {
                in_flight = None;
                last_completed = Some((at, at_position));
                out.checkpoints += 1;
                out.checkpoint_s += job.checkpoint_s;
                if let Policy::Controller(c) = &mut policy {
                    c.checkpoint_ended(Some(job.checkpoint_s));
                }
            }
        }
        match &mut policy {
            Policy::Fixed { interval_s } => {
                if up && t >= next_periodic {
                    next_periodic += *interval_s;
                    if in_flight.is_none() {
                        in_flight = Some((t, position));
                    }
                }
            }
            Policy::Controller(c) if step % (POLL_S * STEPS_PER_S) == 0 => {
                if step % (METRICS_REFRESH_S * STEPS_PER_S) == 0 && up {
                    shown = records as u64;
                }
                c.restarts_seen(t, restarts);
                // a restarting job answers without metrics
                if up {
                    for action in c.observe(t, shown) {
                        if action == Action::Checkpoint {
                            in_flight = Some((t, position));
                        }
                    }
                }
            }
            Policy::Controller(_) => {}
        }
        let second = step / STEPS_PER_S;
        arrivals.cumulative.push(arrivals.total() + job.input[second] * dt);
        if up {
            // caught up exactly (not by a sum of steps that float rounding leaves a record short)
            let backlog = arrivals.total() - position;
            let done = (rate * dt).min(backlog);
            records += done;
            position = if done == backlog { arrivals.total() } else { position + done };
            front = front.max(position);
        }
        let now = t + dt;
        // the input time of the newest record processed: now when there is no backlog
        let front_time = if front >= arrivals.total() { now } else { arrivals.time_of(front) };
        let latency_ms = job.steady_latency_ms + job.staleness_s(front_time, now) * 1000.0;
        if let Some(killed) = recovering {
            if up && (now - front_time) * 1000.0 <= RECOVERED_WITHIN_MS {
                let took = now - killed;
                out.recovery_s.push(took);
                out.recoveries_above += (took > job.max_recovery_s) as u32;
                recovering = None;
            }
        }
        // each whole second counts with the latency at its end
        if (step + 1) % STEPS_PER_S == 0 && second >= COUNT_FROM_S && latency_ms > job.max_latency_ms {
            out.seconds_above += 1;
            if let Some(n) = out.seconds_above_per_kill.last_mut() {
                *n += 1;
            }
        }
    }
    if let Some(killed) = recovering {
        out.recovery_s.push(job.duration_s() as f64 - killed);
        out.recoveries_above += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(rate: f64, seconds: usize) -> SimJob {
        SimJob {
            input: vec![rate; seconds],
            // down 5 s, 10,000 records/s worked off
            figures: RecoveryFigures { detection_s: 1.0, restart_s: 4.0, state_bytes: 0.0, restore_bytes_per_s: 1.0, max_throughput: 10_000.0 },
            checkpoint_s: 0.5,
            steady_latency_ms: 300.0,
            window_s: 10.0,
            out_of_orderness_s: 2.0,
            max_latency_ms: 1_000.0,
            max_recovery_s: 120.0,
        }
    }

    #[test]
    fn without_failures_a_fixed_interval_checkpoints_every_interval_and_nothing_is_violated() {
        let out = simulate(&job(1_000.0, 600), Policy::Fixed { interval_s: 60.0 }, &[], 1).unwrap();
        // the first after a random delay up to 60 s, then every 60 s: 9 or 10 in 600 s
        assert!((9..=10).contains(&out.checkpoints), "{out:?}");
        assert!((out.checkpoint_s - out.checkpoints as f64 * 0.5).abs() < 1e-9);
        assert_eq!(out.violations(), 0);
    }

    #[test]
    fn a_kill_loses_the_work_since_the_last_checkpoint_and_recovers_as_the_figures_predict() {
        let j = job(5_000.0, 900);
        let out = simulate(&j, Policy::Fixed { interval_s: 100.0 }, &[300.0], 3).unwrap();
        let lost = out.lost_s[0];
        assert!(lost > 0.0 && lost <= 100.0, "{out:?}");
        let expected = j.figures.recovery_s(lost, 5_000.0);
        assert!((out.recovery_s[0] - expected).abs() < 1.0, "measured {} s, the figures predict {expected} s ({out:?})", out.recovery_s[0]);
        // latency above 1 s (0.7 s of waiting) from the kill until the backlog is nearly drained
        let above = out.seconds_above as f64;
        assert!(above > j.figures.downtime_s() && above < expected + 1.0, "{out:?}");
        assert_eq!(out.seconds_above_per_kill, vec![out.seconds_above]);
    }

    #[test]
    fn an_outage_over_before_the_next_window_is_due_costs_no_latency() {
        let j = job(100.0, 300);
        // input up to 25 s processed: the window ending at 30 s is closable at 32 s
        assert_eq!(j.staleness_s(25.0, 31.0), 0.0);
        assert!((j.staleness_s(25.0, 35.0) - 3.0).abs() < 1e-9);
        // down 5 s from 122.5 s (the window ending at 120 s fired at 122 s) with 10 s lost at most
        // (100 records/s, 10,000/s worked off): back before 132 s
        let early = simulate(&j, Policy::Fixed { interval_s: 10.0 }, &[122.5], 1).unwrap();
        assert_eq!(early.seconds_above, 0, "{early:?}");
        // the same outage from 129 s runs past 132 s
        let late = simulate(&j, Policy::Fixed { interval_s: 10.0 }, &[129.0], 1).unwrap();
        assert!((1..=3).contains(&late.seconds_above), "{late:?}");
    }

    #[test]
    fn the_work_lost_is_what_the_last_completed_checkpoint_left() {
        // checkpoints every 100 s; a kill at 450 s loses less than 100 s, and more the later it
        // comes after a checkpoint
        let j = job(1_000.0, 900);
        let out = simulate(&j, Policy::Fixed { interval_s: 100.0 }, &[450.0, 700.0], 5).unwrap();
        assert_eq!(out.lost_s.len(), 2);
        for lost in &out.lost_s {
            assert!(*lost > 0.0 && *lost <= 100.0 + 1e-9, "{out:?}");
        }
        // a checkpoint still in flight at a kill does not count
        let j = SimJob { checkpoint_s: 50.0, ..job(1_000.0, 400) };
        let out = simulate(&j, Policy::Fixed { interval_s: 60.0 }, &[], 7).unwrap();
        assert!(out.checkpoints >= 1);
        let never = simulate(&j, Policy::Fixed { interval_s: 60.0 }, &(1..40).map(|i| i as f64 * 10.0 + 0.05).collect::<Vec<_>>(), 7).unwrap();
        assert_eq!(never.checkpoints, 0, "{never:?}");
    }

    #[test]
    fn a_recovery_not_back_before_the_next_kill_is_a_violation() {
        // 9,000 records/s against 10,000 of capacity: 100 s lost takes ~1,000 s to work off
        let j = job(9_000.0, 600);
        let out = simulate(&j, Policy::Fixed { interval_s: 10_000.0 }, &[200.0, 400.0], 1).unwrap();
        assert_eq!(out.recovery_s.len(), 2);
        assert_eq!(out.recoveries_above, 2, "{out:?}");
        assert_eq!(out.violations(), out.seconds_above + 2);
    }

    #[test]
    fn kill_moments_are_spaced_within_the_window_and_follow_the_seed() {
        for seed in 0..50 {
            let k = kill_moments(seed, 5, 90, 810, 90).unwrap();
            assert_eq!(k.len(), 5);
            assert!(k[0] >= 90.0 && k[4] <= 810.0, "{k:?}");
            assert!(k.windows(2).all(|w| w[1] - w[0] >= 90.0), "{k:?}");
            assert_eq!(k, kill_moments(seed, 5, 90, 810, 90).unwrap());
        }
        assert_ne!(kill_moments(1, 5, 90, 810, 90).unwrap(), kill_moments(2, 5, 90, 810, 90).unwrap());
        let e = kill_moments(1, 10, 90, 810, 90).unwrap_err().to_string();
        assert!(e.contains("at most 9 kills"), "{e}");
    }

    #[test]
    fn the_controller_is_driven_as_its_adapter_drives_it() {
        use crate::choose::Constraints;
        use crate::controller::{ControllerConfig, RecoveryPredictor};
        use crate::model::{Experiment, Model};
        let j = job(4_000.0, 600);
        let experiments: Vec<Experiment> = [(10.0, 1_000.0), (60.0, 1_000.0), (10.0, 8_000.0), (60.0, 8_000.0), (30.0, 4_000.0)]
            .iter()
            .map(|&(interval_s, throughput)| Experiment { interval_s, throughput, latency_ms: 300.0 + throughput / 100.0, recovery_s: 5.0 + interval_s * throughput / 20_000.0 })
            .collect();
        let cfg = ControllerConfig {
            constraints: Constraints { candidates_s: vec![20.0, 40.0], ..Constraints::default() },
            mtbf_s: Some(120.0),
            ..ControllerConfig::default()
        };
        let ctl = Controller::new(cfg, Model::latency(&experiments).unwrap(), RecoveryPredictor::Fragstate(j.figures), 0.0).unwrap();
        let out = simulate(&j, Policy::Controller(Box::new(ctl)), &[300.0], 1).unwrap();
        // it checkpoints every 20 or 40 s once it has seen the load: 600 s hold 14–30 of them
        assert!((14..=30).contains(&out.checkpoints), "{out:?}");
        assert!(out.lost_s[0] <= 40.0 + 1.0, "{out:?}");
    }

    #[test]
    fn bad_jobs_are_named() {
        let e = simulate(&SimJob { input: Vec::new(), ..job(1.0, 1) }, Policy::Fixed { interval_s: 10.0 }, &[], 1).unwrap_err().to_string();
        assert!(e.contains("input rate"), "{e}");
        let e = simulate(&SimJob { max_latency_ms: 0.0, ..job(1.0, 10) }, Policy::Fixed { interval_s: 10.0 }, &[], 1).unwrap_err().to_string();
        assert!(e.contains("max_latency_ms"), "{e}");
    }
}
