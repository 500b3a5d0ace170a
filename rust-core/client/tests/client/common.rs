//! What the mesh tests share: parameters, a client, a runtime, write and read.

use std::sync::Arc;

use fragstate_client::mesh::Mesh;
use fragstate_client::{Client, ClientConfig};
use fragstate_core::format::Manifest;
use fragstate_core::params::{CodingParams, Compression};

pub const CELL: u64 = 4096;

pub fn params(k: usize, m: usize) -> CodingParams {
    CodingParams::new(k, m, CELL, Compression::None).unwrap()
}

pub fn client(mesh: &Arc<Mesh>, p: CodingParams) -> Client {
    let cfg = ClientConfig { params: p, hedge: p.m().min(1), directory_index: true, ..ClientConfig::default() };
    Client::new(mesh.clone(), cfg).unwrap()
}


pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

pub async fn write(c: &Client, path: &str, data: &[u8], chunk: usize) -> Arc<Manifest> {
    let mut w = c.create(path, false).await.unwrap();
    for part in data.chunks(chunk.max(1)) {
        w.write(part).await.unwrap();
    }
    w.close().await.unwrap()
}

pub async fn read(c: &Client, path: &str) -> fragstate_core::Result<Vec<u8>> {
    c.open(path).await?.read_to_end().await
}
