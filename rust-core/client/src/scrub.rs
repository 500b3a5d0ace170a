//! Background scrub, the decisions only: which stored cell to verify next,
//! how many bytes the rate allows now, and what a verification means. No
//! I/O, no clock, no runtime: the adapter ([`crate::scrubber`]) reads the
//! cells, asks the other holders, rewrites and sleeps; tests drive this
//! module with a made-up clock (`now` is any monotonic [`Duration`]).
//!
//! A pass walks every committed fragment this node holds (its manifest names
//! this node as the holder of that index), stripe by stripe, and verifies
//! each cell against the manifest: its length and its xxh3-64. Cells that
//! readers reported go first. The rate is a token bucket of bytes with a
//! debt: a cell may be read when the bucket is not negative, its bytes are
//! then taken, and the bucket refills at `rate` bytes per second up to one
//! second's worth. So over any span `T`, at most `rate × (T + 1 s)` plus one
//! cell is read.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fragstate_core::error::Error;
use fragstate_core::format::{cell_checksum, Manifest};
use fragstate_core::ids::{FragmentKey, NodeId};

/// Bytes per second a node scrubs by default.
pub const DEFAULT_SCRUB_RATE: u64 = 8 << 20;
/// The largest scrub rate a node accepts (bytes per second).
pub const MAX_SCRUB_RATE: u64 = 16 << 30;
/// Reported cells waiting at most; later reports are dropped (the next pass finds them).
pub const MAX_PENDING_REPORTS: usize = 4096;
/// The first pass starts this long after the scrub (or one pass interval,
/// if shorter): a node that just started has not met the other holders yet.
pub const FIRST_PASS_DELAY: Duration = Duration::from_secs(30);

/// How a node scrubs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScrubConfig {
    /// Stored bytes verified per second at most; 0: no background pass
    /// (cells that readers report are still verified and rebuilt).
    pub rate: u64,
    /// A pass starts at most this long after the previous one started, so
    /// a small store is not re-read over and over.
    pub pass_interval: Duration,
    /// Reported cells waiting at most.
    pub max_reports: usize,
}

impl Default for ScrubConfig {
    fn default() -> Self {
        ScrubConfig { rate: DEFAULT_SCRUB_RATE, pass_interval: Duration::from_secs(600), max_reports: MAX_PENDING_REPORTS }
    }
}

/// One stored cell: a fragment and a stripe.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellRef {
    pub key: FragmentKey,
    pub stripe: u32,
}

/// A cell to verify, with the manifest that says what it must be.
#[derive(Clone, Debug)]
pub struct Task {
    pub cell: CellRef,
    pub manifest: Arc<Manifest>,
    /// A reader reported it.
    pub reported: bool,
}

impl Task {
    /// The cell's length by the manifest.
    pub fn expected_len(&self) -> usize {
        self.manifest.stripes[self.cell.stripe as usize].cell_len(self.manifest.params.k())
    }

    /// The cell's checksum by the manifest.
    pub fn expected_checksum(&self) -> u64 {
        self.manifest.stripes[self.cell.stripe as usize].cell_checksums[self.cell.key.index as usize]
    }
}

/// What reading a stored cell found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Good,
    /// Right length, wrong checksum (bit rot, a bad write).
    Corrupt,
    /// Shorter or longer than the manifest says, or unreadable (a torn file, an I/O error).
    Torn,
    /// The fragment is held but has no cell for this stripe (a tail cut off on load).
    Missing,
    /// The fragment is no longer held (deleted or reclaimed meanwhile): nothing to do.
    Gone,
}

impl Verdict {
    /// Whether the cell must be rebuilt from the other holders.
    pub fn needs_rebuild(&self) -> bool {
        matches!(self, Verdict::Corrupt | Verdict::Torn | Verdict::Missing)
    }
}

/// Judges what reading a stored cell returned. `held`: the store still holds the fragment.
pub fn classify(task: &Task, read: &fragstate_core::Result<Bytes>, held: bool) -> Verdict {
    if !held {
        return Verdict::Gone;
    }
    match read {
        Ok(b) if b.len() != task.expected_len() => Verdict::Torn,
        Ok(b) if cell_checksum(b) != task.expected_checksum() => Verdict::Corrupt,
        Ok(_) => Verdict::Good,
        Err(Error::CellNotFound { .. }) => Verdict::Missing,
        Err(_) => Verdict::Torn,
    }
}

