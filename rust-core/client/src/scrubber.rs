//! Background scrub, the I/O: a thin adapter that runs the decisions of
//! [`crate::scrub`] on one node's store. It reads each cell the planner
//! names, judges it, and rebuilds a bad one from the other holders through a
//! [`Client`] (the reader's fetch and the codec, as repair does), then writes
//! it back into the store ([`FragmentStore::rewrite_cell`]). Readers that
//! meet a corrupt cell report it ([`crate::transport::Transport::report_corrupt`]);
//! the node's [`ScrubShared`] queues the report and wakes the scrubber.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio::time::Instant;

use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_store::FragmentStore;

use crate::client::Client;
use crate::scrub::{classify, pass_work, CellRef, ScrubConfig, ScrubPlanner, Step, Task, Verdict, MAX_PENDING_REPORTS};

/// What one node's scrub did since it started (stats JSON: camelCase).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrubStats {
    /// Passes begun.
    pub passes: u64,
    /// Stored cells verified (by the pass and for reports).
    pub cells_scrubbed: u64,
    pub bytes_scrubbed: u64,
    /// Bad cells (corrupt, torn or missing) the pass found.
    pub corrupt_found: u64,
    /// Corrupt cells readers reported to this node.
    pub corrupt_reports: u64,
    /// Reported cells that were indeed bad here.
    pub corrupt_reports_confirmed: u64,
    /// Bad cells rebuilt from the other holders and written back.
    pub cells_rebuilt: u64,
    /// Bad cells that could not be rebuilt (retried at the next pass or report).
    pub rebuild_failures: u64,
}

impl std::ops::AddAssign for ScrubStats {
    fn add_assign(&mut self, o: Self) {
        self.passes += o.passes;
        self.cells_scrubbed += o.cells_scrubbed;
        self.bytes_scrubbed += o.bytes_scrubbed;
        self.corrupt_found += o.corrupt_found;
        self.corrupt_reports += o.corrupt_reports;
        self.corrupt_reports_confirmed += o.corrupt_reports_confirmed;
        self.cells_rebuilt += o.cells_rebuilt;
        self.rebuild_failures += o.rebuild_failures;
    }
}

#[derive(Default)]
struct Counters {
    passes: AtomicU64,
    cells_scrubbed: AtomicU64,
    bytes_scrubbed: AtomicU64,
    corrupt_found: AtomicU64,
    corrupt_reports: AtomicU64,
    corrupt_reports_confirmed: AtomicU64,
    cells_rebuilt: AtomicU64,
    rebuild_failures: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// What a node's scrubber shares with the rest of the node: the reports
/// readers sent (bounded; dropped beyond [`MAX_PENDING_REPORTS`]) and the counters.
#[derive(Default)]
pub struct ScrubShared {
    reports: Mutex<VecDeque<CellRef>>,
    wake: Notify,
    counters: Counters,
}

impl ScrubShared {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// A reader found this node's cell of `key` in `stripe` corrupt. Returns
    /// false when the report was dropped (too many waiting).
    pub fn report(&self, key: FragmentKey, stripe: u32) -> bool {
        bump(&self.counters.corrupt_reports);
        let mut q = self.reports.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() >= MAX_PENDING_REPORTS {
            return false;
        }
        q.push_back(CellRef { key, stripe });
        drop(q);
        self.wake.notify_one();
        true
    }

    fn take_reports(&self) -> Vec<CellRef> {
        self.reports.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect()
    }

