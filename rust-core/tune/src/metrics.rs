//! The controller's decisions and actions as Prometheus metrics (OpenMetrics
//! text), so a dashboard can show the interval in force beside the load it was
//! chosen for and the predictions behind it. Only the values and their
//! encoding live here; `fragstate tune --metrics-listen` serves them.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Unit;
/// The registry [`TuneMetrics::new`] fills, for [`encode_metrics`].
pub use prometheus_client::registry::Registry;

use crate::choose::{Constraints, Decision, Objective};

type GaugeF64 = Gauge<f64, AtomicU64>;

/// OpenMetrics has no unit for milliseconds; latencies keep Khaos's unit rather than seconds.
fn milliseconds() -> Unit {
    Unit::Other("milliseconds".into())
}
type ByInterval = Family<Vec<(String, String)>, GaugeF64>;

/// Every metric of `fragstate tune`, named `fragstate_tune_*`. Clones share the values.
#[derive(Clone, Default)]
pub struct TuneMetrics {
    interval: GaugeF64,
    observed_throughput: GaugeF64,
    planned_throughput: GaugeF64,
    predicted_latency: GaugeF64,
    predicted_recovery: GaugeF64,
    meets_constraints: Gauge,
    max_latency: GaugeF64,
    max_recovery: GaugeF64,
    candidate_latency: ByInterval,
    candidate_recovery: ByInterval,
    candidate_score: ByInterval,
    decisions: Counter,
    interval_changes: Counter,
    checkpoints_triggered: Counter,
    checkpoints_completed: Counter,
    checkpoints_failed: Counter,
    last_checkpoint: GaugeF64,
    decision_checkpoint: GaugeF64,
    decision_mtbf: GaugeF64,
    decision_checkpoint_price: GaugeF64,
    checkpoint_seconds: Counter<f64, AtomicU64>,
    job_restarts: Counter,
}

impl TuneMetrics {
    /// The metrics, registered in a new registry, with the constraints and the
    /// interval the controller starts with.
    pub fn new(constraints: &Constraints, start_interval_s: f64) -> (TuneMetrics, Registry) {
        let m = TuneMetrics::default();
        let mut r = Registry::with_prefix("fragstate_tune");
        r.register_with_unit("interval", "Checkpoint interval in force", Unit::Seconds, m.interval.clone());
        r.register("observed_throughput", "Input records per second of the job, last sample", m.observed_throughput.clone());
        r.register("planned_throughput", "Input records per second the last decision planned for (the forecast's highest, capped by the highest seen; the highest seen until a forecast is possible)", m.planned_throughput.clone());
        r.register_with_unit("predicted_latency", "Mean end-to-end latency predicted at the interval chosen, in milliseconds", milliseconds(), m.predicted_latency.clone());
        r.register_with_unit("predicted_recovery", "Recovery time predicted at the interval chosen", Unit::Seconds, m.predicted_recovery.clone());
        r.register("meets_constraints", "1 when the interval chosen is predicted to meet both constraints, 0 when none did", m.meets_constraints.clone());
        r.register_with_unit("max_latency", "The latency constraint, in milliseconds", milliseconds(), m.max_latency.clone());
        r.register_with_unit("max_recovery", "The recovery-time constraint", Unit::Seconds, m.max_recovery.clone());
        r.register_with_unit("candidate_latency", "Latency predicted for each candidate interval at the last decision, in milliseconds", milliseconds(), m.candidate_latency.clone());
        r.register_with_unit("candidate_recovery", "Recovery time predicted for each candidate interval at the last decision", Unit::Seconds, m.candidate_recovery.clone());
        r.register("candidate_score", "The objective of each candidate interval at the last decision (smaller is better)", m.candidate_score.clone());
        r.register("decisions", "Decisions taken", m.decisions.clone());
        r.register("interval_changes", "Decisions that changed the interval", m.interval_changes.clone());
        r.register("checkpoints_triggered", "Checkpoints the controller triggered", m.checkpoints_triggered.clone());
        r.register("checkpoints_completed", "Triggered checkpoints that completed", m.checkpoints_completed.clone());
        r.register("checkpoints_failed", "Triggered checkpoints that failed or could not be triggered", m.checkpoints_failed.clone());
        r.register_with_unit("last_checkpoint_duration", "Trigger to last acknowledgement of the last checkpoint the controller triggered, as Flink measured it", Unit::Seconds, m.last_checkpoint.clone());
        r.register_with_unit("decision_checkpoint_duration", "Checkpoint duration the last decision weighed (the time-lost objective only)", Unit::Seconds, m.decision_checkpoint.clone());
        r.register_with_unit("decision_mtbf", "Mean time between failures the last decision weighed (the time-lost objective only: the prior learned from the failures seen)", Unit::Seconds, m.decision_mtbf.clone());
        r.register("decision_checkpoint_price", "Seconds of lost time one second of checkpointing counted for at the last decision (time-lost objective: 1, more under a checkpoint budget)", m.decision_checkpoint_price.clone());
        r.register_with_unit("checkpoint", "Checkpoint time spent: the durations of the controller's completed checkpoints, summed (what a checkpoint budget limits)", Unit::Seconds, m.checkpoint_seconds.clone());
        r.register("job_restarts", "Failures of the job since the controller started (Flink's numRestarts, restarts less than 30 s apart counted once)", m.job_restarts.clone());
        m.max_latency.set(constraints.max_latency_ms);
        m.max_recovery.set(constraints.max_recovery_s);
        m.interval.set(start_interval_s);
        (m, r)
    }

