//! The recovery time that fragstate's own figures predict, without failure
//! experiments: the job is down while the failure is detected, the tasks are
//! redeployed and their state is rebuilt from fragments; then it replays
//! what arrived since the last checkpoint plus what arrived while it was
//! down, with the capacity it has beyond the incoming load.

use fragstate_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// What the prediction needs, each measured (fragstate's restore figures,
/// Flink's REST API, the steady state).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryFigures {
    /// Seconds from the failure until Flink notices it.
    pub detection_s: f64,
    /// Seconds to redeploy the tasks (scheduling, not counting the state).
    pub restart_s: f64,
    /// Bytes of state the slowest restoring TaskManager reads.
    pub state_bytes: f64,
    /// Bytes per second one TaskManager restores from its peers' fragments.
    pub restore_bytes_per_s: f64,
    /// Records per second the job processes when it has a backlog.
    pub max_throughput: f64,
}

impl RecoveryFigures {
    /// Every figure finite, the times and the state ≥ 0, the rates > 0.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("detection_s", self.detection_s), ("restart_s", self.restart_s), ("state_bytes", self.state_bytes)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(name, v, "a finite number ≥ 0"));
            }
        }
        for (name, v) in [("restore_bytes_per_s", self.restore_bytes_per_s), ("max_throughput", self.max_throughput)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(name, v, "a finite number > 0"));
            }
        }
        Ok(())
    }

    /// Seconds the job is down: detection, redeployment, state restore.
    pub fn downtime_s(&self) -> f64 {
        self.detection_s + self.restart_s + self.state_bytes / self.restore_bytes_per_s
    }

    /// Seconds from a failure until the backlog is worked off, for a failure
    /// `lost_s` seconds after the last completed checkpoint, at `throughput`
    /// records/s of input. Infinite when the job has no capacity to spare.
    pub fn recovery_s(&self, lost_s: f64, throughput: f64) -> f64 {
        let spare = self.max_throughput - throughput;
        if spare <= 0.0 {
            return f64::INFINITY;
        }
        let down = self.downtime_s();
        down + throughput * (lost_s + down) / spare
    }

    /// For failures at random moments: half an interval lost on average.
    pub fn expected_recovery_s(&self, interval_s: f64, throughput: f64) -> f64 {
        self.recovery_s(interval_s / 2.0, throughput)
    }

    /// For a failure just before a checkpoint completes: a whole interval lost.
    pub fn worst_recovery_s(&self, interval_s: f64, throughput: f64) -> f64 {
        self.recovery_s(interval_s, throughput)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> RecoveryFigures {
        RecoveryFigures { detection_s: 0.2, restart_s: 1.8, state_bytes: 3e9, restore_bytes_per_s: 1e9, max_throughput: 30_000.0 }
    }

    #[test]
    fn downtime_then_the_backlog_at_the_spare_capacity() {
        let f = figures();
        assert!((f.downtime_s() - 5.0).abs() < 1e-9);
        // 10,000 records/s in, 20,000/s spare: (60 + 5) s of input takes 32.5 s to work off.
        assert!((f.worst_recovery_s(60.0, 10_000.0) - (5.0 + 32.5)).abs() < 1e-9);
        assert!((f.expected_recovery_s(60.0, 10_000.0) - (5.0 + 17.5)).abs() < 1e-9);
        // A faster restore shortens both the downtime and the replay.
        let fast = RecoveryFigures { restore_bytes_per_s: 3e9, ..f };
        assert!(fast.worst_recovery_s(60.0, 10_000.0) < f.worst_recovery_s(60.0, 10_000.0));
    }

    #[test]
    fn no_spare_capacity_never_recovers() {
        assert!(figures().worst_recovery_s(10.0, 30_000.0).is_infinite());
    }

    #[test]
    fn figures_out_of_range_are_named() {
        let e = RecoveryFigures { restore_bytes_per_s: 0.0, ..figures() }.validate().unwrap_err().to_string();
        assert!(e.contains("restore_bytes_per_s") && e.contains("> 0"), "{e}");
        let e = RecoveryFigures { detection_s: f64::NAN, ..figures() }.validate().unwrap_err().to_string();
        assert!(e.contains("detection_s"), "{e}");
        assert!(figures().validate().is_ok());
    }
}
