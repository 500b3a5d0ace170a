//! `fragstate rm [-r] PATH`: deletes an object (and everything under PATH/).

use fragstate_core::Result;

use crate::args::ClusterArgs;
use crate::cluster::{client, connect, runtime};

pub(crate) fn rm(args: ClusterArgs, path: String, recursive: bool) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            let st = client(&node, &args, None)?.delete(&path, recursive).await?;
            println!("deleted {path}: {} objects; {} manifest copies, {} fragments, {} bytes", st.objects, st.removed.manifests, st.removed.fragments, st.removed.bytes);
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}
