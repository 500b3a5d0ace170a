//! `fragstate ls [PREFIX]`: committed objects under a prefix.

use fragstate_core::Result;

use crate::args::ClusterArgs;
use crate::cluster::{client, connect, runtime};

pub(crate) fn ls(args: ClusterArgs, prefix: String) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            for s in client(&node, &args, None)?.list(&prefix).await? {
                println!("{:>14} {} {}", s.length, s.created_unix_ms, s.path);
            }
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}
