//! Per-peer bounds of a storage node, over real libp2p on loopback: one
//! writer cannot hold more than its share of a node's uploads.

use std::sync::Arc;
use std::time::Duration;

use fragstate_client::transport::Transport;
use fragstate_core::format::FragmentHeader;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::Error;
use fragstate_net::{NetConfig, NetNode, Role};
use fragstate_store::FragmentStore;
use libp2p::identity::Keypair;

fn header(i: u128) -> FragmentHeader {
    FragmentHeader {
        path: format!("bound/{i}"),
        write_id: i,
        index: 0,
        params: CodingParams::new(4, 2, 4096, Compression::None).unwrap(),
        created_unix_ms: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_writer_gets_at_most_its_share_of_a_nodes_uploads() {
    let mut storage = NetConfig::new(Keypair::generate_ed25519(), Role::Storage, None);
    storage.store = Some(Arc::new(FragmentStore::in_memory("storage", u64::MAX)));
    let storage = NetNode::start(storage).await.unwrap();
    let mut writer = NetConfig::new(Keypair::generate_ed25519(), Role::Client, None);
    writer.bootstrap = storage.listen_addrs();
    let writer = NetNode::start(writer).await.unwrap();
    writer.wait_for_storage_nodes(1, Duration::from_secs(20)).await.unwrap();

    let target = storage.id().clone();
    let mut open = Vec::new();
    let mut i = 0;
    let refused = loop {
        match writer.open_fragment(&target, header(i)).await {
            Ok(sink) => open.push(sink),
            Err(e) => break e,
        }
        i += 1;
        assert!(i <= 1000, "no bound on uploads from one peer");
    };
    assert_eq!(open.len(), 64, "uploads accepted before the bound");
    assert!(matches!(refused, Error::NodeUnavailable { .. }) && refused.is_node_fault(), "{refused}");
    assert!(refused.to_string().contains("64 uploads from this writer"), "{refused}");
    // Counted once per attempt: the client's retry loop tries a refused request a few times.
    assert!(storage.stats().uploads_refused >= 1);

    // A finished upload gives its slot back.
    let mut first = open.remove(0);
    first.finish().await.unwrap();
    drop(first);
    let again = writer.open_fragment(&target, header(5000)).await;
    assert!(again.is_ok(), "{:?}", again.err());
    writer.shutdown().await;
    storage.shutdown().await;
}
