//! What `fragstate stats` reports of one node (the body of a `Stats` answer).

use serde::{Deserialize, Serialize};

use fragstate_client::scrubber::ScrubStats;
use fragstate_client::ClientStats;

/// What `stats` reports of one node.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    pub node: String,
    pub role: String,
    pub domain: String,
    pub fragments: u64,
    pub cells: u64,
    pub bytes: u64,
    pub manifests: u64,
    pub budget: u64,
    pub live_storage_peers: u64,
    /// Objects this node is responsible for repairing that miss a holder.
    pub objects_degraded: u64,
    /// Fragment bytes those objects miss.
    pub bytes_to_repair: u64,
    pub objects_repaired: u64,
    pub fragments_repaired: u64,
    pub repair_failures: u64,
    pub tombstones: u64,
    /// Size of the tombstone file (0 without one).
    pub tombstone_file_bytes: u64,
    /// Tombstones dropped because a count or byte bound was reached.
    pub tombstones_evicted: u64,
    /// Deletes of objects this node held, applied from peers' tombstones
    /// (deletes it missed while it was away).
    pub tombstone_deletes: u64,
    /// Tombstones kept for holders that were not live when this node ran a
    /// delete of an object they hold too, until they are back (hints).
    pub tombstone_hints: u64,
    /// Hints not kept because a bound was reached (NETWORK.md, "Bounded resources").
    pub tombstone_hints_dropped: u64,
    /// Directory index records this node keeps (in memory), their bytes
    /// (names, entries, overhead), and the records dropped for the bound
    /// (`index_holder::MAX_INDEX_BYTES`, least recently changed first).
    pub index_records: u64,
    pub index_bytes: u64,
    pub index_dropped: u64,
    /// Manifest copies removed by `Delete` requests this node served since it
    /// started: one per object version whose manifest it held. An object's
    /// manifest is on each of its k + m holders, so the sum over the nodes is
    /// about (k + m) × the objects deleted.
    pub manifests_deleted: u64,
    pub reclaimed_fragments: u64,
    /// Passes of the holder check (NETWORK.md, "Background services").
    pub holder_check_passes: u64,
    /// Copies the holder check compared with another holder's, summed over passes.
    pub holder_checked: u64,
    /// Copies the holder check dropped: repaired elsewhere, overwritten or
    /// deleted while this node was away.
    pub stale_copies_dropped: u64,
    /// Fragments this node moved to nodes that joined (rebalancing), their
    /// bytes, and the moves that failed (retried in the next pass).
    pub fragments_rebalanced: u64,
    pub bytes_rebalanced: u64,
    pub rebalance_failures: u64,
    pub protocol_violations: u64,
    /// Streams closed unanswered: their peer had its share open (NETWORK.md, "Bounded resources").
    pub streams_refused: u64,
    /// Uploads refused: their peer had its share in progress.
    pub uploads_refused: u64,
    pub uptime_secs: u64,
    /// Live heap bytes of the node's process held by fragstate's Rust code
    /// (`fragstate_core::heap`; 0 where the counting allocator is not installed).
    pub heap_bytes: u64,
    /// The background scrub's counters (cells verified, bad cells found and rebuilt).
    pub scrub: ScrubStats,
    /// What the node's own client measured and did (a TaskManager's node: the
    /// plugin's reads and writes; per-peer estimates, adaptive mode's phase);
    /// `None` on a standalone storage node.
    pub client: Option<ClientStats>,
}
