//! `fragstate tune --simulate INPUT`: evaluation runs replayed in numbers
//! (`fragstate_tune::simulate`) — the controller as the other options
//! configure it and Flink's periodic trigger at each fixed interval, every
//! policy facing the same kills, over many seeded draws of them. One JSON
//! line per run and one per policy (medians, and for the controller how often
//! it had fewer violations than each fixed interval on the same kills).

use std::path::{Path, PathBuf};

use clap::Args;
use fragstate_core::{Error, Result};
use fragstate_tune::{kill_moments, simulate, ControllerConfig, Controller, Model, Policy, RecoveryFigures, RecoveryPredictor, SimJob, SimOutcome};
use serde_json::json;

use super::tune::read_json;
use crate::bench::percentile;

/// Kills come from this second on, at least [`KILL_GAP_S`] apart, and not in the last
/// [`KILL_TAIL_S`] (at most half the run): the harness's window (`TuneEvalPlan`).
const KILL_FROM_S: usize = 90;
const KILL_GAP_S: usize = 90;
const KILL_TAIL_S: usize = 150;

#[derive(Args)]
pub(crate) struct SimulateArgs {
    /// Do not run: replay evaluation runs in numbers. This file is the job's input rate, a JSON
    /// array of records per second for each second of a run (e.g. the `input_events_per_s`
    /// column of an evaluation run's latency.csv). The controller as the other options configure
    /// it and Flink's periodic trigger at each `--simulate-fixed` interval face the same kills;
    /// the job is modelled by `--figures` (needed). Prints each run and each policy's medians as
    /// JSON lines.
    #[arg(long, requires = "figures")]
    pub(crate) simulate: Option<PathBuf>,
    /// Kills per simulated run, drawn as the evaluation harness draws them (from second 90, at
    /// least 90 s apart, none in the last 150 s or half of the run).
    #[arg(long, default_value_t = 5, requires = "simulate")]
    simulate_kills: usize,
    /// Seeded draws of the kill moments (seeds 1 to N).
    #[arg(long, default_value_t = 100, requires = "simulate")]
    simulate_seeds: u64,
    /// These kill moments (seconds, comma-separated) instead of drawn ones, e.g. a real run's to
    /// compare with what it measured.
    #[arg(long, value_delimiter = ',', requires = "simulate")]
    simulate_kills_at: Vec<f64>,
    /// Fixed intervals (seconds, comma-separated) run beside the controller.
    #[arg(long, value_delimiter = ',', default_value = "10,30,60,120", requires = "simulate")]
    simulate_fixed: Vec<f64>,
    /// Seconds each checkpoint takes (the evaluation's measured 0.4–0.7 s).
    #[arg(long, default_value_t = 0.6, requires = "simulate")]
    simulate_checkpoint_s: f64,
    /// The job's latency without a backlog, ms (the evaluation's 320–390 ms).
    #[arg(long, default_value_t = 350.0, requires = "simulate")]
    simulate_steady_latency_ms: f64,
    /// Records per second the simulated job works a backlog off at (default: the figures'
    /// `max_throughput`, which is what the controller believes).
    #[arg(long, requires = "simulate")]
    simulate_max_throughput: Option<f64>,
    /// The job's tumbling windows, s (Traffic Monitoring's 10).
    #[arg(long, default_value_t = 10.0, requires = "simulate")]
    simulate_window_s: f64,
    /// The watermark's bounded out-of-orderness, s (Traffic Monitoring's 2).
    #[arg(long, default_value_t = 2.0, requires = "simulate")]
    simulate_out_of_orderness_s: f64,
}

/// A policy's runs, one per draw of the kills.
struct PolicyRuns {
    name: String,
    runs: Vec<SimOutcome>,
}

