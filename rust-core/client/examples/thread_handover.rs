//! How fast one writer runs when successive writes come from different
//! threads (as when a JVM hands a stream's chunks to another thread), over a
//! transport that drops every cell once "sent" — what the network does —
//! so stripe buffers can be reused.
//!
//! `cargo run --release -p fragstate-client --example thread_handover -- [same|other] [MiB]`

use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use fragstate_client::transport::{FragmentSink, Transport};
use fragstate_client::{Client, ClientConfig};
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::format::{FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::placement::NodeInfo;
use fragstate_core::version::ManifestPut;
use fragstate_core::{Error, Result};

/// Six nodes that accept everything and keep nothing.
struct Discard;

struct DiscardSink;

#[async_trait]
impl FragmentSink for DiscardSink {
    async fn put_cell(&mut self, _: u32, _: u64, _: Bytes) -> Result<()> {
        Ok(())
    }
    async fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Transport for Discard {
    fn live_nodes(&self) -> Vec<NodeInfo> {
        (0..6).map(|i| NodeInfo { id: format!("n{i}").into(), domain: format!("d{i}").into(), free_bytes: u64::MAX }).collect()
    }
    async fn open_fragment(&self, _: &NodeId, _: FragmentHeader) -> Result<Box<dyn FragmentSink>> {
        Ok(Box::new(DiscardSink))
    }
    async fn get_cell(&self, node: &NodeId, key: &FragmentKey, stripe: u32, _len: u32) -> Result<Bytes> {
        Err(Error::CellNotFound { path: key.path.to_string(), index: key.index as usize, stripe, node: node.to_string() })
    }
    async fn put_manifest(&self, _: &NodeId, _: Arc<Manifest>) -> Result<ManifestPut> {
        Ok(ManifestPut::Stored)
    }
    async fn get_manifest(&self, _: &NodeId, _: &str) -> Result<Option<Arc<Manifest>>> {
        Ok(None)
    }
    async fn list(&self, _: &NodeId, _: &str) -> Result<Vec<ObjectSummary>> {
        Ok(Vec::new())
    }
    async fn delete(&self, _: &NodeId, _: &DeleteTarget) -> Result<DeleteStats> {
        Ok(DeleteStats::default())
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "same".into());
    let mib: usize = std::env::args().nth(2).map(|s| s.parse().expect("MiB")).unwrap_or(1024);
    let rt = Arc::new(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap());
    let params = CodingParams::new(4, 2, 1 << 20, Compression::None).unwrap();
    let client = Client::new(Arc::new(Discard), ClientConfig { params, ..ClientConfig::default() }).unwrap();
    let block = Arc::new(vec![7u8; 1 << 20]);
    for round in 0..3 {
        let w = Arc::new(Mutex::new(Some(rt.block_on(client.create(&format!("o{round}"), true)).unwrap())));
        let write = {
            let (w, rt, block) = (w.clone(), rt.clone(), block.clone());
            move || rt.block_on(w.lock().unwrap().as_mut().unwrap().write(&block)).unwrap()
        };
        // `other`: every second chunk is written by a second, long-lived thread.
        let (to_helper, jobs) = std::sync::mpsc::channel::<std::sync::mpsc::Sender<()>>();
        let helper = {
            let write = write.clone();
            std::thread::spawn(move || {
                for done in jobs {
                    write();
                    done.send(()).unwrap();
                }
            })
        };
        let t = Instant::now();
        for i in 0..mib {
            if mode == "same" || i % 2 == 0 {
                write();
            } else {
                let (done, wait) = std::sync::mpsc::channel();
                to_helper.send(done).unwrap();
                wait.recv().unwrap();
            }
        }
        drop(to_helper);
        helper.join().unwrap();
        let w = w.lock().unwrap().take().unwrap();
        rt.block_on(w.close()).unwrap();
        println!("{mode:5} round {round}: {:.2} GB/s", (mib << 20) as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
}
