//! `fragstate stats`: per-node usage, degraded objects and bytes to repair,
//! and under a node that a client uses (a TaskManager's) that client's
//! figures and its estimate of each peer; with `--json` one JSON object per
//! node and line (the `NodeStats` fields, camelCase), for scripts.

use fragstate_client::transport::Transport;
use fragstate_client::ClientStats;
use fragstate_core::Result;

use crate::args::ClusterArgs;
use crate::cluster::{connect, runtime};

/// The node's own client, indented under its node line: what it wrote and
/// read, adaptive mode, and each peer as its transfers measured it.
fn print_client(c: &ClientStats) {
    let a = &c.adaptive;
    let adaptive = if a.enabled {
        format!(
            "on phase={} data={} parity={} cell={} zstd={} predicted_ms={} configured_ms={} link_mb_s={:.1}",
            a.phase, a.data_fragments, a.parity_fragments, a.cell_size, a.zstd_level, a.predicted_restore_ms, a.configured_restore_ms, a.link_bytes_per_s as f64 / 1e6
        )
    } else {
        "off".into()
    };
    println!(
        "  client objects_written={} bytes_written={} objects_opened={} bytes_read={} failed_requests={} index_reads={} index_reads_settled={} index_requests={} index_rebuilds={} codec_mb_s={:.1} adaptive={adaptive}",
        c.objects_written,
        c.bytes_written,
        c.objects_opened,
        c.bytes_read,
        c.failed_requests,
        c.index_reads,
        c.index_reads_settled,
        c.index_requests,
        c.index_rebuilds,
        a.codec_bytes_per_s as f64 / 1e6
    );
    for p in &c.peers {
        println!("  peer={} mb_s={:.1} samples={} age_ms={} trusted={}", p.node, p.bytes_per_s as f64 / 1e6, p.samples, p.age_ms, p.trusted);
    }
}

pub(crate) fn stats(args: ClusterArgs, json: bool) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            let mut all = Vec::new();
            for n in node.live_nodes() {
                match node.remote_stats(&n.id).await {
                    Ok(s) => all.push(s),
                    Err(e) => eprintln!("stats of {}: {e}", n.id),
                }
            }
            all.sort_by(|a, b| a.node.cmp(&b.node));
            let deg: u64 = all.iter().map(|s| s.objects_degraded).sum();
            let rep: u64 = all.iter().map(|s| s.bytes_to_repair).sum();
            for s in &all {
                if json {
                    let line = serde_json::to_string(s).map_err(|e| fragstate_core::Error::format("node stats", e.to_string()))?;
                    println!("{line}");
                } else {
                    println!(
                        "node={} domain={} live={} fragments={} bytes={} manifests={} degraded={} to_repair={} repaired={} repair_failures={} tombstones={} tombstone_file_bytes={} tombstone_deletes={} hints={} hints_dropped={} manifests_deleted={} reclaimed={} holder_checks={} holder_checked={} stale_dropped={} rebalanced={} rebalanced_bytes={} rebalance_failures={} violations={} streams_refused={} uploads_refused={} heap_bytes={} scrub_passes={} scrubbed_cells={} scrubbed_bytes={} scrub_corrupt={} corrupt_reports={} corrupt_reports_confirmed={} cells_rebuilt={} rebuild_failures={} index_records={} index_bytes={} index_dropped={}",
                        s.node, s.domain, s.live_storage_peers, s.fragments, s.bytes, s.manifests, s.objects_degraded, s.bytes_to_repair, s.objects_repaired,
                        s.repair_failures, s.tombstones, s.tombstone_file_bytes, s.tombstone_deletes, s.tombstone_hints, s.tombstone_hints_dropped, s.manifests_deleted, s.reclaimed_fragments,
                        s.holder_check_passes, s.holder_checked, s.stale_copies_dropped, s.fragments_rebalanced, s.bytes_rebalanced, s.rebalance_failures, s.protocol_violations,
                        s.streams_refused, s.uploads_refused, s.heap_bytes, s.scrub.passes, s.scrub.cells_scrubbed, s.scrub.bytes_scrubbed, s.scrub.corrupt_found, s.scrub.corrupt_reports,
                        s.scrub.corrupt_reports_confirmed, s.scrub.cells_rebuilt, s.scrub.rebuild_failures, s.index_records, s.index_bytes, s.index_dropped
                    );
                    if let Some(c) = &s.client {
                        print_client(c);
                    }
                }
            }
            if json {
                return Ok(());
            }
            println!("cluster: {} storage nodes live, objects degraded {deg}, bytes to repair {rep}", all.len());
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}
