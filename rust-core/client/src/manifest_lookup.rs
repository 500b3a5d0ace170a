//! Finding a path's manifest (`fragstate_core::lookup` decides whom to ask):
//! the lookups of reads, creates and repairs, in rounds of requests to the
//! nodes placement ranks first for the path, and every live node only when
//! their answers cannot settle it.

use std::sync::Arc;

use fragstate_core::error::{Error, Result};
use fragstate_core::format::Manifest;
use fragstate_core::ids::NodeId;
use fragstate_core::dir_index::{entries_of, DirIndex};
use fragstate_core::lookup::{self, CreateLookup};

use crate::client::Client;
use crate::ctx::{bump, gather, timed, RETRY_BACKOFF};

impl Client {
    /// The newest manifest of `path` held by any live node, every live
    /// node's answer waited for (writes take their version from it).
    pub async fn find_manifest(&self, path: &str) -> Result<Option<Arc<Manifest>>> {
        self.lookup_manifest(path, false).await
    }

    /// The manifest lookup of reads: as [`Self::find_manifest`], but once a
    /// manifest has come, the nodes that have not answered within
    /// [`STRAGGLER_GRACE`](crate::ctx::STRAGGLER_GRACE) (or twice the time the first manifest took) count as
    /// down — as a down node's copy would not be seen either. Without this one
    /// node whose answers queue behind cells on a slow link held every open of
    /// a restore, once for the whole 120 s request timeout
    /// (`ci/bench-adaptive.sh`, setting a).
    pub(crate) async fn find_manifest_to_read(&self, path: &str) -> Result<Option<Arc<Manifest>>> {
        self.lookup_manifest(path, true).await
    }

    /// [`Self::find_manifest_to_read`], and the settled index of the path's
    /// parent when the lookup read it (the first round did not settle).
    pub(crate) async fn find_manifest_and_parent(&self, path: &str) -> Result<(Option<Arc<Manifest>>, Option<DirIndex>)> {
        self.lookup_manifest_and_parent(path, true, true).await
    }

    /// The manifest lookup of creates: one round to the nodes placement ranks
    /// first for `path`, up to [`lookup::CREATE_WINDOW`] × `k + m` of them
    /// ([`lookup::create_candidates`]); a path none of them holds, all of them
    /// answering, does not exist — what a create of a new checkpoint file
    /// asks, in a cluster of any size. Copies too few to settle the newest
    /// write, or nodes that did not answer: a read's lookup. In a cluster no
    /// larger than the window: a read's lookup that does not read the parent's
    /// directory index (its first round, then every node: at most the window).
    /// Reading it there made every create of a RocksDB state file in a cluster
    /// of fewer than 18 nodes read `shared/`'s whole record, which names every
    /// file written: the 10-minute soaks' checkpoint times grew with it.
    pub(crate) async fn find_manifest_to_create(&self, path: &str) -> Result<Option<Arc<Manifest>>> {
        let view = self.ctx.transport.live_nodes();
        let candidates = lookup::create_candidates(path.as_bytes(), &view, self.ctx.cfg.params.fragments(), self.ctx.cfg.placement);
        if candidates.len() < view.len() {
            let round = self.ask_for_manifest(path, &candidates, false).await;
            match lookup::create_round(round.newest.as_deref(), round.copies, round.failed.len()) {
                CreateLookup::Found | CreateLookup::Missing => {
                    // (a create that asks everyone after this round counts one lookup, there)
                    bump(&self.ctx.counters.manifest_lookups, 1);
                    bump(&self.ctx.counters.manifest_lookups_by_path, 1);
                    return Ok(round.newest);
                }
                // (rare: a node of the window that did not answer; the parent's index
                // then spares asking every node of a large cluster)
                CreateLookup::AskEveryone => return self.find_manifest(path).await,
            }
        }
        Ok(self.lookup_manifest_and_parent(path, false, false).await?.0)
    }

    /// The newest manifest of `path` on the live nodes. First the nodes
    /// placement ranks first for the path (`k + m` of them: one round trip in
    /// steady state); every other live node only when their answers do not
    /// settle it ([`lookup`]: after churn, or when the path does not exist).
    /// A node whose request failed may hold it (a dropped stream, a node that
    /// has not taken this client's hello yet), so the failed ones still live
    /// are asked again after [`RETRY_BACKOFF`]; "not there" only when every
    /// live node said so, else an error naming the nodes that kept failing —
    /// never a wrong "no such object" (a restore once read one for an
    /// existing object).
    async fn lookup_manifest(&self, path: &str, cut_stragglers: bool) -> Result<Option<Arc<Manifest>>> {
        Ok(self.lookup_manifest_and_parent(path, cut_stragglers, true).await?.0)
    }

