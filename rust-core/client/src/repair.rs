//! Rebuilding a lost fragment from the surviving ones. Used by the writer
//! when a holder fails mid-write, and by repair when a holder is gone for good.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::join_all;
use futures::StreamExt;

use crate::ctx::{bump, Ctx};
use fragstate_core::codec::StripeCodec;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{FragmentHeader, Manifest, StripeInfo};
use fragstate_core::ids::WriteId;
use fragstate_core::placement;
use crate::reader::FragmentSet;
use crate::transport::FragmentSink;
use fragstate_core::ids::NodeId;
use fragstate_core::placement::NodeInfo;
use fragstate_core::version::{self, ManifestPut, WriteVersion};

/// One object's fragments while they are being written or repaired.
pub(crate) struct Fragments<'a> {
    pub path: &'a Arc<str>,
    pub write_id: WriteId,
    pub created_unix_ms: u64,
    pub codec: &'a StripeCodec,
    pub holders: &'a [NodeId],
    pub stripes: &'a [StripeInfo],
}

impl<'a> Fragments<'a> {
    /// The fragments of the committed object `manifest` describes, on `holders`
    /// (its own, or the ones a repair or move is changing).
    pub fn of_manifest(manifest: &'a Manifest, path: &'a Arc<str>, codec: &'a StripeCodec, holders: &'a [NodeId]) -> Self {
        Fragments { path, write_id: manifest.write_id, created_unix_ms: manifest.created_unix_ms, codec, holders, stripes: &manifest.stripes }
    }

    pub fn header(&self, index: usize) -> FragmentHeader {
        FragmentHeader {
            path: self.path.to_string(),
            write_id: self.write_id,
            index: index as u8,
            params: *self.codec.params(),
            created_unix_ms: self.created_unix_ms,
        }
    }

    /// Picks a node for fragment `index` that holds no other fragment of the
    /// object, outside the others' failure domains, and not in `avoid`.
    pub fn choose_replacement(&self, ctx: &Ctx, index: usize, avoid: &HashSet<NodeId>) -> Result<NodeInfo> {
        let live = ctx.transport.live_nodes();
        let mut avoid = avoid.clone();
        avoid.extend(self.holders.iter().cloned());
        avoid.extend(ctx.cfg.exclude_node.clone());
        let taken: HashSet<&str> = live
            .iter()
            .filter(|n| self.holders.iter().enumerate().any(|(i, h)| i != index && *h == n.id))
            .map(|n| &*n.domain)
            .collect();
        let policy = ctx.cfg.placement;
        let p = placement::place(self.path.as_bytes(), &live, 1, &avoid, &taken, policy, (self.codec.params().k(), self.codec.params().m()))
            .inspect_err(|_| bump(&ctx.counters.placement_failures, 1))?;
        if p.shared_domains {
            tracing::warn!(path = %self.path, fragment = index, node = %p.nodes[0].id, "replacement shares a failure domain with another fragment");
        }
        Ok(p.nodes.into_iter().next().unwrap())
    }

    /// Cell `index` of stripe `s`, rebuilt from `k` other fragments and checked.
    pub(crate) async fn rebuild_cell(&self, ctx: &Ctx, sources: &FragmentSet<'_>, index: usize, s: u32, info: &StripeInfo) -> Result<(u32, u64, Bytes)> {
        let fetched = sources.fetch(ctx, s, info, Some(index)).await?;
        let cells = self.codec.rebuild_cells(self.path, s, info, &fetched.cells)?;
        let cell = cells[index].clone();
        if !self.codec.cell_is_valid(info, index, &cell) {
            return Err(Error::format(format!("{} stripe {s}", self.path), format!("rebuilt cell {index} does not match its checksum")));
        }
        Ok((s, info.cell_checksums[index], cell))
    }