    pub fn decided(&self, d: &Decision) {
        self.decisions.inc();
        if self.interval.get() != d.chosen.interval_s {
            self.interval_changes.inc();
        }
        self.interval.set(d.chosen.interval_s);
        self.planned_throughput.set(d.throughput);
        self.predicted_latency.set(d.chosen.latency_ms);
        self.predicted_recovery.set(d.chosen.recovery_s);
        self.meets_constraints.set(d.chosen.meets_constraints as i64);
        if let Objective::TimeLost { checkpoint_s, mtbf_s, checkpoint_price } = d.objective {
            self.decision_checkpoint.set(checkpoint_s);
            self.decision_mtbf.set(mtbf_s);
            self.decision_checkpoint_price.set(checkpoint_price);
        }
        for c in &d.candidates {
            let label = vec![("interval".to_string(), format!("{}", c.interval_s))];
            self.candidate_latency.get_or_create(&label).set(c.latency_ms);
            self.candidate_recovery.get_or_create(&label).set(c.recovery_s);
            self.candidate_score.get_or_create(&label).set(c.score);
        }
    }

    pub fn observed(&self, throughput: Option<f64>, failures: u64) {
        if let Some(t) = throughput {
            self.observed_throughput.set(t);
        }
        // The controller counts the failures; the counter catches up with it.
        let seen = self.job_restarts.get();
        if failures > seen {
            self.job_restarts.inc_by(failures - seen);
        }
    }

    pub fn checkpoint_triggered(&self) {
        self.checkpoints_triggered.inc();
    }

    pub fn checkpoint_completed(&self, seconds: f64) {
        self.checkpoints_completed.inc();
        self.last_checkpoint.set(seconds);
        self.checkpoint_seconds.inc_by(seconds);
    }

    pub fn checkpoint_failed(&self) {
        self.checkpoints_failed.inc();
    }
}

/// The registry in the OpenMetrics text format.
pub fn encode_metrics(registry: &Registry) -> String {
    let mut text = String::new();
    encode(&mut text, registry).expect("writing to a String cannot fail");
    text
}

