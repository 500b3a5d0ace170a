//! `fragstate tune`: the checkpoint-interval controller (issue 15) beside a
//! running Flink job. It fits the latency and recovery-time models to the
//! failure experiments given, then polls the job's input record count,
//! forecasts the load, chooses the interval and triggers each checkpoint
//! through Flink's REST API (run the job with a long configured interval: it
//! is the fallback when the controller stops). Every model, decision and
//! checkpoint is one JSON line on stdout; with `--metrics-listen` they are
//! Prometheus metrics too.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use fragstate_core::{Error, Result};
use fragstate_tune::metrics::{Registry, CONTENT_TYPE};
use fragstate_tune::{encode_metrics, Action, Constraints, Controller, ControllerConfig, Experiment, Model, RecoveryFigures, RecoveryPredictor, TuneMetrics};
use serde_json::json;

use crate::args::parse_secs;
use crate::flink_rest::{CheckpointStatus, FlinkRest};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum RecoveryFrom {
    /// The regression fitted to the failure experiments.
    Experiments,
    /// fragstate's restore figures (`--figures`).
    Fragstate,
}

#[derive(Args)]
pub(crate) struct TuneArgs {
    /// The JobManager's REST endpoint.
    #[arg(long, default_value = "http://localhost:8081")]
    flink: String,
    /// The job to control (default: the one running job).
    #[arg(long)]
    job: Option<String>,
    /// Failure experiments: a JSON array of {interval_s, throughput, latency_ms, recovery_s}.
    #[arg(long)]
    experiments: PathBuf,
    /// What predicts the recovery time (default: fragstate when `--figures` is given — its
    /// predictions were the closer ones in the evaluation — else the experiments' regression).
    #[arg(long, value_enum)]
    recovery: Option<RecoveryFrom>,
    /// fragstate's figures for `--recovery fragstate`: a JSON object {detection_s, restart_s,
    /// state_bytes, restore_bytes_per_s, max_throughput}.
    #[arg(long, required_if_eq("recovery", "fragstate"))]
    figures: Option<PathBuf>,
    /// Mean end-to-end latency allowed, in milliseconds.
    #[arg(long, default_value_t = 1_000.0)]
    max_latency_ms: f64,
    /// Recovery time allowed, in seconds.
    #[arg(long, default_value_t = 120.0)]
    max_recovery_s: f64,
    /// Mean seconds between failures of the job (e.g. 86400 for one a day). With it, the
    /// interval chosen among those meeting both constraints is the one that loses the least time
    /// to checkpoints (their measured durations) and recoveries (the predicted ones, one per
    /// MTBF); without it, Khaos's objective (latency/constraint + recovery/constraint), which
    /// picks the shortest interval whenever checkpoints cost no measurable latency. This is the
    /// prior: the MTBF weighed is (this + seconds running) / (1 + failures since the start), a
    /// failure being Flink's restarts less than 30 s apart, so the job's own failures take over
    /// as they accumulate.
    #[arg(long, value_parser = parse_secs)]
    mtbf: Option<Duration>,
    /// The share of time checkpoints may take, e.g. 0.005 for 0.5 % (what 0.6 s checkpoints every
    /// 120 s spend); needs `--mtbf`. Checkpoint time is then priced so that the intervals chosen
    /// over the job's load (`--load-profile`, else the load seen so far) spend the budget: long
    /// intervals when the job is calm, short ones at its peaks. No checkpoint starts while the
    /// checkpoint time spent exceeds this share of the time since the start (the budget holds
    /// to within one checkpoint even where the constraints ask for more).
    #[arg(long, requires = "mtbf")]
    checkpoint_budget: Option<f64>,
    /// The job's load over a representative stretch for `--checkpoint-budget`: a JSON array of
    /// input records per second, one per moment (any fixed sampling rate; e.g. a day of the
    /// job's steady state). Only how long the job runs at each load matters.
    #[arg(long, requires = "checkpoint_budget")]
    load_profile: Option<PathBuf>,
    /// Seconds between the load profile's samples, in the job's time. With a profile the bank
    /// lends what the plan overspends at its worst over the profile (a peak before the calm
    /// hours that pay for it); without one there is no credit.
    #[arg(long, default_value = "1", value_parser = parse_secs, requires = "load_profile")]
    load_profile_period: Duration,
    /// Candidate intervals in seconds, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40,50,60,70,80,90,100,110,120")]
    candidates: Vec<f64>,
    /// Seconds between decisions.
    #[arg(long, default_value = "30", value_parser = parse_secs)]
    decide_every: Duration,
    /// Seconds between polls of the job.
    #[arg(long, default_value = "1", value_parser = parse_secs)]
    poll_every: Duration,
    /// Lags of the ARIMA(p,1,0) throughput forecast.
    #[arg(long, default_value_t = 2)]
    lags: usize,
    /// Throughput samples the forecast is fitted to (one per change of the job's record count,
    /// which Flink's REST API refreshes about every 10 s).
    #[arg(long, default_value_t = 300)]
    history: usize,
    /// Samples ahead the decision plans for (the busiest forecast one counts).
    #[arg(long, default_value_t = 30)]
    horizon: usize,
    /// Serve the decisions and actions as Prometheus metrics (OpenMetrics text, any path) on
    /// this address, e.g. 0.0.0.0:9250; port 0 picks a free one (the `metrics` line names it).
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    /// Stop after this many seconds (default: until interrupted).
    #[arg(long, value_parser = parse_secs)]
    seconds: Option<Duration>,
    /// Do not run: predict the recovery time of each measured failure in this file (a JSON
    /// array of {interval_s, throughput, recovery_s}) with the regression fitted to
    /// `--experiments` and, with `--figures`, with fragstate's figures; print each prediction
    /// and the error of both as JSON lines.
    #[arg(long)]
    predict: Option<PathBuf>,
    #[command(flatten)]
    simulate: super::tune_simulate::SimulateArgs,
}

