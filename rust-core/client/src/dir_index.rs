//! The client's side of the directory index (`fragstate_core::dir_index`,
//! NETWORK.md "What still goes to every node"): reads that settle from a
//! directory's `k + m` holders, the changes a commit or a delete sends them,
//! and a directory's birth. The rules (quorums, merging, what is complete)
//! are core's; this module only asks the holders and counts their answers.
//!
//! - A read asks the directory's holders ([`dir_index::holders`]) and trusts
//!   the merge of their answers once `k` were complete
//!   ([`quorum::settle`]); holders whose answer was partial or missing are
//!   filled with it (read repair), so newcomers become complete without a
//!   separate repair pass. A read that does not settle returns `None`: the
//!   caller asks every node, as without an index.
//! - A commit adds its name to its parent's index before its manifest is
//!   published ([`quorum::change_acks`] = `m + 1` acknowledgements, else the
//!   write fails), so a visible object is always in its parent's index.
//! - A directory is born (its records made complete: [`quorum::birth_acks`])
//!   only when it provably has no history a birth could hide: its parent's
//!   settled index does not name it, or — under a parent with no settled
//!   index (the base directories, which nobody creates through the index) —
//!   a listing of every node finds nothing below it. Its name is added to
//!   the parent first, so a birth cut short leaves a named, unborn directory
//!   whose reads fall back (never a complete record that missed a change).

use std::collections::HashMap;

use std::future::Future;
use std::time::Instant;

use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};

use fragstate_core::dir_index::quorum::{self, Answer, IndexUpdate, Settled};
use fragstate_core::dir_index::{self, entry_in_parent, Change, DirIndex};
use fragstate_core::error::{Error, Result};
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::version::WriteVersion;

use crate::ctx::{bump, list_everywhere, timed, Ctx, STRAGGLER_GRACE};

/// Names in one index request at most (a recursive delete's removes of a
/// large directory go in several; names are at most a path's length).
const MAX_BATCH: usize = 256;
/// Subdirectory reads an emptiness check makes at most before it falls back.
const MAX_EMPTINESS_READS: usize = 64;

/// What lies below a directory by the index ([`Ctx::dir_contents`]).
pub(crate) enum DirContents {
    Empty,
    /// An object the index names below it (not yet checked against its manifest).
    Object(String),
    Unknown,
}

impl Ctx {
    fn index_holders(&self, dir: &str) -> Vec<NodeId> {
        dir_index::holders(dir, &self.transport.live_nodes(), self.cfg.params.fragments(), self.cfg.placement)
    }

    /// The settled index of `dir` (ending in `/`), or `None` when its
    /// holders' answers do not settle it (ask every node instead).
    pub(crate) async fn read_index(&self, dir: &str) -> Option<DirIndex> {
        if !self.cfg.directory_index {
            return None;
        }
        let holders = self.index_holders(dir);
        bump(&self.counters.index_reads, 1);
        bump(&self.counters.index_requests, holders.len() as u64);
        let (width, policy) = (self.cfg.params.fragments(), self.cfg.placement);
        let asks = holders.iter().map(|n| async move { (n, timed(self, n, self.transport.index_read(n, dir, width, policy)).await) });
        let k = self.cfg.params.k();
        let complete = |got: &[(&NodeId, Result<Answer>)]| got.iter().filter(|(_, a)| matches!(a, Ok(Some(r)) if r.complete)).count() >= k;
        let mut answers: Vec<(&NodeId, Answer)> = Vec::with_capacity(holders.len());
        for (n, a) in gather(asks, complete).await {
            match a {
                Ok(a) => answers.push((n, a)),
                Err(e) => tracing::debug!(dir, node = %n, error = %e, "index read failed on one holder"),
            }
        }
        match quorum::settle(answers.iter().map(|(_, a)| a.clone()), self.cfg.params.k()) {
            Settled::Index(index) => {
                bump(&self.counters.index_reads_settled, 1);
                // Partial or missing records, and complete ones that missed a change (up to
                // k - 1 may): filled, so that none keeps an add whose remove the others
                // prune after the tombstones' TTL (a pruned remove no longer hides it).
                let behind = |a: &Answer| !a.as_ref().is_some_and(|r| r.complete && r.index == index);
                let stale: Vec<&NodeId> = answers.iter().filter(|(_, a)| behind(a)).map(|(n, _)| *n).collect();
                if !stale.is_empty() {
                    let fill = IndexUpdate::Fill(index.clone());
                    let filled = self.send_index(&stale, dir, &fill, stale.len()).await;
                    tracing::debug!(dir, stale = stale.len(), filled, "index holders behind a settled read filled from it");
                }
                Some(index)
            }
            Settled::Unsettled { complete, needed } => {
                tracing::debug!(dir, complete, needed, answered = answers.len(), "index read did not settle; asking every node");
                None
            }
        }
    }

