//! The client side of fragstate: create, open, stat, list, delete and repair
//! objects over any [`Transport`]. One `Client` serves a whole process (the
//! JNI layer keeps one per JVM); it is cheap to clone.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use fragstate_core::error::{Error, Result};
use fragstate_core::format::{Manifest, ObjectSummary};
use fragstate_core::params::CodingParams;
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::dir_index::{entries_of, Change};
use fragstate_core::version::WriteVersion;
use crate::adaptive::{Adaptive, AdaptiveStats};
use crate::buffers::StripeBuffers;
use crate::config::ClientConfig;
use crate::dir_index::DirContents;
use crate::ctx::{broadcast_delete, bump, delete_on, list_everywhere, Counters, Ctx, InflightBytes, PeerSpeeds, PeerStats};
use crate::reader::ObjectReader;
use crate::transport::Transport;
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use crate::writer::ObjectWriter;

pub use crate::ctx::STRAGGLER_GRACE;

/// A snapshot of [`Counters`](crate::ctx), serializable to JSON for metrics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientStats {
    pub objects_written: u64,
    pub bytes_written: u64,
    pub objects_opened: u64,
    pub bytes_read: u64,
    pub cells_fetched: u64,
    pub bytes_fetched: u64,
    /// Stripes that needed parity (a data cell was missing, corrupt or slow).
    pub stripes_reconstructed: u64,
    pub corrupt_cells: u64,
    /// Corrupt cells reported to their holder (which verifies and rebuilds them).
    pub corrupt_cells_reported: u64,
    pub failed_requests: u64,
    /// Fragments moved to another node during a write (a holder failed or was full).
    pub fragments_replaced: u64,
    pub fragments_repaired: u64,
    /// New objects or replacement fragments that could not be placed: too few
    /// live storage nodes or failure domains. Each failed its write (a Flink
    /// checkpoint then fails; nothing is written with less redundancy).
    pub placement_failures: u64,
    /// Writes that lost to a newer write of the same path that committed
    /// first (FORMAT.md, "Versions of a path"); their close still succeeds.
    pub writes_superseded: u64,
    /// Stripe buffers reused from earlier stripes / freshly allocated (`buffers.rs`).
    pub stripe_buffers_reused: u64,
    pub stripe_buffers_allocated: u64,
    /// Distinct nodes that served at least one cell (how widely restores spread).
    pub peers_fetched_from: u64,
    /// Holders of new objects moved to a parity position for being measured slow (adaptive mode).
    pub holders_moved_to_parity: u64,
    /// Speed probes answered: peers no transfer had measured lately (adaptive mode).
    pub speed_probes: u64,
    /// Manifest lookups (opens, stats, creates) and the requests they sent.
    pub manifest_lookups: u64,
    pub manifest_requests: u64,
    /// Lookups the first round settled: the nodes placement ranks first for
    /// the path answered, no other node was asked ([`fragstate_core::lookup`]).
    pub manifest_lookups_by_path: u64,
    /// Directory index reads, those that settled (the rest asked every node
    /// instead), and every index request sent (NETWORK.md, directory index).
    pub index_reads: u64,
    pub index_reads_settled: u64,
    pub index_requests: u64,
    /// Records rebuilt from a listing of every node (a read that did not
    /// settle although enough holders answered, a top directory's first use).
    pub index_rebuilds: u64,
    /// Adaptive mode's phase and decision (`enabled` false and zeros when it is off).
    pub adaptive: AdaptiveStats,
    /// What this client's own transfers show of each peer (cell answers and
    /// fragment uploads), by node id; what reads and adaptive mode go by.
    pub peers: Vec<PeerStats>,
}

#[derive(Clone)]
pub struct Client {
    pub(crate) ctx: Arc<Ctx>,
}