/// The content type of [`encode_metrics`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::{choose, Objective};

    fn value(text: &str, name: &str) -> f64 {
        let line = text.lines().find(|l| l.split([' ', '{']).next() == Some(name)).unwrap_or_else(|| panic!("{name} missing in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn a_decision_shows_its_interval_load_predictions_and_every_candidate() {
        let c = Constraints { candidates_s: vec![10.0, 60.0], ..Constraints::default() };
        let (m, registry) = TuneMetrics::new(&c, 10.0);
        // recovery grows with interval × load: at 5,000 records/s 60 s predicts 35 s, 10 s predicts 10 s
        let d = choose(&c, Objective::Khaos, 5_000.0, |i, _| 200.0 + 6_000.0 / i, |i, t| 5.0 + i * t / 10_000.0).unwrap();
        assert_eq!(d.chosen.interval_s, 60.0);
        m.decided(&d);
        m.observed(Some(4_800.0), 2);
        m.checkpoint_triggered();
        m.checkpoint_completed(1.5);
        m.checkpoint_triggered();
        m.checkpoint_failed();
        let text = encode_metrics(&registry);
        assert_eq!(value(&text, "fragstate_tune_interval_seconds"), 60.0);
        assert_eq!(value(&text, "fragstate_tune_planned_throughput"), 5_000.0);
        assert_eq!(value(&text, "fragstate_tune_observed_throughput"), 4_800.0);
        assert_eq!(value(&text, "fragstate_tune_predicted_recovery_seconds"), 35.0);
        assert_eq!(value(&text, "fragstate_tune_predicted_latency_milliseconds"), 300.0);
        assert_eq!(value(&text, "fragstate_tune_meets_constraints"), 1.0);
        assert_eq!(value(&text, "fragstate_tune_max_recovery_seconds"), 120.0);
        assert_eq!(value(&text, "fragstate_tune_decisions_total"), 1.0);
        assert_eq!(value(&text, "fragstate_tune_interval_changes_total"), 1.0);
        assert_eq!(value(&text, "fragstate_tune_checkpoints_triggered_total"), 2.0);
        assert_eq!(value(&text, "fragstate_tune_checkpoints_completed_total"), 1.0);
        assert_eq!(value(&text, "fragstate_tune_checkpoints_failed_total"), 1.0);
        assert_eq!(value(&text, "fragstate_tune_last_checkpoint_duration_seconds"), 1.5);
        assert_eq!(value(&text, "fragstate_tune_checkpoint_seconds_total"), 1.5);
        assert_eq!(value(&text, "fragstate_tune_job_restarts_total"), 2.0);
        assert!(text.contains("fragstate_tune_candidate_recovery_seconds{interval=\"10\"} 10.0"), "{text}");
        assert!(text.contains("fragstate_tune_candidate_recovery_seconds{interval=\"60\"} 35.0"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn the_same_interval_again_is_a_decision_but_no_change_and_restarts_are_not_counted_twice() {
        let c = Constraints::default();
        let (m, registry) = TuneMetrics::new(&c, 120.0);
        // recovery the same at every interval: the longest, the one started with, is the cheapest
        let d = choose(&c, Objective::time_lost(0.7, 600.0), 0.0, |_, _| 100.0, |_, _| 1.0).unwrap();
        assert_eq!(d.chosen.interval_s, 120.0);
        m.decided(&d);
        m.decided(&d);
        m.observed(None, 1);
        m.observed(None, 1);
        let text = encode_metrics(&registry);
        assert_eq!(value(&text, "fragstate_tune_decisions_total"), 2.0);
        assert_eq!(value(&text, "fragstate_tune_interval_changes_total"), 0.0);
        assert_eq!(value(&text, "fragstate_tune_job_restarts_total"), 1.0);
        assert_eq!(value(&text, "fragstate_tune_observed_throughput"), 0.0);
        assert_eq!(value(&text, "fragstate_tune_decision_checkpoint_duration_seconds"), 0.7);
        assert_eq!(value(&text, "fragstate_tune_decision_mtbf_seconds"), 600.0);
        assert_eq!(value(&text, "fragstate_tune_decision_checkpoint_price"), 1.0);
    }
}