    /// Sends `update` to `nodes`; returns how many acknowledged it (once
    /// `needed` have, the others get [`gather`]'s grace).
    async fn send_index(&self, nodes: &[&NodeId], dir: &str, update: &IndexUpdate, needed: usize) -> usize {
        bump(&self.counters.index_requests, nodes.len() as u64);
        let sends = nodes.iter().map(|n| timed(self, n, self.transport.index_update(n, dir, update)));
        let acked = |got: &[Result<()>]| got.iter().filter(|r| r.is_ok()).count() >= needed;
        gather(sends, acked).await.into_iter().filter(Result::is_ok).count()
    }

    /// Sends `update` to `dir`'s holders; fails with fewer than `needed` acknowledgements.
    async fn update_index(&self, dir: &str, update: &IndexUpdate, needed: usize) -> Result<()> {
        if !self.cfg.directory_index {
            return Ok(());
        }
        let holders = self.index_holders(dir);
        let acks = self.send_index(&holders.iter().collect::<Vec<_>>(), dir, update, needed).await;
        if acks >= needed {
            return Ok(());
        }
        Err(Error::NoNodeAnswered {
            what: format!("the index change of directory {dir}: {acks} of its {} holders acknowledged it, {needed} needed", holders.len()),
        })
    }

    /// Adds the object `path` of write `version` to its parent's index, after
    /// making sure the parent is born ([`Self::ensure_dir`]). What a commit
    /// does before its manifest is published.
    pub(crate) async fn index_commit(&self, path: &str, version: WriteVersion) -> Result<()> {
        let Some((dir, name)) = dir_index::entries_of(path).into_iter().next() else { return Ok(()) };
        self.ensure_dir(dir).await;
        self.update_index(dir, &IndexUpdate::Apply { name, change: Change::Add(version) }, quorum::change_acks(self.cfg.params.m())).await
    }

    /// Removes names from `dir`'s index (a delete's); best effort: a name
    /// left present costs later reads a manifest lookup, never a wrong answer
    /// about an object (those are checked against its manifest).
    pub(crate) async fn index_remove(&self, dir: &str, mut changes: Vec<(String, Change)>) {
        while !changes.is_empty() {
            let rest = changes.split_off(changes.len().min(MAX_BATCH));
            let update = match <[_; 1]>::try_from(std::mem::replace(&mut changes, rest)) {
                Ok([(name, change)]) => IndexUpdate::Apply { name, change },
                Err(batch) => IndexUpdate::Batch(batch),
            };
            if let Err(e) = self.update_index(dir, &update, quorum::change_acks(self.cfg.params.m())).await {
                tracing::warn!(dir, error = %e, "a delete's index change was not acknowledged by enough holders");
            }
        }
    }