impl Client {
    pub fn new(transport: Arc<dyn Transport>, cfg: ClientConfig) -> Result<Self> {
        cfg.validate()?;
        let requests = Semaphore::new(cfg.max_inflight_requests);
        let inflight_bytes = InflightBytes::new(cfg.max_inflight_bytes);
        let adaptive = Adaptive::new(&cfg);
        let ctx = Ctx {
            transport,
            cfg,
            requests,
            inflight_bytes,
            counters: Counters::default(),
            stripe_buffers: StripeBuffers::default(),
            reports_in_flight: Arc::default(),
            peer_speeds: PeerSpeeds::default(),
            probes: Semaphore::new(crate::ctx::MAX_PROBES_IN_FLIGHT),
            adaptive,
            known_dirs: Default::default(),
        };
        Ok(Client { ctx: Arc::new(ctx) })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.ctx.cfg
    }

    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.ctx.transport
    }

    /// Starts writing `path` with the client's coding parameters (in adaptive
    /// mode, the current phase's).
    pub async fn create(&self, path: &str, overwrite: bool) -> Result<ObjectWriter> {
        let params = self.ctx.new_object_params();
        params.validate()?;
        let created = self.created_for_new_write(path, overwrite).await?;
        match ObjectWriter::start(self.ctx.clone(), path, params, overwrite, created).await {
            // the phase's setting needs more live nodes than are left (one was lost since it
            // was decided): decide the next phase over the nodes live now, and try once more
            // (the path's lookup above holds for either setting)
            Err(e @ Error::InsufficientNodes { .. }) if self.ctx.end_adaptive_phase(params) => {
                tracing::warn!(path, error = %e, "adaptive phase ended early: its parameters cannot be placed on the live nodes");
                ObjectWriter::start(self.ctx.clone(), path, self.ctx.new_object_params(), overwrite, created).await
            }
            r => r,
        }
    }

    /// Starts writing `path`. Without `overwrite`, an existing object is an
    /// error; with it, the old object stays readable until the new one commits.
    pub async fn create_with(&self, path: &str, params: CodingParams, overwrite: bool) -> Result<ObjectWriter> {
        params.validate()?;
        let created = self.created_for_new_write(path, overwrite).await?;
        ObjectWriter::start(self.ctx.clone(), path, params, overwrite, created).await
    }

    /// The creation time of a new write of `path`: after the write it replaces
    /// (even within one millisecond or with a clock that went back). Without
    /// `overwrite`, an existing object is an error.
    async fn created_for_new_write(&self, path: &str, overwrite: bool) -> Result<u64> {
        let existing = self.find_manifest_to_create(path).await?;
        if !overwrite && existing.is_some() {
            return Err(Error::AlreadyExists { path: path.to_string() });
        }
        WriteVersion::next_created(existing.map(|m| m.created_unix_ms), now_unix_ms(), path)
    }

    /// Whether a new object could be written now: `k + m` live storage nodes
    /// besides this client's own, one per failure domain unless the policy
    /// allows sharing. The error is the one a write would fail with.
    pub fn check_placement(&self) -> Result<()> {
        self.ctx.place_new_object(b"fragstate placement check", self.ctx.cfg.params).map(|_| ())
    }

    pub async fn open(&self, path: &str) -> Result<ObjectReader> {
        let manifest = self.find_manifest_to_read(path).await?.ok_or_else(|| Error::NotFound { path: path.to_string() })?;
        bump(&self.ctx.counters.objects_opened, 1);
        ObjectReader::new(self.ctx.clone(), manifest)
    }

    pub async fn stat(&self, path: &str) -> Result<Option<ObjectSummary>> {
        Ok(self.find_manifest_to_read(path).await?.map(|m| m.summary()))
    }

    /// The object at `path` as a create sees it ([`Self::find_manifest_to_create`]):
    /// one round to the `3 × (k + m)` nodes placement ranks first, in a cluster of
    /// any size, where [`Self::stat`] of a path that is no object asks every node.
    /// What a directory's creation asks of each ancestor (is it a file?); it takes
    /// an object none of whose holders ranks in that window any more for missing
    /// (NETWORK.md "Manifest lookups by path": none in the simulator's churn runs).
    pub async fn stat_as_create(&self, path: &str) -> Result<Option<ObjectSummary>> {
        Ok(self.find_manifest_to_create(path).await?.map(|m| m.summary()))
    }

    /// Committed objects under `prefix` (a plain string prefix), newest
    /// version of each path, from every live node (an admin's listing).
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectSummary>> {
        Ok(list_everywhere(&self.ctx, prefix).await)
    }

    /// What `path` names: an object, an implicit directory (a prefix of at
    /// least one object path followed by `/`), or nothing. A manifest lookup
    /// whose first round does not settle asks the parent's directory index
    /// before every node ([`Self::find_manifest_and_parent`]): with a settled
    /// index a path that is nothing costs two rounds of `k + m` requests.
    pub async fn path_kind(&self, path: &str) -> Result<PathKind> {
        let (found, parent_index) = self.find_manifest_and_parent(path).await?;
        if let Some(m) = found {
            return Ok(PathKind::Object(m.summary()));
        }
        let dir = dir_prefix(path);
        if let (Some(index), Some((_, name))) = (&parent_index, entries_of(path).first()) {
            if !index.contains(&dir_name(name)) {
                return Ok(PathKind::Missing);
            }
        }
        Ok(if self.has_children(&dir).await? { PathKind::Directory } else { PathKind::Missing })
    }

    /// The direct children of directory `dir`: objects and implicit subdirectories.
    pub async fn list_children(&self, dir: &str) -> Result<Vec<Child>> {
        Ok(children_of(dir, &self.list(&dir_prefix(dir)).await?))
    }

    /// Makes directory `dir` known to the directory index (born, and named in
    /// its parent) where that can be decided safely, so that later questions
    /// about it cost `k + m` requests instead of one per node. Directories
    /// are implicit: nothing else is stored.
    pub async fn mkdirs(&self, dir: &str) -> Result<()> {
        self.ctx.ensure_dir(&dir_prefix(dir)).await;
        Ok(())
    }

    /// Deletes `path` and, with `recursive`, everything under `path/`.
    /// Reports the committed objects that were there. The object at `path`
    /// is deleted on the live holders its newest manifest names, not on every
    /// node: a holder that is down gets the delete from the others when it
    /// is back (a hint in their hello to it, else its holder check; NETWORK.md
    /// "Deletes to holders only"). A recursive delete's prefix goes to every
    /// live node (there is no holder list of a directory). Without
    /// `recursive`, a path that is a directory is deleted only if empty (its
    /// name leaves the index), else the delete fails.
    pub async fn delete(&self, path: &str, recursive: bool) -> Result<DeleteReport> {
        let target = DeleteTarget::Path(path.to_string());
        let mut removed = DeleteStats::default();
        let entry = entries_of(path).into_iter().next();
        // (a file's delete reads no index: its lookup settles in the first round; only a
        // path that is no file reads its parent's, which then says whether it is a directory)
        let (found, parent_index) = self.find_manifest_and_parent(path).await?;
        if let Some(m) = &found {
            let live: HashSet<NodeId> = self.ctx.transport.live_nodes().into_iter().map(|n| n.id).collect();
            let holders: Vec<NodeId> = m.holders.iter().filter(|h| live.contains(*h)).cloned().collect::<BTreeSet<_>>().into_iter().collect();
            removed += if holders.is_empty() { broadcast_delete(&self.ctx, &target).await? } else { delete_on(&self.ctx, &holders, &target).await? };
            if let Some((parent, name)) = &entry {
                self.ctx.index_remove(parent, vec![(name.clone(), Change::Remove(m.write_version()))]).await;
            }
        }
        let mut objects = found.is_some() as u64;
        let dir = dir_prefix(path);
        let named_dir = match (&parent_index, &entry) {
            (Some(index), Some((_, name))) => index.contains(&dir_name(name)),
            _ => true,
        };
        if recursive {
            let below = self.list(&dir).await?;
            objects += below.len() as u64;
            removed += broadcast_delete(&self.ctx, &DeleteTarget::Prefix(dir.clone())).await?;
            self.index_remove_objects(&dir, &below).await;
        } else if found.is_none() && named_dir {
            if self.has_children(&dir).await? {
                return Err(Error::InvalidState { path: path.to_string(), reason: "the directory is not empty (use a recursive delete)".into() });
            }
            self.ctx.index_remove_dir(&dir, &[]).await;
        }
        Ok(DeleteReport { objects, removed })
    }

    /// Whether anything lies below directory `dir` (ending in `/`): by the
    /// index, an object it names checked against its manifest; by a listing
    /// of every node when the index does not settle or names an object that
    /// is not there.
    async fn has_children(&self, dir: &str) -> Result<bool> {
        match self.ctx.dir_contents(dir).await {
            DirContents::Empty => Ok(false),
            DirContents::Object(path) if self.stat(&path).await?.is_some() => Ok(true),
            DirContents::Object(_) | DirContents::Unknown => Ok(!list_everywhere(&self.ctx, dir).await.is_empty()),
        }
    }

    /// A recursive delete's index changes: each object's name removed up to
    /// its version, then the directory's and its subdirectories' names.
    async fn index_remove_objects(&self, dir: &str, objects: &[ObjectSummary]) {
        let mut names = Vec::with_capacity(objects.len());
        let mut subdirs = BTreeSet::new();
        for o in objects {
            let entries = entries_of(&o.path);
            let Some((parent, name)) = entries.first() else { continue };
            names.push((*parent, name.clone(), Change::Remove(o.write_version())));
            subdirs.extend(entries.iter().map(|(d, _)| d.to_string()).filter(|d| d.starts_with(dir) && d.len() > dir.len()));
        }
        self.ctx.index_remove_each(names).await;
        self.ctx.index_remove_dir(dir, &subdirs.into_iter().collect::<Vec<_>>()).await;
    }

    /// Rebuilds every fragment of `path` whose holder is not live onto a new
    /// node, and publishes the new holders. Returns the fragments rebuilt.
    pub async fn repair(&self, path: &str) -> Result<usize> {
        let manifest = self.find_manifest(path).await?.ok_or_else(|| Error::NotFound { path: path.to_string() })?;
        crate::repair::repair_object(&self.ctx, manifest).await
    }

    /// Cell `index` of `stripe` of the object `manifest` describes, rebuilt
    /// from `k` cells of the other holders and checked against the manifest.
    pub async fn rebuild_cell(&self, manifest: &Manifest, index: usize, stripe: u32) -> Result<bytes::Bytes> {
        crate::repair::rebuild_one_cell(&self.ctx, manifest, index, stripe).await
    }

    /// Waits up to `timeout` until every corrupt-cell report this client
    /// sent has been delivered (a short-lived process, before it exits);
    /// returns whether none is left.
    pub async fn settle_reports(&self, timeout: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.ctx.reports_in_flight.load(Ordering::Acquire) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        true
    }

    /// [`Client::stats`] for as long as this client lives (`None` after):
    /// what a node reports of the client that uses it, without keeping it alive.
    pub fn stats_source(&self) -> impl Fn() -> Option<ClientStats> + Send + Sync + 'static {
        let ctx = Arc::downgrade(&self.ctx);
        move || ctx.upgrade().map(|ctx| Client { ctx }.stats())
    }

    pub fn stats(&self) -> ClientStats {
        let c = &self.ctx.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ClientStats {
            objects_written: g(&c.objects_written),
            bytes_written: g(&c.bytes_written),
            objects_opened: g(&c.objects_opened),
            bytes_read: g(&c.bytes_read),
            cells_fetched: g(&c.cells_fetched),
            bytes_fetched: g(&c.bytes_fetched),
            stripes_reconstructed: g(&c.stripes_reconstructed),
            corrupt_cells: g(&c.corrupt_cells),
            corrupt_cells_reported: g(&c.corrupt_cells_reported),
            failed_requests: g(&c.failed_requests),
            fragments_replaced: g(&c.fragments_replaced),
            fragments_repaired: g(&c.fragments_repaired),
            placement_failures: g(&c.placement_failures),
            writes_superseded: g(&c.writes_superseded),
            stripe_buffers_reused: g(&self.ctx.stripe_buffers.reused),
            stripe_buffers_allocated: g(&self.ctx.stripe_buffers.allocated),
            peers_fetched_from: c.fetch_sources.lock().unwrap_or_else(|p| p.into_inner()).len() as u64,
            holders_moved_to_parity: g(&c.holders_moved_to_parity),
            speed_probes: g(&c.speed_probes),
            manifest_lookups: g(&c.manifest_lookups),
            manifest_requests: g(&c.manifest_requests),
            manifest_lookups_by_path: g(&c.manifest_lookups_by_path),
            index_reads: g(&c.index_reads),
            index_reads_settled: g(&c.index_reads_settled),
            index_requests: g(&c.index_requests),
            index_rebuilds: g(&c.index_rebuilds),
            adaptive: self.ctx.adaptive.as_ref().map(|a| a.stats()).unwrap_or_default(),
            peers: self.ctx.peer_speeds.snapshot(),
        }
    }
}