/// A measured failure to predict (`--predict`).
#[derive(serde::Deserialize)]
struct MeasuredRecovery {
    interval_s: f64,
    throughput: f64,
    recovery_s: f64,
}

/// `--predict`: both predictors against measured recoveries, with their RMS and mean absolute errors.
fn compare_predictions(experiments: &[Experiment], figures: Option<RecoveryFigures>, measured: &[MeasuredRecovery]) -> Result<()> {
    let regression = Model::recovery(experiments)?;
    let mut errors: Vec<(&str, Vec<f64>)> = vec![("regression", Vec::new()), ("fragstate", Vec::new())];
    for m in measured {
        let r = regression.predict(m.interval_s, m.throughput);
        let f = figures.map(|f| f.expected_recovery_s(m.interval_s, m.throughput));
        errors[0].1.push(r - m.recovery_s);
        if let Some(f) = f {
            errors[1].1.push(f - m.recovery_s);
        }
        println!("{}", json!({"event": "prediction", "interval_s": m.interval_s, "throughput": m.throughput,
            "measured_s": m.recovery_s, "regression_s": r, "fragstate_s": f}));
    }
    for (name, e) in errors.iter().filter(|(_, e)| !e.is_empty()) {
        let n = e.len() as f64;
        let rms = (e.iter().map(|x| x * x).sum::<f64>() / n).sqrt();
        let mae = e.iter().map(|x| x.abs()).sum::<f64>() / n;
        println!("{}", json!({"event": "prediction error", "predictor": name, "failures": e.len(), "rms_s": rms, "mean_abs_s": mae}));
    }
    Ok(())
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &std::path::Path, what: &str) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(format!("read {what} {}", path.display()), e))?;
    serde_json::from_str(&text).map_err(|e| Error::format(format!("{what} {}", path.display()), e.to_string()))
}