    pub fn stats(&self) -> ScrubStats {
        let c = &self.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ScrubStats {
            passes: g(&c.passes),
            cells_scrubbed: g(&c.cells_scrubbed),
            bytes_scrubbed: g(&c.bytes_scrubbed),
            corrupt_found: g(&c.corrupt_found),
            corrupt_reports: g(&c.corrupt_reports),
            corrupt_reports_confirmed: g(&c.corrupt_reports_confirmed),
            cells_rebuilt: g(&c.cells_rebuilt),
            rebuild_failures: g(&c.rebuild_failures),
        }
    }
}

/// Runs a store call that may touch the disk without stalling the runtime.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// One node's scrubber: its store, a client that reaches the other holders,
/// the planner (time is tokio's).
pub struct Scrubber {
    store: Arc<FragmentStore>,
    me: NodeId,
    client: Client,
    shared: Arc<ScrubShared>,
    planner: ScrubPlanner,
    epoch: Instant,
}

impl Scrubber {
    /// `client` must reach the other holders of the store's objects.
    pub fn new(store: Arc<FragmentStore>, client: Client, shared: Arc<ScrubShared>, cfg: ScrubConfig) -> Self {
        let me = NodeId::from(store.node());
        Scrubber { store, me, client, shared, planner: ScrubPlanner::new(cfg, Duration::ZERO), epoch: Instant::now() }
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Moves the reports into the planner: those naming a committed fragment
    /// this node holds for its manifest; others are ignored.
    fn take_reports(&mut self) {
        for cell in self.shared.take_reports() {
            let m = self.store.get_manifest(&cell.key.path);
            match m.filter(|m| m.write_id == cell.key.write_id && m.holders.get(cell.key.index as usize) == Some(&self.me)) {
                Some(manifest) => {
                    self.planner.report(Task { cell, manifest, reported: true });
                }
                None => tracing::debug!(path = %cell.key.path, fragment = cell.key.index, stripe = cell.stripe, "corrupt cell report for a fragment this node does not hold committed: ignored"),
            }
        }
    }

    fn begin_pass(&mut self) {
        let (store, me) = (self.store.clone(), self.me.clone());
        let work = blocking(|| pass_work(&me, store.committed_fragments()));
        tracing::debug!(fragments = work.len(), "scrub pass begins");
        self.planner.begin_pass(self.now(), work);
        bump(&self.shared.counters.passes);
    }

    /// Reads one cell, judges it, and rebuilds it if it is bad.
    pub async fn check(&self, task: &Task) -> Verdict {
        let c = &self.shared.counters;
        let key = &task.cell.key;
        let stripe = task.cell.stripe;
        let read = blocking(|| self.store.get_cell(key, stripe));
        let held = read.is_ok() || self.store.has_fragment(key);
        let verdict = classify(task, &read, held);
        if verdict == Verdict::Gone {
            return verdict;
        }
        bump(&c.cells_scrubbed);
        c.bytes_scrubbed.fetch_add(read.as_ref().map_or(0, |b| b.len() as u64), Ordering::Relaxed);
        if !verdict.needs_rebuild() {
            return verdict;
        }
        bump(if task.reported { &c.corrupt_reports_confirmed } else { &c.corrupt_found });
        tracing::warn!(path = %key.path, fragment = key.index, stripe, ?verdict, reported = task.reported, "bad stored cell: rebuilding it from the other holders");
        let rebuilt = match self.client.rebuild_cell(&task.manifest, key.index as usize, stripe).await {
            Ok(cell) => blocking(|| self.store.rewrite_cell(key, stripe, task.expected_checksum(), cell)),
            Err(e) => Err(e),
        };
        match rebuilt {
            Ok(true) => {
                bump(&c.cells_rebuilt);
                tracing::info!(path = %key.path, fragment = key.index, stripe, "bad stored cell rebuilt");
            }
            Ok(false) => tracing::debug!(path = %key.path, fragment = key.index, "fragment deleted while its cell was rebuilt"),
            Err(e) => {
                bump(&c.rebuild_failures);
                tracing::warn!(path = %key.path, fragment = key.index, stripe, error = %e, "bad stored cell could not be rebuilt; tried again at the next pass");
            }
        }
        verdict
    }

    /// Runs one whole pass now, reported cells first, at the configured rate
    /// (tests, and a node asked to scrub at once). With rate 0 only the
    /// reported cells are verified.
    pub async fn run_pass(&mut self) {
        self.take_reports();
        self.begin_pass();
        loop {
            self.take_reports();
            match self.planner.next(self.now()) {
                Step::Verify(t) => {
                    self.check(&t).await;
                }
                Step::Wait(d) if !self.planner.pass_done() => tokio::time::sleep(d).await,
                Step::Wait(_) | Step::NewPass | Step::Idle => return,
            }
        }
    }

    /// Scrubs until `shutdown` completes: passes at the rate, at most one per
    /// pass interval, and every reported cell as soon as it arrives.
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        tracing::info!(rate = self.planner.config().rate, interval_secs = self.planner.config().pass_interval.as_secs(), "scrub running");
        loop {
            self.take_reports();
            let pause = match self.planner.next(self.now()) {
                Step::Verify(t) => {
                    self.check(&t).await;
                    continue;
                }
                Step::NewPass => {
                    self.begin_pass();
                    continue;
                }
                Step::Wait(d) => Some(d),
                Step::Idle => None,
            };
            let sleep = async {
                match pause {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut shutdown => return,
                _ = self.shared.wake.notified() => {}
                _ = sleep => {}
            }
        }
    }
}