pub(crate) fn simulate_runs(a: &SimulateArgs, input: &Path, cfg: &ControllerConfig, latency: &Model, recovery: &RecoveryPredictor, figures: RecoveryFigures) -> Result<()> {
    let job = SimJob {
        input: read_json(input, "input rate")?,
        figures: RecoveryFigures { max_throughput: a.simulate_max_throughput.unwrap_or(figures.max_throughput), ..figures },
        checkpoint_s: a.simulate_checkpoint_s,
        steady_latency_ms: a.simulate_steady_latency_ms,
        window_s: a.simulate_window_s,
        out_of_orderness_s: a.simulate_out_of_orderness_s,
        max_latency_ms: cfg.constraints.max_latency_ms,
        max_recovery_s: cfg.constraints.max_recovery_s,
    };
    job.validate()?;
    let draws: Vec<(u64, Vec<f64>)> = if a.simulate_kills_at.is_empty() {
        let seconds = job.duration_s();
        let to = KILL_FROM_S.max(seconds - KILL_TAIL_S.min(seconds / 2));
        (1..=a.simulate_seeds).map(|seed| Ok((seed, kill_moments(seed, a.simulate_kills, KILL_FROM_S, to, KILL_GAP_S)?))).collect::<Result<_>>()?
    } else {
        if a.simulate_kills_at.windows(2).any(|w| w[1] < w[0]) || a.simulate_kills_at.iter().any(|k| !(k.is_finite() && *k >= 0.0)) {
            return Err(Error::invalid("--simulate-kills-at", format!("{:?}", a.simulate_kills_at), "seconds ≥ 0 in ascending order"));
        }
        (1..=a.simulate_seeds).map(|seed| (seed, a.simulate_kills_at.clone())).collect()
    };
    let controller_name = match cfg.checkpoint_budget {
        Some(share) => format!("controller-budget:{share}"),
        None => "controller".to_string(),
    };
    let mut policies: Vec<PolicyRuns> = std::iter::once(controller_name).chain(a.simulate_fixed.iter().map(|i| format!("fixed:{i}")))
        .map(|name| PolicyRuns { name, runs: Vec::new() })
        .collect();
    let started = std::time::Instant::now();
    for (n, (seed, kills)) in draws.iter().enumerate() {
        for (p, policy) in policies.iter_mut().enumerate() {
            let run = if p == 0 {
                let ctl = Controller::new(cfg.clone(), latency.clone(), recovery.clone(), 0.0)?;
                simulate(&job, Policy::Controller(Box::new(ctl)), kills, *seed)?
            } else {
                simulate(&job, Policy::Fixed { interval_s: a.simulate_fixed[p - 1] }, kills, *seed)?
            };
            println!("{}", json!({"event": "simulated run", "policy": policy.name, "seed": seed, "kills_s": kills, "violations": run.violations(), "outcome": run}));
            policy.runs.push(run);
        }
        if (n + 1) % 10 == 0 {
            eprintln!("fragstate tune --simulate: {} of {} draws in {:.1} s", n + 1, draws.len(), started.elapsed().as_secs_f64());
        }
    }
    let controller = &policies[0];
    for policy in &policies {
        let mut line = summary(policy);
        if policy.name != controller.name {
            // paired: the same kills and seed
            let pairs = controller.runs.iter().zip(&policy.runs);
            let fewer = pairs.clone().filter(|(c, f)| c.violations() < f.violations()).count();
            let more = pairs.filter(|(c, f)| c.violations() > f.violations()).count();
            line["controller_fewer_violations_share"] = json!(fewer as f64 / policy.runs.len() as f64);
            line["controller_more_violations_share"] = json!(more as f64 / policy.runs.len() as f64);
        }
        println!("{line}");
    }
    Ok(())
}

/// A policy's medians (nearest rank) and means over its runs.
fn summary(p: &PolicyRuns) -> serde_json::Value {
    let sorted = |f: &dyn Fn(&SimOutcome) -> f64| {
        let mut v: Vec<f64> = p.runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let violations = sorted(&|r| r.violations() as f64);
    let checkpoint_s = sorted(&|r| r.checkpoint_s);
    let lost: Vec<f64> = p.runs.iter().flat_map(|r| r.lost_s.iter().copied()).collect();
    let runs = p.runs.len() as f64;
    json!({"event": "simulated policy", "policy": p.name, "runs": p.runs.len(),
        "violations_median": percentile(&violations, 50), "violations_p90": percentile(&violations, 90),
        "violations_mean": violations.iter().sum::<f64>() / runs,
        "seconds_above_mean": p.runs.iter().map(|r| r.seconds_above as f64).sum::<f64>() / runs,
        "recoveries_above_mean": p.runs.iter().map(|r| r.recoveries_above as f64).sum::<f64>() / runs,
        "checkpoints_median": percentile(&sorted(&|r| r.checkpoints as f64), 50),
        "checkpoint_s_median": percentile(&checkpoint_s, 50),
        "lost_s_mean": lost.iter().sum::<f64>() / lost.len().max(1) as f64})
}