    /// [`Self::lookup_manifest`]. When the first round does not settle, the
    /// settled index of the path's parent answers first if `read_parent`
    /// (returned with the result): a path it does not name is no visible
    /// object (a commit names its object before publishing it), so no other
    /// node is asked.
    async fn lookup_manifest_and_parent(&self, path: &str, cut_stragglers: bool, read_parent: bool) -> Result<(Option<Arc<Manifest>>, Option<DirIndex>)> {
        bump(&self.ctx.counters.manifest_lookups, 1);
        let view = self.ctx.transport.live_nodes();
        let candidates = lookup::lookup_candidates(path.as_bytes(), &view, self.ctx.cfg.params.fragments(), self.ctx.cfg.placement);
        let first = self.ask_for_manifest(path, &candidates, cut_stragglers).await;
        if first.newest.as_ref().is_some_and(|m| lookup::first_round_settles(m, first.copies)) {
            bump(&self.ctx.counters.manifest_lookups_by_path, 1);
            return Ok((first.newest, None));
        }
        let parent = match entries_of(path).into_iter().next() {
            Some((dir, name)) if read_parent => self.ctx.read_index(dir).await.map(|index| (index, name)),
            _ => None,
        };
        if let Some((index, name)) = &parent {
            if !index.contains(name) {
                return Ok((None, parent.map(|(index, _)| index)));
            }
        }
        let parent = parent.map(|(index, _)| index);
        let rest: Vec<NodeId> = view.into_iter().map(|n| n.id).filter(|n| !candidates.contains(n)).collect();
        let others = self.ask_for_manifest(path, &rest, cut_stragglers).await;
        let asked = candidates.len() + rest.len();
        let mut best = newer(first.newest, others.newest);
        let mut failed = first.failed;
        failed.extend(others.failed);
        for pause in RETRY_BACKOFF {
            if best.is_some() || failed.is_empty() {
                break;
            }
            tokio::time::sleep(pause).await;
            let live_now: Vec<NodeId> = self.ctx.transport.live_nodes().into_iter().map(|n| n.id).collect();
            let again: Vec<NodeId> = failed.iter().map(|(n, _)| n.clone()).filter(|n| live_now.contains(n)).collect();
            let round = self.ask_for_manifest(path, &again, cut_stragglers).await;
            (best, failed) = (round.newest, round.failed);
        }
        match (best, failed.first()) {
            (Some(m), _) => Ok((Some(m), parent)),
            (None, None) => Ok((None, parent)),
            (None, Some(_)) if failed.len() == asked => Err(Error::NoNodeAnswered { what: format!("the manifest lookup of {path}") }),
            (None, Some((node, e))) => Err(Error::NodeUnavailable {
                node: node.clone(),
                reason: format!(
                    "the manifest lookup of {path} failed on it ({e}){} after {} retries, and the nodes that answered do not hold it",
                    if failed.len() > 1 { format!(" and on {} other live nodes", failed.len() - 1) } else { String::new() },
                    RETRY_BACKOFF.len()
                ),
            }),
        }
    }

    /// One round of a manifest lookup: asks `nodes` for the newest manifest
    /// of `path`. With `cut_stragglers`, once a manifest has come, nodes that
    /// have not answered within [`STRAGGLER_GRACE`](crate::ctx::STRAGGLER_GRACE) (or twice the time it
    /// took) count as down.
    async fn ask_for_manifest(&self, path: &str, nodes: &[NodeId], cut_stragglers: bool) -> ManifestRound {
        bump(&self.ctx.counters.manifest_requests, nodes.len() as u64);
        let asks = nodes.iter().map(|n| async move { (n, timed(&self.ctx, n, self.ctx.transport.get_manifest(n, path)).await) });
        let found = |got: &[(&NodeId, Result<_>)]| cut_stragglers && got.iter().any(|(_, a)| matches!(a, Ok(Some(_))));
        let answers = gather(asks, found).await;
        if answers.len() < nodes.len() {
            tracing::debug!(path, stragglers = nodes.len() - answers.len(), "manifest lookup: nodes that had not answered count as down");
        }
        let mut round = ManifestRound::default();
        for (node, answer) in answers {
            match answer {
                Ok(Some(m)) => round.add(m),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(path, %node, error = %e, "manifest lookup failed on one node");
                    round.failed.push((node.clone(), e));
                }
            }
        }
        round
    }
}

/// What one round of a manifest lookup found.
#[derive(Default)]
struct ManifestRound {
    /// The newest manifest among the answers.
    newest: Option<Arc<Manifest>>,
    /// Answers holding the newest one's write (any revision of it).
    copies: usize,
    /// The nodes whose request failed, with why.
    failed: Vec<(NodeId, Error)>,
}

impl ManifestRound {
    fn add(&mut self, m: Arc<Manifest>) {
        match self.newest.as_ref().map(|b| m.write_version().cmp(&b.write_version())) {
            None | Some(std::cmp::Ordering::Greater) => (self.newest, self.copies) = (Some(m), 1),
            Some(std::cmp::Ordering::Equal) => {
                self.copies += 1;
                if newer_than(&m, self.newest.as_deref()) {
                    self.newest = Some(m);
                }
            }
            Some(std::cmp::Ordering::Less) => {}
        }
    }
}

fn newer_than(m: &Manifest, than: Option<&Manifest>) -> bool {
    than.is_none_or(|b| m.version_key() > b.version_key())
}

/// The newer of two lookup results.
fn newer(a: Option<Arc<Manifest>>, b: Option<Arc<Manifest>>) -> Option<Arc<Manifest>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if newer_than(&b, Some(&a)) { b } else { a }),
        (a, b) => a.or(b),
    }
}
