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
//!   separate repair pass.
//! - A read that does not settle although `k` holders answered and some keep
//!   a record (too many lost their completeness at once: declared dead, or
//!   ranked out by a view change, with their records kept) is *rebuilt*: the
//!   merge of the answers and a listing of every node below the directory
//!   fill every holder, complete. One listing per directory and episode
//!   (at most one per `UNSETTLED_FOR`), instead of a record that never
//!   settles again, whose every question would go to every node.
//! - A commit adds its name to its parent's index before its manifest is
//!   published ([`quorum::change_acks`] = `m + 1` acknowledgements, else the
//!   write fails), so a visible object is always in its parent's index.
//! - A directory no holder keeps a record of is born (its records made
//!   complete and empty: [`quorum::birth_acks`]) when its parent's settled
//!   index does not name it; otherwise (a top directory nobody created
//!   through the index, or one whose records were all lost) it is rebuilt.
//!   Its name is added to the parent first, so a birth cut short leaves a
//!   named directory with no complete record, which the next read rebuilds.

use std::collections::BTreeMap;

use std::time::Instant;

use futures::future::join_all;

use fragstate_core::dir_index::quorum::{self, Answer, IndexUpdate, Settled};
use fragstate_core::dir_index::{self, entry_in_parent, Change, DirIndex};
use fragstate_core::error::{Error, Result};
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::version::WriteVersion;

use crate::ctx::{bump, gather, list_everywhere, timed, Ctx};

/// Names in one index request at most (a recursive delete's removes of a
/// large directory go in several; names are at most a path's length).
const MAX_BATCH: usize = 256;
/// Subdirectory reads an emptiness check makes at most before it falls back.
const MAX_EMPTINESS_READS: usize = 64;

