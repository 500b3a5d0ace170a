//! Moving fragments of a committed object to new holders: the rebalancing
//! after a join (`fragstate_core::rebalance` decides which; the storage
//! node's rebalance service runs it). A fragment is copied from its holder,
//! not rebuilt: one fragment's bytes cross the network, not `k`.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;

use fragstate_core::codec::StripeCodec;
use fragstate_core::delete::DeleteTarget;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{Manifest, StripeInfo};
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::version;

use crate::client::Client;
use crate::ctx::Ctx;
use crate::reader::FragmentSet;
use crate::repair::{publish_manifest, Fragments, Published};

impl Client {
    /// Moves fragments of the committed object `manifest` to new holders
    /// (`moves`: fragment index, new holder): copies each fragment's cells
    /// from its holder to the new one, every cell checked against the
    /// manifest (one that is bad or cannot be read is rebuilt from `k`
    /// others), publishes a manifest revision naming the new holders, then
    /// asks each old holder to drop its copy (best effort: the holder check
    /// drops a copy no newer revision names). Returns the fragment bytes
    /// moved; `None` when `manifest` is not the newest copy of its path
    /// (nothing moved) or the object was overwritten meanwhile (the copies
    /// are then an old version's, reclaimed as uncommitted).
    pub async fn move_fragments(&self, manifest: Arc<Manifest>, moves: &[(usize, NodeId)]) -> Result<Option<u64>> {
        let ctx = &self.ctx;
        manifest.validate()?;
        // Moves planned from a copy that a repair or another move has since
        // replaced would drop a fragment the newer revision still names.
        let newest = self.find_manifest(&manifest.path).await?;
        if newest.as_ref().is_none_or(|n| n.version_key() != manifest.version_key()) {
            tracing::debug!(path = %manifest.path, "not moved: the copy planned from is no longer the newest");
            return Ok(None);
        }
        let codec = StripeCodec::new(manifest.params)?;
        let path: Arc<str> = Arc::from(manifest.path.as_str());
        let frags = Fragments::of_manifest(&manifest, &path, &codec, &manifest.holders);
        let mut holders = manifest.holders.clone();
        let mut bytes = 0;
        for (index, to) in moves {
            if *index >= holders.len() {
                return Err(Error::invalid("fragment index", index, format!("< k + m = {}", holders.len())));
            }
            if holders.contains(to) {
                return Err(Error::invalid("new holder", to, format!("a node that holds no fragment of {path}")));
            }
            bytes += copy_fragment(ctx, &frags, *index, to).await?;
            holders[*index] = to.clone();
        }
        let new = Manifest { holders, revision: version::next_revision(manifest.revision, &manifest.path)?, ..(*manifest).clone() };
        match publish_manifest(ctx, new, &codec, &mut HashSet::new()).await? {
            Published::Superseded { by, .. } => {
                tracing::info!(path = %path, newer = ?by, "object overwritten while its fragments moved");
                Ok(None)
            }
            Published::Visible(published) => {
                let drop = DeleteTarget::Write { path: manifest.path.clone(), write_id: manifest.write_id };
                for (index, _) in moves {
                    let old = &manifest.holders[*index];
                    if published.holders.contains(old) {
                        continue;
                    }
                    if let Err(e) = ctx.transport.delete(old, &drop).await {
                        tracing::warn!(path = %path, node = %old, error = %e, "old holder did not drop its moved fragment; its holder check will");
                    }
                }
                Ok(Some(bytes))
            }
        }
    }
}

/// Copies fragment `index` of `frags` from its holder to `to` and finishes
/// it there; returns its cell bytes.
///
/// `to` may already keep a copy of this write: a node that comes back after
/// its fragment was repaired elsewhere is a join, and placement often gives
/// it back the very fragment it kept (its holder check drops the old copy
/// only at its next pass), or an earlier move failed half way. Such a copy
/// makes the new one's start fail ("already started"), so whatever `to`
/// keeps of the write goes first — `to` holds nothing the newest revision
/// names (checked by the caller).
async fn copy_fragment(ctx: &Ctx, frags: &Fragments<'_>, index: usize, to: &NodeId) -> Result<u64> {
    let key = FragmentKey { path: frags.path.clone(), write_id: frags.write_id, index: index as u8 };
    let sources = FragmentSet { path: frags.path, write_id: frags.write_id, holders: frags.holders, codec: frags.codec };
    ctx.transport.delete(to, &DeleteTarget::Write { path: frags.path.to_string(), write_id: frags.write_id }).await?;
    let mut sink = ctx.transport.open_fragment(to, frags.header(index)).await?;
    // (Collected first, as in repair: a closure inside the stream type trips
    // the higher-ranked `Send` check of spawned callers.)
    let (key, sources) = (&key, &sources);
    let jobs: Vec<_> = frags.stripes.iter().enumerate().map(|(s, info)| copy_cell(ctx, frags, sources, key, s as u32, info)).collect();
    let mut cells = futures::stream::iter(jobs).buffered(ctx.cfg.read_ahead.max(1));
    let mut bytes = 0u64;
    while let Some(r) = cells.next().await {
        let (s, c) = r?;
        bytes += c.len() as u64;
        sink.put_cell(s, frags.stripes[s as usize].cell_checksums[index], c).await?;
    }
    drop(cells);
    sink.finish().await?;
    Ok(bytes)
}

/// Cell `key.index` of stripe `s`, read from its holder and checked, or
/// rebuilt from `k` other holders when that fails.
async fn copy_cell(ctx: &Ctx, frags: &Fragments<'_>, sources: &FragmentSet<'_>, key: &FragmentKey, s: u32, info: &StripeInfo) -> Result<(u32, Bytes)> {
    let index = key.index as usize;
    let from = &frags.holders[index];
    let len = info.cell_len(frags.codec.params().k()) as u32;
    let why = match ctx.transport.get_cell(from, key, s, len).await {
        Ok(c) if frags.codec.cell_is_valid(info, index, &c) => return Ok((s, c)),
        Ok(_) => "it does not match its checksum".to_string(),
        Err(e) => e.to_string(),
    };
    tracing::warn!(path = %frags.path, fragment = index, stripe = s, node = %from, why, "cell not copied from its holder; rebuilt from the others");
    let (_, _, c) = frags.rebuild_cell(ctx, sources, index, s, info).await?;
    Ok((s, c))
}