/// What [`Client::delete`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeleteReport {
    /// Committed objects found under the deleted path.
    pub objects: u64,
    /// Manifest copies, fragments and bytes removed, summed over the nodes.
    pub removed: DeleteStats,
}

/// What a path names; see [`Client::path_kind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathKind {
    Object(ObjectSummary),
    Directory,
    Missing,
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// Full path of the child (no trailing `/`).
    pub path: String,
    pub is_dir: bool,
    /// Object bytes; 0 for a directory.
    pub length: u64,
    /// Commit time of the object, or the newest object below a directory.
    pub modified_unix_ms: u64,
}

/// An index entry's name for a child directory: `x/` for `x`.
fn dir_name(name: &str) -> String {
    format!("{name}/")
}

/// `dir` with exactly one trailing `/`: the prefix its descendants share.
pub fn dir_prefix(dir: &str) -> String {
    format!("{}/", dir.trim_end_matches('/'))
}

/// Groups object summaries under `dir` into its direct children.
pub fn children_of(dir: &str, objects: &[ObjectSummary]) -> Vec<Child> {
    let prefix = dir_prefix(dir);
    let mut out: BTreeMap<String, Child> = BTreeMap::new();
    for o in objects {
        let Some(rest) = o.path.strip_prefix(&prefix) else { continue };
        if rest.is_empty() {
            continue;
        }
        match rest.split_once('/') {
            Some((name, _)) => {
                let path = format!("{prefix}{name}");
                let e = out.entry(path.clone()).or_insert(Child { path, is_dir: true, length: 0, modified_unix_ms: 0 });
                e.modified_unix_ms = e.modified_unix_ms.max(o.created_unix_ms);
            }
            None => {
                out.insert(o.path.clone(), Child { path: o.path.clone(), is_dir: false, length: o.length, modified_unix_ms: o.created_unix_ms });
            }
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(path: &str, length: u64, t: u64) -> ObjectSummary {
        ObjectSummary { path: path.into(), length, created_unix_ms: t, write_id: 0 }
    }

    #[test]
    fn children_group_implicit_directories() {
        let objs = [
            obj("fs://c/ck/job/chk-1/a", 10, 5),
            obj("fs://c/ck/job/chk-1/b", 20, 7),
            obj("fs://c/ck/job/chk-10/_metadata", 3, 9),
            obj("fs://c/ck/job/shared/x/y", 1, 2),
            obj("fs://c/ck/job/taskowned", 4, 1),
            obj("fs://c/ck/jobber/z", 1, 1),
        ];
        let kids = children_of("fs://c/ck/job/", &objs);
        let names: Vec<(&str, bool, u64, u64)> = kids.iter().map(|c| (c.path.as_str(), c.is_dir, c.length, c.modified_unix_ms)).collect();
        assert_eq!(
            names,
            vec![
                ("fs://c/ck/job/chk-1", true, 0, 7),
                ("fs://c/ck/job/chk-10", true, 0, 9),
                ("fs://c/ck/job/shared", true, 0, 2),
                ("fs://c/ck/job/taskowned", false, 4, 1),
            ]
        );
        assert_eq!(dir_prefix("a/b//"), "a/b/");
    }
}
