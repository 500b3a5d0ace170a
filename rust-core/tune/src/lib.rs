//! The decisions of `fragstate tune`, the checkpoint-interval controller of
//! issue 15 (the Khaos idea: FedCSIS 2022), kept free of I/O so that every
//! one of them is testable from numbers alone; the adapters that read Flink's
//! REST API and trigger checkpoints sit above this crate.
//!
//! Khaos's three phases, and where each decision lives:
//! 1. steady state: the job's throughput and latency over time (collected by the adapter);
//! 2. failure experiments on a shadow copy of the job at chosen intervals and
//!    loads → [`model`]: recovery time and latency as linear models of the
//!    interval and the throughput, with their fit (R², residuals);
//!    [`predict`]: the recovery time fragstate's own figures give directly
//!    (detection, restart, state bytes over the restore throughput, replay);
//! 3. continuously: [`forecast`] the throughput (ARIMA(p,1,0) by least
//!    squares), then [`choose`] the candidate interval that minimises
//!    latency/latency-constraint + recovery/recovery-constraint with both
//!    under their constraints (Khaos's defaults: 10–120 s, 1,000 ms, 120 s);
//!    [`budget`]: optionally, a share of time checkpoints may take, priced so
//!    that calm hours pay for the peaks' checkpoints;
//!    [`controller`]: the state machine that turns polls of the job's record
//!    count into decisions and checkpoint triggers; [`metrics`]: its decisions
//!    and actions as Prometheus metrics.
//!
//! [`simulate`] replays an evaluation run in numbers (the job as fragstate's
//! figures model it, kills at given moments, Flink's periodic trigger or the
//! controller itself) to compare the policies over many draws of the kills.

pub mod budget;
pub mod choose;
pub mod controller;
pub mod forecast;
pub mod metrics;
pub mod model;
pub mod predict;
pub mod simulate;

pub use budget::{BudgetPrice, CheckpointBudget};
pub use choose::{choose, Candidate, Constraints, Decision, Objective};
pub use controller::{Action, Controller, ControllerConfig, LoadBasis, Plan, RecoveryPredictor};
pub use forecast::{forecast_throughput, samples_needed, Forecast};
pub use metrics::{encode_metrics, TuneMetrics};
pub use model::{Experiment, Fit, Model, Term};
pub use predict::RecoveryFigures;
pub use simulate::{kill_moments, simulate, Policy, SimJob, SimOutcome};