fn read_figures(path: &std::path::Path) -> Result<RecoveryFigures> {
    let f: RecoveryFigures = read_json(path, "fragstate figures")?;
    f.validate()?;
    Ok(f)
}

/// The controller's configuration and models, as the options give them.
fn controller_parts(a: &TuneArgs, experiments: &[Experiment]) -> Result<(ControllerConfig, Model, RecoveryPredictor)> {
    let latency = Model::latency(experiments)?;
    let recovery_from = a.recovery.unwrap_or(if a.figures.is_some() { RecoveryFrom::Fragstate } else { RecoveryFrom::Experiments });
    let recovery = match recovery_from {
        RecoveryFrom::Experiments => RecoveryPredictor::Regression(Model::recovery(experiments)?),
        RecoveryFrom::Fragstate => {
            RecoveryPredictor::Fragstate(read_figures(a.figures.as_ref().expect("clap requires --figures"))?)
        }
    };
    let cfg = ControllerConfig {
        constraints: Constraints { max_latency_ms: a.max_latency_ms, max_recovery_s: a.max_recovery_s, candidates_s: a.candidates.clone() },
        decide_every_s: a.decide_every.as_secs_f64(),
        history: a.history,
        lags: a.lags,
        horizon: a.horizon,
        mtbf_s: a.mtbf.map(|d| d.as_secs_f64()),
        checkpoint_budget: a.checkpoint_budget,
        load_profile: match &a.load_profile {
            Some(path) => read_json(path, "load profile")?,
            None => Vec::new(),
        },
        load_profile_period_s: a.load_profile_period.as_secs_f64(),
    };
    Ok((cfg, latency, recovery))
}