/// The fragments of `held` (a store's committed fragments and their manifests)
/// that a pass verifies: those whose manifest names `me` as their holder.
/// In key order, so a pass visits objects in a stable order.
pub fn pass_work(me: &NodeId, held: Vec<(FragmentKey, Arc<Manifest>)>) -> Vec<(FragmentKey, Arc<Manifest>)> {
    let mut v: Vec<_> = held
        .into_iter()
        .filter(|(k, m)| m.write_id == k.write_id && m.holders.get(k.index as usize) == Some(me) && m.validate().is_ok())
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// What the adapter does next.
#[derive(Clone, Debug)]
pub enum Step {
    /// Read and judge this cell now.
    Verify(Task),
    /// Nothing may be read before this much time has passed (rate, pass interval).
    Wait(Duration),
    /// The pass is over and the next may start: call [`ScrubPlanner::begin_pass`].
    NewPass,
    /// Scrub is off and no cell was reported: wait for a report.
    Idle,
}

/// A token bucket of bytes with a debt (see the module comment).
#[derive(Clone, Debug)]
struct Budget {
    rate: u64,
    /// Bytes that may be read now; negative: a debt to wait off.
    tokens: f64,
    last: Duration,
}

impl Budget {
    fn refill(&mut self, now: Duration) {
        let dt = now.saturating_sub(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + dt * self.rate as f64).min(self.rate as f64);
    }

    /// Takes `cost` bytes if the bucket is not in debt, else says how long to wait.
    fn take(&mut self, now: Duration, cost: u64) -> Result<(), Duration> {
        self.refill(now);
        if self.tokens < 0.0 {
            return Err(Duration::from_secs_f64(-self.tokens / self.rate as f64).max(Duration::from_millis(1)));
        }
        self.tokens -= cost as f64;
        Ok(())
    }

    /// Takes `cost` bytes whatever the bucket holds (reported cells do not wait).
    fn charge(&mut self, now: Duration, cost: u64) {
        self.refill(now);
        self.tokens -= cost as f64;
    }
}

/// The scrub's state: the pass in progress, the reported cells and the rate budget.
#[derive(Debug)]
pub struct ScrubPlanner {
    cfg: ScrubConfig,
    budget: Budget,
    work: Vec<(FragmentKey, Arc<Manifest>)>,
    /// Cursor: fragment `work[frag]`, stripe `stripe`.
    frag: usize,
    stripe: u32,
    reports: VecDeque<Task>,
    queued: HashSet<CellRef>,
    pass_started: Option<Duration>,
    /// When the first pass may start.
    first_pass_at: Duration,
    passes: u64,
}

impl ScrubPlanner {
    pub fn new(cfg: ScrubConfig, now: Duration) -> Self {
        let budget = Budget { rate: cfg.rate, tokens: 0.0, last: now };
        let cfg_interval = cfg.pass_interval;
        ScrubPlanner {
            cfg,
            budget,
            work: Vec::new(),
            frag: 0,
            stripe: 0,
            reports: VecDeque::new(),
            queued: HashSet::new(),
            pass_started: None,
            first_pass_at: now + FIRST_PASS_DELAY.min(cfg_interval),
            passes: 0,
        }
    }

    pub fn config(&self) -> &ScrubConfig {
        &self.cfg
    }

    /// Passes begun so far.
    pub fn passes(&self) -> u64 {
        self.passes
    }

    /// Starts a pass over `work` (from [`pass_work`]).
    pub fn begin_pass(&mut self, now: Duration, work: Vec<(FragmentKey, Arc<Manifest>)>) {
        self.work = work;
        self.frag = 0;
        self.stripe = 0;
        self.pass_started = Some(now);
        self.passes += 1;
    }

    /// Queues a cell a reader reported, ahead of the pass. Returns false when
    /// it is already queued, outside the manifest, or the queue is full.
    pub fn report(&mut self, task: Task) -> bool {
        let in_manifest = (task.cell.stripe as usize) < task.manifest.stripes.len()
            && (task.cell.key.index as usize) < task.manifest.holders.len();
        if !in_manifest || self.reports.len() >= self.cfg.max_reports || !self.queued.insert(task.cell.clone()) {
            return false;
        }
        self.reports.push_back(Task { reported: true, ..task });
        true
    }

    /// Reported cells still waiting.
    pub fn pending_reports(&self) -> usize {
        self.reports.len()
    }

    /// Every cell of the pass is verified and no report waits.
    pub fn pass_done(&self) -> bool {
        let left = self.work.iter().skip(self.frag).enumerate().any(|(i, (_, m))| {
            let from = if i == 0 { self.stripe as usize } else { 0 };
            from < m.stripes.len()
        });
        self.reports.is_empty() && !left
    }

    /// The next thing to do at time `now`.
    pub fn next(&mut self, now: Duration) -> Step {
        if let Some(t) = self.reports.pop_front() {
            self.queued.remove(&t.cell);
            if self.cfg.rate > 0 {
                self.budget.charge(now, t.expected_len() as u64);
            }
            return Step::Verify(t);
        }
        if self.cfg.rate == 0 {
            return Step::Idle;
        }
        // Skip fragments whose stripes are done.
        while self.frag < self.work.len() && self.stripe as usize >= self.work[self.frag].1.stripes.len() {
            self.frag += 1;
            self.stripe = 0;
        }
        if self.frag >= self.work.len() {
            return match self.pass_started {
                Some(t) if now < t + self.cfg.pass_interval => Step::Wait(t + self.cfg.pass_interval - now),
                None if now < self.first_pass_at => Step::Wait(self.first_pass_at - now),
                _ => Step::NewPass,
            };
        }
        let (key, manifest) = &self.work[self.frag];
        let task = Task { cell: CellRef { key: key.clone(), stripe: self.stripe }, manifest: manifest.clone(), reported: false };
        if let Err(wait) = self.budget.take(now, task.expected_len() as u64) {
            return Step::Wait(wait);
        }
        self.stripe += 1;
        Step::Verify(task)
    }
}

#[cfg(test)]
#[path = "scrub_tests.rs"]
mod tests;