    /// Makes sure directory `dir` (ending in `/`) is born, when that can be
    /// decided safely (module docs); else its reads keep falling back.
    pub(crate) async fn ensure_dir(&self, dir: &str) {
        if !self.cfg.directory_index || self.known_dirs.is_born(dir) {
            return;
        }
        let entry = entry_in_parent(dir);
        let m = self.cfg.params.m();
        if self.read_index(dir).await.is_some() {
            if let Some((parent, name)) = entry {
                // named again: a directory's delete may have removed the name
                Box::pin(self.ensure_dir(parent)).await;
                let named = IndexUpdate::Apply { name, change: Change::Add(now_version()) };
                if let Err(e) = self.update_index(parent, &named, quorum::change_acks(m)).await {
                    tracing::info!(dir, error = %e, "directory not named in its parent's index");
                    return;
                }
            }
            self.known_dirs.born(dir);
            return;
        }
        let Some((parent, name)) = entry else { return };
        let parent_index = if self.known_dirs.unbornable_now(parent) {
            None
        } else {
            Box::pin(self.ensure_dir(parent)).await;
            self.read_index(parent).await
        };
        let bornable = match &parent_index {
            Some(index) => !index.contains(&name),
            None if self.known_dirs.unbornable_now(dir) => false,
            None => list_everywhere(self, dir).await.is_empty(),
        };
        if !bornable {
            if parent_index.is_none() {
                self.known_dirs.unbornable(dir);
            }
            return;
        }
        let birth = async {
            self.update_index(parent, &IndexUpdate::Apply { name, change: Change::Add(now_version()) }, quorum::change_acks(m)).await?;
            self.update_index(dir, &IndexUpdate::Create, quorum::birth_acks(self.cfg.params.k())).await
        };
        match birth.await {
            Ok(()) => {
                tracing::debug!(dir, "directory born in the index");
                self.known_dirs.born(dir);
            }
            Err(e) => tracing::info!(dir, error = %e, "directory not born in the index; its reads ask every node"),
        }
    }

    /// What the index says lies below directory `dir` (ending in `/`): nothing,
    /// or the path of one object it names (which the caller checks: a name is
    /// present in the index only while some holder's add of it outlives the
    /// removes), or [`DirContents::Unknown`] when some index on the way did not
    /// settle (or the walk grew past [`MAX_EMPTINESS_READS`]).
    pub(crate) async fn dir_contents(&self, dir: &str) -> DirContents {
        let mut todo = vec![dir.to_string()];
        let mut reads = 0;
        while let Some(d) = todo.pop() {
            reads += 1;
            if reads > MAX_EMPTINESS_READS {
                return DirContents::Unknown;
            }
            let Some(index) = self.read_index(&d).await else { return DirContents::Unknown };
            for name in index.present() {
                match name.strip_suffix('/') {
                    Some(_) => todo.push(format!("{d}{name}")),
                    None => return DirContents::Object(format!("{d}{name}")),
                }
            }
        }
        DirContents::Empty
    }

    /// What a directory's delete removes from the index: its name in its
    /// parent and the names of `subdirs` below it, as of now (`dir_removed_at`).
    pub(crate) async fn index_remove_dir(&self, dir: &str, subdirs: &[String]) {
        self.known_dirs.forget_below(dir);
        let removed = dir_index::dir_removed_at(now_unix_ms());
        let mut by_parent: HashMap<&str, Vec<(String, Change)>> = HashMap::new();
        for (parent, name) in dir_index::dirs_below(dir, subdirs.iter().map(String::as_str)) {
            by_parent.entry(parent).or_default().push((name, removed));
        }
        join_all(by_parent.into_iter().map(|(parent, changes)| self.index_remove(parent, changes))).await;
    }
}

/// Runs `requests` together and keeps their results until `enough` holds
/// of them; the rest then get [`STRAGGLER_GRACE`] (or twice the time that
/// took) and are dropped, so that one frozen holder does not hold every
/// commit and read of its directories for the whole request timeout.
async fn gather<T, F: Future<Output = T>>(requests: impl IntoIterator<Item = F>, mut enough: impl FnMut(&[T]) -> bool) -> Vec<T> {
    let started = Instant::now();
    let mut pending: FuturesUnordered<F> = requests.into_iter().collect();
    let mut got = Vec::with_capacity(pending.len());
    let mut deadline = None;
    loop {
        let next = match deadline {
            None => pending.next().await,
            Some(d) => match tokio::time::timeout_at(d, pending.next()).await {
                Ok(next) => next,
                Err(_) => break,
            },
        };
        let Some(r) = next else { break };
        got.push(r);
        if deadline.is_none() && enough(&got) {
            deadline = Some(tokio::time::Instant::now() + STRAGGLER_GRACE.max(started.elapsed() * 2));
        }
    }
    got
}

/// The version a directory's name is added with: newer than every delete so far.
fn now_version() -> WriteVersion {
    WriteVersion { created_unix_ms: now_unix_ms(), write_id: 0 }
}