/// Why a directory's index read gave no index ([`Ctx::settle_index`]).
enum NotSettled {
    /// The client's index is off.
    Off,
    /// Fewer than `k` holders answered: nothing can be decided.
    TooFewAnswers,
    /// No holder keeps a record of the directory.
    NoRecord,
    /// The rebuild was not taken by `k` holders, or was tried too recently.
    RebuildFailed,
}

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
    /// holders' answers do not settle it and it cannot be rebuilt (ask every
    /// node instead; [`Self::settle_index`] says why).
    pub(crate) async fn read_index(&self, dir: &str) -> Option<DirIndex> {
        self.settle_index(dir).await.ok()
    }

    /// Asks `dir`'s holders; a settled read fills the holders behind it, an
    /// unsettled one of a directory some holder keeps a record of is rebuilt
    /// ([`Self::rebuild_index`]).
    async fn settle_index(&self, dir: &str) -> std::result::Result<DirIndex, NotSettled> {
        if !self.cfg.directory_index {
            return Err(NotSettled::Off);
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
        match quorum::settle(answers.iter().map(|(_, a)| a), k) {
            Settled::Index(index) => {
                bump(&self.counters.index_reads_settled, 1);
                // Partial or missing records are filled with the merge (complete from then
                // on); complete ones that missed a change (up to k - 1 may) get the changes
                // they lack, so that none keeps an add whose remove the others prune (a
                // pruned remove no longer hides it). Only the changes: with commits in
                // flight most reads of a busy directory find a holder a change behind,
                // and a fill is the whole record (`shared/`'s names every file written).
                let fill = IndexUpdate::Fill(index.clone());
                let mut to_fill = Vec::new();
                let mut patches = Vec::new();
                for (n, a) in &answers {
                    match a {
                        Some(r) if r.complete && r.index == index => {}
                        Some(r) if r.complete => patches.push((*n, IndexUpdate::Batch(index.changes_beyond(&r.index)))),
                        _ => to_fill.push(*n),
                    }
                }
                if !(to_fill.is_empty() && patches.is_empty()) {
                    // (the whole record once, however many holders it fills)
                    let sent: Vec<(&NodeId, &IndexUpdate)> = to_fill.iter().map(|n| (*n, &fill)).chain(patches.iter().map(|(n, u)| (*n, u))).collect();
                    let done = self.send_updates(dir, &sent, sent.len()).await;
                    tracing::debug!(dir, behind = sent.len(), done, "index holders behind a settled read brought level");
                }
                Ok(index)
            }
            Settled::Unsettled { complete, needed, merged } => {
                tracing::debug!(dir, complete, needed, answered = answers.len(), "index read did not settle");
                if answers.len() < k {
                    return Err(NotSettled::TooFewAnswers);
                }
                if answers.iter().all(|(_, a)| a.is_none()) {
                    return Err(NotSettled::NoRecord);
                }
                self.rebuild_index(dir, merged).await.ok_or(NotSettled::RebuildFailed)
            }
        }
    }

    /// Rebuilds the record of `dir` from `answers` (the merge of at least
    /// `k` holders' answers, complete or not) and a listing of every node
    /// below it, and fills every holder with it (complete), once per
    /// `UNSETTLED_FOR` ([`crate::known_dirs`]) at most; the index if `k`
    /// took it. Holders lose completeness without losing their records (a
    /// node declared dead, or ranked out by a view change, keeps them), so
    /// a change done before (acknowledged by `m + 1` holders) is in the
    /// answers of any `k` unless every holder that took it lost its records
    /// since, and a commit's object is in the listing once its manifest is
    /// published (NETWORK.md, "What still goes to every node": "rebuilt").
    async fn rebuild_index(&self, dir: &str, answers: DirIndex) -> Option<DirIndex> {
        if self.known_dirs.rebuilt_lately(dir) {
            return None;
        }
        self.known_dirs.rebuilt(dir);
        let started = Instant::now();
        let listed = list_everywhere(self, dir).await;
        let mut index = answers;
        index.merge(&DirIndex::from_listing(dir, listed.iter().map(|o| (o.path.as_str(), o.write_version()))));
        let holders = self.index_holders(dir);
        let needed = quorum::birth_acks(self.cfg.params.k());
        let filled = self.send_index(&holders.iter().collect::<Vec<_>>(), dir, &IndexUpdate::Fill(index.clone()), needed).await;
        bump(&self.counters.index_rebuilds, 1);
        tracing::info!(dir, objects_listed = listed.len(), names = index.len(), filled, needed, millis = started.elapsed().as_millis() as u64, "directory index rebuilt from its holders' answers and a listing of every node");
        (filled >= needed).then_some(index)
    }

    /// Sends `update` to `nodes`; returns how many acknowledged it (once
    /// `needed` have, the others get [`gather`]'s grace).
    async fn send_index(&self, nodes: &[&NodeId], dir: &str, update: &IndexUpdate, needed: usize) -> usize {
        self.send_updates(dir, &nodes.iter().map(|n| (*n, update)).collect::<Vec<_>>(), needed).await
    }

    /// Sends each node its update of `dir`; [`Self::send_index`].
    async fn send_updates(&self, dir: &str, updates: &[(&NodeId, &IndexUpdate)], needed: usize) -> usize {
        bump(&self.counters.index_requests, updates.len() as u64);
        let sends = updates.iter().map(|(n, u)| timed(self, n, self.transport.index_update(n, dir, u)));
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

    /// Makes sure directory `dir` (ending in `/`) is born and named in its
    /// parent (module docs); else its reads keep falling back.
    ///
    /// One check of a directory at a time per client: the commits into a
    /// directory whose memory ran out wait for one check instead of each
    /// making it. A directory this client saw born is only named again (its
    /// record is not read: `shared/`'s names every file written; if it lost
    /// its completeness meanwhile, its next read rebuilds it).
    pub(crate) async fn ensure_dir(&self, dir: &str) {
        if !self.cfg.directory_index || self.known_dirs.is_born(dir) {
            return;
        }
        let check = self.known_dirs.check_of(dir);
        let _one_at_a_time = check.lock().await;
        if self.known_dirs.is_born(dir) {
            return;
        }
        let entry = entry_in_parent(dir);
        // (a directory this client saw born is only named again)
        let settled = if self.known_dirs.was_born(dir) { Ok(()) } else { self.settle_index(dir).await.map(drop) };
        match settled {
            Ok(()) => {}
            Err(NotSettled::NoRecord) => {
                // no holder keeps a record: a new directory (its parent's settled index does
                // not name it: born empty), else one whose records were all lost, or a
                // top directory nobody made through the index (rebuilt from a listing)
                let parent_index = match &entry {
                    Some((parent, _)) => {
                        Box::pin(self.ensure_dir(parent)).await;
                        self.read_index(parent).await
                    }
                    None => None,
                };
                if let (Some(index), Some((parent, name))) = (&parent_index, &entry) {
                    if !index.contains(name) {
                        if self.birth(dir, parent, name).await {
                            self.known_dirs.born(dir);
                        }
                        return;
                    }
                }
                if self.rebuild_index(dir, DirIndex::default()).await.is_none() {
                    return;
                }
            }
            Err(_) => return,
        }
        if let Some((parent, name)) = entry {
            // named again: a directory's delete may have removed the name
            Box::pin(self.ensure_dir(parent)).await;
            if let Err(e) = self.name_in_parent(parent, &name).await {
                tracing::info!(dir, error = %e, "directory not named in its parent's index");
                return;
            }
        }
        self.known_dirs.born(dir);
    }

    /// Adds the name of a directory (`name`, ending in `/`) to `parent`'s
    /// index, newer than every delete so far.
    async fn name_in_parent(&self, parent: &str, name: &str) -> Result<()> {
        let named = IndexUpdate::Apply { name: name.to_string(), change: Change::Add(now_version()) };
        self.update_index(parent, &named, quorum::change_acks(self.cfg.params.m())).await
    }

    /// The birth of `dir`, which its parent's settled index does not name:
    /// named there first (a birth cut short leaves a named, unborn directory,
    /// whose next read rebuilds it), then its record made complete and empty.
    async fn birth(&self, dir: &str, parent: &str, name: &str) -> bool {
        let birth = async {
            self.name_in_parent(parent, name).await?;
            self.update_index(dir, &IndexUpdate::Create, quorum::birth_acks(self.cfg.params.k())).await
        };
        match birth.await {
            Ok(()) => {
                tracing::debug!(dir, "directory born in the index");
                true
            }
            Err(e) => {
                tracing::info!(dir, error = %e, "directory not born in the index; its reads ask every node");
                false
            }
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
        let entries = dir_index::dirs_below(dir, subdirs.iter().map(String::as_str));
        self.index_remove_each(entries.into_iter().map(|(parent, name)| (parent, name, removed))).await;
    }

    /// Removes each (directory, name, change) from its directory's index,
    /// one batch per directory, the directories at once ([`Self::index_remove`]).
    pub(crate) async fn index_remove_each<'a>(&self, changes: impl IntoIterator<Item = (&'a str, String, Change)>) {
        let mut by_dir: BTreeMap<&str, Vec<(String, Change)>> = BTreeMap::new();
        for (dir, name, change) in changes {
            by_dir.entry(dir).or_default().push((name, change));
        }
        join_all(by_dir.into_iter().map(|(dir, changes)| self.index_remove(dir, changes))).await;
    }
}

/// The version a directory's name is added with: newer than every delete so far.
fn now_version() -> WriteVersion {
    WriteVersion { created_unix_ms: now_unix_ms(), write_id: 0 }
}
