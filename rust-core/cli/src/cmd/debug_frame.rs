//! `fragstate debug-frame` (hidden, for tests): sends one malformed frame
//! and reports whether the peer dropped the connection.

use std::time::{Duration, Instant};

use fragstate_client::transport::Transport;
use fragstate_core::{Error, Result};
use fragstate_net::wire::Kind;
use futures::AsyncWriteExt;

use crate::args::ClusterArgs;
use crate::cluster::{connect, peer_id, runtime, served_stream};

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum BadFrame {
    /// A frame announcing more bytes than any frame may carry.
    Oversized,
    /// A frame of an unknown kind.
    UnknownKind,
    /// A request whose body does not decode.
    Garbage,
}

/// Connects as a keyed client, sends one bad frame on the fragment protocol
/// and reports whether the peer dropped the connection (prints DROPPED or KEPT).
pub(crate) fn debug_frame(args: ClusterArgs, bad: BadFrame) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let target = node.live_nodes().into_iter().next().ok_or_else(|| Error::invalid("peers", 0, "≥ 1"))?;
        let peer = peer_id(&target.id)?;
        // A stream the peer is known to serve (a valid request answered first).
        let mut s = served_stream(&node, peer).await?;
        let frame: Vec<u8> = match bad {
            BadFrame::Oversized => {
                let mut v = (u32::MAX - 1).to_le_bytes().to_vec();
                v.push(Kind::List as u8);
                v.extend_from_slice(&[0u8; 64]);
                v
            }
            BadFrame::UnknownKind => vec![3, 0, 0, 0, 0xee, 1, 2, 3],
            BadFrame::Garbage => vec![5, 0, 0, 0, Kind::GetCell as u8, 1, 2, 3, 4, 5],
        };
        let before = node.connections_closed(&peer);
        let _ = s.write_all(&frame).await;
        let _ = s.flush().await;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut dropped = false;
        while Instant::now() < deadline {
            if node.connections_closed(&peer) > before {
                dropped = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!("{} {}", if dropped { "DROPPED" } else { "KEPT" }, target.id);
        node.shutdown().await;
        Ok(())
    })
}