pub(crate) fn tune(a: TuneArgs) -> Result<()> {
    let experiments: Vec<Experiment> = read_json(&a.experiments, "failure experiments")?;
    if let Some(path) = &a.predict {
        let measured: Vec<MeasuredRecovery> = read_json(path, "measured recoveries")?;
        let figures = a.figures.as_deref().map(read_figures).transpose()?;
        return compare_predictions(&experiments, figures, &measured);
    }
    let (cfg, latency, recovery) = controller_parts(&a, &experiments)?;
    if let Some(input) = &a.simulate.simulate {
        // the job is modelled by fragstate's figures whatever predicts the controller's recoveries
        let figures = read_figures(a.figures.as_ref().expect("clap requires --figures with --simulate"))?;
        return super::tune_simulate::simulate_runs(&a.simulate, input, &cfg, &latency, &recovery, figures);
    }
    let recovery_model = match &recovery {
        RecoveryPredictor::Regression(m) => json!({"from": "experiments", "model": m}),
        RecoveryPredictor::Fragstate(f) => json!({"from": "fragstate", "figures": f}),
    };
    let mut ctl = Controller::new(cfg.clone(), latency.clone(), recovery, 0.0)?;
    println!("{}", json!({"event": "models", "experiments": experiments.len(), "latency": latency, "recovery": recovery_model, "config": cfg,
        "load_profile_samples": cfg.load_profile.len()}));
    let (metrics, registry) = TuneMetrics::new(&cfg.constraints, ctl.interval_s());
    if let Some(addr) = a.metrics_listen {
        let bound = serve_metrics(addr, Arc::new(registry))?;
        println!("{}", json!({"event": "metrics", "listen": bound.to_string()}));
    }

    let rest = FlinkRest::new(&a.flink, Duration::from_secs(10))?;
    let job = match &a.job {
        Some(j) => j.clone(),
        None => rest.running_job()?,
    };
    let start = Instant::now();
    let mut pending: Option<(String, f64)> = None;
    let mut restarts_unreadable = false;
    while a.seconds.is_none_or(|s| start.elapsed() < s) {
        let now = start.elapsed().as_secs_f64();
        match rest.source_records(&job) {
            Ok(records) => {
                for action in ctl.observe(now, records) {
                    match action {
                        Action::Decided(plan) => {
                            metrics.decided(&plan.decision);
                            let mut line = json!({"event": "decision", "t": now, "basis": plan.basis, "decision": plan.decision});
                            if let Some(budget) = plan.budget {
                                line["budget"] = json!({"price": budget.price, "planned_share": budget.planned_share, "credit_s": budget.credit_s,
                                    "checkpoint_spent_s": ctl.checkpoint_spent_s(), "share_spent": ctl.checkpoint_spent_s() / now.max(1.0)});
                            }
                            println!("{line}");
                        }
                        Action::Checkpoint => {
                            metrics.checkpoint_triggered();
                            match rest.trigger_checkpoint(&job) {
                                Ok(request) => pending = Some((request, now)),
                                Err(e) => {
                                    eprintln!("fragstate tune: cannot trigger a checkpoint: {e}");
                                    metrics.checkpoint_failed();
                                    ctl.checkpoint_ended(None);
                                }
                            }
                        }
                    }
                }
            }
            // A job that is restarting answers without metrics for a moment.
            Err(e) => eprintln!("fragstate tune: cannot read the job's records (polling on): {e}"),
        }
        match rest.restarts(&job) {
            Ok(total) => {
                if ctl.restarts_seen(now, total) {
                    println!("{}", json!({"event": "failure", "t": now, "failures": ctl.failures(), "flink_restarts": total}));
                }
            }
            Err(e) if !restarts_unreadable => {
                // said once: the MTBF then stays at what the failures already seen give
                restarts_unreadable = true;
                eprintln!("fragstate tune: cannot read the job's restarts (polling on, said once): {e}");
            }
            Err(_) => {}
        }
        metrics.observed(ctl.last_throughput(), ctl.failures());
        if let Some((request, asked)) = &pending {
            let mut completed = None;
            let status = rest.checkpoint_status(&job, request);
            let line = match &status {
                Ok(CheckpointStatus::InProgress) => None,
                Ok(CheckpointStatus::Completed { id }) => {
                    // Flink's own figure; the poll's (whole seconds at the default poll) if unreadable
                    let seconds = rest.checkpoint_duration_s(&job, *id).unwrap_or_else(|e| {
                        eprintln!("fragstate tune: checkpoint {id}'s duration unreadable, counting {:.1} s from the polls: {e}", now - asked);
                        now - asked
                    });
                    metrics.checkpoint_completed(seconds);
                    completed = Some(seconds);
                    Some(json!({"event": "checkpoint", "t": now, "id": id, "seconds": seconds}))
                }
                Ok(CheckpointStatus::Failed { cause }) => {
                    metrics.checkpoint_failed();
                    Some(json!({"event": "checkpoint failed", "t": now, "cause": cause}))
                }
                Err(e) => Some(json!({"event": "checkpoint unknown", "t": now, "error": e.to_string()})),
            };
            if let Some(line) = line {
                println!("{line}");
                pending = None;
                ctl.checkpoint_ended(completed);
            }
        }
        std::thread::sleep(a.poll_every);
    }
    println!("{}", json!({"event": "stopped", "t": start.elapsed().as_secs_f64(), "interval_s": ctl.interval_s(), "failures": ctl.failures()}));
    Ok(())
}

/// Serves `registry` as OpenMetrics text to every request, from a thread of its own, on `addr`;
/// returns the address bound (port 0 picks one).
fn serve_metrics(addr: SocketAddr, registry: Arc<Registry>) -> Result<SocketAddr> {
    let server = tiny_http::Server::http(addr).map_err(|e| Error::invalid("--metrics-listen", addr, format!("an address this host can listen on ({e})")))?;
    let bound = server.server_addr().to_ip().expect("a TCP listener has an IP address");
    let content_type = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("a valid header");
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let response = tiny_http::Response::from_string(encode_metrics(&registry)).with_header(content_type.clone());
            if let Err(e) = request.respond(response) {
                tracing::debug!(error = %e, "a metrics scrape ended early");
            }
        }
    });
    Ok(bound)
}
