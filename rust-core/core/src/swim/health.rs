//! Lifeguard's local health (Dadgar, Phillips, Currey, DSN 2018): a node
//! that misses its own deadlines — its probes go unanswered, others suspect
//! it — is more likely slow itself (a saturated host, a long pause) than
//! surrounded by dead members. Its score stretches its probe period and
//! timeout, so a slow node probes less often and waits longer before it
//! suspects anyone: fewer false suspicions, and less load on the host
//! whose load caused them, instead of a storm of suspicions, refutations
//! and reconnections feeding on itself.

use super::Millis;

/// A node's health score: 0 when healthy, at most `max` when it misses
/// everything; each probe period and probe timeout lasts `1 + score` times
/// its configured length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LocalHealth {
    score: u32,
    max: u32,
}

impl LocalHealth {
    pub(super) fn new(max: u32) -> Self {
        LocalHealth { score: 0, max }
    }

    pub(super) fn score(&self) -> u32 {
        self.score
    }

    /// A probe of this node's went unanswered, or this node had to refute a
    /// suspicion of itself.
    pub(super) fn missed(&mut self) {
        self.score = (self.score + 1).min(self.max);
    }

    /// A probe of this node's was answered.
    pub(super) fn answered(&mut self) {
        self.score = self.score.saturating_sub(1);
    }

    /// `base` stretched by the score.
    pub(super) fn scale(&self, base: Millis) -> Millis {
        base * Millis::from(1 + self.score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_score_rises_with_misses_up_to_its_bound_and_falls_with_answers() {
        let mut h = LocalHealth::new(3);
        assert_eq!(h.scale(200), 200);
        for _ in 0..5 {
            h.missed();
        }
        assert_eq!(h.score(), 3);
        assert_eq!(h.scale(200), 800);
        h.answered();
        assert_eq!(h.scale(80), 240);
        for _ in 0..5 {
            h.answered();
        }
        assert_eq!(h.score(), 0);
    }
}