    /// Opens fragment `index` on a new node and streams into it every cell of
    /// the stripes recorded so far, each rebuilt from `k` other fragments,
    /// then `next_cell` (the writer's stripe in flight: stripe, checksum, cell) if
    /// given. Tries further nodes while the chosen one fails. Returns the new
    /// holder and its open sink (not yet finished: the writer keeps appending).
    pub async fn rebuild_onto_new_node(
        &self,
        ctx: &Ctx,
        index: usize,
        avoid: &mut HashSet<NodeId>,
        next_cell: Option<(u32, u64, Bytes)>,
    ) -> Result<(NodeId, Box<dyn FragmentSink>)> {
        let sources = FragmentSet { path: self.path, write_id: self.write_id, holders: self.holders, codec: self.codec };
        loop {
            let target = self.choose_replacement(ctx, index, avoid)?.id;
            let attempt = async {
                let mut sink = ctx.transport.open_fragment(&target, self.header(index)).await?;
                // Stripes are fetched and rebuilt `read_ahead` at a time, in
                // order, while earlier cells are being sent: over a network a
                // one-stripe-at-a-time loop waits a round trip per stripe.
                let sources = &sources;
                // (Collected first: a closure inside the stream type trips
                // the higher-ranked `Send` check of spawned callers.)
                let jobs: Vec<_> = self.stripes.iter().enumerate().map(|(s, info)| self.rebuild_cell(ctx, sources, index, s as u32, info)).collect();
                let mut rebuilt = futures::stream::iter(jobs).buffered(ctx.cfg.read_ahead.max(1));
                while let Some(r) = rebuilt.next().await {
                    let (s, checksum, cell) = r?;
                    sink.put_cell(s, checksum, cell).await?;
                }
                drop(rebuilt);
                if let Some((stripe, checksum, cell)) = next_cell.clone() {
                    sink.put_cell(stripe, checksum, cell).await?;
                }
                Ok::<_, Error>(sink)
            };
            match attempt.await {
                Ok(sink) => return Ok((target, sink)),
                Err(e) if e.is_node_fault() && !matches!(e, Error::CellNotFound { .. }) => {
                    tracing::warn!(path = %self.path, fragment = index, node = %target, error = %e, "replacement node failed, trying another");
                    avoid.insert(target);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Cell `index` of `stripe` of a committed object, rebuilt from `k` cells of
/// the other holders and checked against the manifest (the scrub's rebuild of
/// a bad stored cell: its holder then writes it back).
pub(crate) async fn rebuild_one_cell(ctx: &Ctx, manifest: &Manifest, index: usize, stripe: u32) -> Result<Bytes> {
    manifest.validate()?;
    let info = manifest.stripes.get(stripe as usize).ok_or_else(|| Error::InvalidState {
        path: manifest.path.clone(),
        reason: format!("stripe {stripe} is past the object's {} stripes", manifest.stripes.len()),
    })?;
    if index >= manifest.holders.len() {
        return Err(Error::invalid("fragment index", index, format!("< k + m = {}", manifest.holders.len())));
    }
    let codec = StripeCodec::new(manifest.params)?;
    let path: Arc<str> = Arc::from(manifest.path.as_str());
    let frags = Fragments::of_manifest(manifest, &path, &codec, &manifest.holders);
    let sources = FragmentSet { path: &path, write_id: manifest.write_id, holders: &manifest.holders, codec: &codec };
    let (_, _, cell) = frags.rebuild_cell(ctx, &sources, index, stripe, info).await?;
    Ok(cell)
}

/// Rebuilds every fragment of a committed object whose holder is not live,
/// then publishes a new manifest revision to all holders. Fragments that
/// cannot be rebuilt now (no node left to place them on, with `m` nodes
/// gone) do not hold back the ones that were: those are published, and the
/// error of the first failure is returned for the next round. (Before, one
/// unplaceable fragment discarded the others' rebuild every round — each a
/// full read of `k` fragments — and the next round found its own earlier
/// rebuild in the way: "already started".)
pub(crate) async fn repair_object(ctx: &Ctx, manifest: Arc<Manifest>) -> Result<usize> {
    let live: HashSet<NodeId> = ctx.transport.live_nodes().into_iter().map(|n| n.id).collect();
    let lost: Vec<usize> = (0..manifest.holders.len()).filter(|&i| !live.contains(&manifest.holders[i])).collect();
    if lost.is_empty() {
        return Ok(0);
    }
    let codec = StripeCodec::new(manifest.params)?;
    let path: Arc<str> = Arc::from(manifest.path.as_str());
    let mut holders = manifest.holders.clone();
    let mut avoid: HashSet<NodeId> = HashSet::new();
    let mut repaired = 0;
    let mut unrepaired: Option<Error> = None;
    for &i in &lost {
        match replace_finished_fragment(ctx, &path, &manifest, &codec, &mut holders, i, &mut avoid).await {
            Ok(()) => {
                bump(&ctx.counters.fragments_repaired, 1);
                repaired += 1;
            }
            // No node for this one means none for the rest either.
            Err(e) => {
                unrepaired = Some(e);
                break;
            }
        }
    }
    if repaired > 0 {
        let new = Manifest { holders, revision: version::next_revision(manifest.revision, &manifest.path)?, ..(*manifest).clone() };
        if let Published::Superseded { by, .. } = publish_manifest(ctx, new, &codec, &mut avoid).await? {
            // Overwritten while we repaired: the rebuilt fragments belong to an
            // old version, which the new write deletes (or reclaim removes).
            tracing::info!(path = %manifest.path, newer = ?by, "object overwritten during its repair");
        }
    }
    match unrepaired {
        Some(e) => Err(e),
        None => Ok(repaired),
    }
}

/// Rebuilds fragment `index` of a fully written object onto a new node and
/// finishes it there; `holders[index]` becomes the new node.
async fn replace_finished_fragment(
    ctx: &Ctx,
    path: &Arc<str>,
    manifest: &Manifest,
    codec: &StripeCodec,
    holders: &mut [NodeId],
    index: usize,
    avoid: &mut HashSet<NodeId>,
) -> Result<()> {
    loop {
        let frags = Fragments::of_manifest(manifest, path, codec, holders);
        let (node, mut sink) = frags.rebuild_onto_new_node(ctx, index, avoid, None).await?;
        match sink.finish().await {
            Ok(()) => {
                tracing::info!(path = %path, fragment = index, from = %holders[index], to = %node, "fragment rebuilt on a new node");
                holders[index] = node;
                return Ok(());
            }
            Err(e) if e.is_node_fault() => {
                tracing::warn!(path = %path, fragment = index, node = %node, error = %e, "new holder failed before acknowledging, trying another");
                avoid.insert(node);
            }
            Err(e) => return Err(e),
        }
    }
}

/// What publishing a manifest achieved.
pub(crate) enum Published {
    /// Every holder stores it: the object is readable.
    Visible(Arc<Manifest>),
    /// A holder keeps a newer write of the same path (`by`): this version is
    /// replaced already and its fragments are garbage.
    Superseded { manifest: Arc<Manifest>, by: WriteVersion },
}

/// Stores the manifest on every holder. A holder that fails to take it has
/// lost its fragment as far as readers know, so that fragment is rebuilt on
/// another node and a new revision published, until every holder has it.
pub(crate) async fn publish_manifest(ctx: &Ctx, mut m: Manifest, codec: &StripeCodec, avoid: &mut HashSet<NodeId>) -> Result<Published> {
    let path: Arc<str> = Arc::from(m.path.as_str());
    // Each round either succeeds or moves at least one fragment to a node
    // never used before, so the live node count bounds the rounds.
    for _ in 0..=ctx.transport.live_nodes().len() {
        let arc = Arc::new(m.clone());
        let answers = join_all(m.holders.iter().map(|h| ctx.transport.put_manifest(h, arc.clone()))).await;
        let mut failed: Vec<(usize, Error)> = Vec::new();
        for (i, a) in answers.into_iter().enumerate() {
            match a {
                // A newer write of the path is there: ours lost (FORMAT.md, "Versions of a path").
                Ok(ManifestPut::KeptNewer(by)) if by.write_id != m.write_id => return Ok(Published::Superseded { manifest: arc, by }),
                // Stored, or a later revision of this same write (a concurrent repair) is there.
                Ok(_) => {}
                Err(e) => failed.push((i, e)),
            }
        }
        if failed.is_empty() {
            return Ok(Published::Visible(arc));
        }
        let mut holders = m.holders.clone();
        for (i, e) in failed {
            if !e.is_node_fault() {
                return Err(e);
            }
            tracing::warn!(path = %path, fragment = i, node = %holders[i], error = %e, "holder did not take the manifest; rebuilding its fragment elsewhere");
            avoid.insert(holders[i].clone());
            replace_finished_fragment(ctx, &path, &m, codec, &mut holders, i, avoid).await?;
            bump(&ctx.counters.fragments_replaced, 1);
        }
        m.holders = holders;
        m.revision = version::next_revision(m.revision, &m.path)?;
    }
    Err(Error::InvalidState { path: m.path.clone(), reason: "manifest could not be stored on a stable set of holders".into() })
}
