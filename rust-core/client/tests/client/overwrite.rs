//! Overwrites of one path: versions, concurrent writers, and version
//! counters at their limits (FORMAT.md, "Versions of a path").

use std::sync::Arc;
use std::time::Duration;

use fragstate_client::mesh::Mesh;
use fragstate_client::Client;
use fragstate_core::format::Manifest;
use fragstate_core::ids::WriteId;
use fragstate_core::sample::noise;
use fragstate_core::Error;

use crate::common::{client, params, read, rt, write, CELL};

/// Write ids of `path`'s fragments still stored anywhere in the mesh.
fn stored_writes(mesh: &Mesh, path: &str) -> Vec<WriteId> {
    let mut ids: Vec<WriteId> = mesh
        .node_ids()
        .iter()
        .flat_map(|n| mesh.store(n).unwrap().fragment_keys())
        .filter(|k| &*k.path == path)
        .map(|k| k.write_id)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Two overwriters of `path` with several stripes written each; the second
/// one starts later, so its version is the newer one.
async fn two_overwriters(c: &Client, path: &str) -> (fragstate_client::writer::ObjectWriter, fragstate_client::writer::ObjectWriter, Vec<u8>, Vec<u8>) {
    let (older_data, newer_data) = (noise(5 * 4 * CELL as usize + 17, 1), noise(3 * 4 * CELL as usize + 5, 2));
    let mut older = c.create(path, true).await.unwrap();
    tokio::time::sleep(Duration::from_millis(3)).await;
    let mut newer = c.create(path, true).await.unwrap();
    older.write(&older_data[..4 * CELL as usize * 2]).await.unwrap();
    newer.write(&newer_data[..4 * CELL as usize * 2]).await.unwrap();
    (older, newer, older_data, newer_data)
}

#[test]
fn overwrite_semantics() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(8, u64::MAX);
        let c = client(&mesh, params(4, 2));
        write(&c, "p/_metadata", b"first", 10).await;
        let e = c.create("p/_metadata", false).await.err().unwrap();
        assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");
        let mut w = c.create("p/_metadata", true).await.unwrap();
        w.write(b"second version").await.unwrap();
        // Until the new version commits, readers see the old one.
        assert_eq!(read(&c, "p/_metadata").await.unwrap(), b"first");
        let man = w.close().await.unwrap();
        assert_eq!(read(&c, "p/_metadata").await.unwrap(), b"second version");
        // Only the new write's fragments remain.
        assert_eq!(stored_writes(&mesh, "p/_metadata"), vec![man.write_id]);
    });
}

#[test]
fn an_overwrite_that_commits_leaves_a_newer_write_in_progress_alone() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(8, u64::MAX);
        let c = client(&mesh, params(4, 2));
        write(&c, "p/x", b"first", 10).await;
        let (older, mut newer, older_data, newer_data) = two_overwriters(&c, "p/x").await;
        let mut older = older;
        older.write(&older_data[4 * CELL as usize * 2..]).await.unwrap();
        older.close().await.unwrap();
        assert_eq!(read(&c, "p/x").await.unwrap(), older_data);
        // The older commit deleted the first version but not the newer upload.
        newer.write(&newer_data[4 * CELL as usize * 2..]).await.unwrap();
        let man = newer.close().await.unwrap();
        assert_eq!(read(&c, "p/x").await.unwrap(), newer_data);
        assert_eq!(stored_writes(&mesh, "p/x"), vec![man.write_id]);
        assert_eq!(c.stats().writes_superseded, 0);
    });
}

#[test]
fn an_older_write_that_commits_last_is_superseded_and_removes_itself() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(8, u64::MAX);
        let c = client(&mesh, params(4, 2));
        write(&c, "p/x", b"first", 10).await;
        let (mut older, newer, older_data, newer_data) = two_overwriters(&c, "p/x").await;
        let mut newer = newer;
        newer.write(&newer_data[4 * CELL as usize * 2..]).await.unwrap();
        let man = newer.close().await.unwrap();
        // The older write goes on and commits last: it must neither fail nor
        // replace (or delete) the newer version.
        older.write(&older_data[4 * CELL as usize * 2..]).await.unwrap();
        older.close().await.unwrap();
        assert_eq!(read(&c, "p/x").await.unwrap(), newer_data);
        assert_eq!(stored_writes(&mesh, "p/x"), vec![man.write_id]);
        assert_eq!(c.stats().writes_superseded, 1);
    });
}

#[test]
fn a_holder_keeps_a_newer_manifest_and_says_so() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let man = write(&c, "p/x", b"abc", 10).await;
        let store = mesh.store(&man.holders[0]).unwrap();
        let older = Manifest { created_unix_ms: man.created_unix_ms - 1, write_id: man.write_id ^ 1, ..(*man).clone() };
        let put = store.put_manifest(Arc::new(older)).unwrap();
        assert_eq!(put, fragstate_core::version::ManifestPut::KeptNewer(man.write_version()));
        assert_eq!(store.get_manifest("p/x").unwrap().write_id, man.write_id);
    });
}

#[test]
fn a_version_dated_at_the_end_of_time_is_an_error_not_a_wrap() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let man = write(&c, "p/x", b"abc", 10).await;
        let last = Arc::new(Manifest { created_unix_ms: u64::MAX, ..(*man).clone() });
        for h in &man.holders {
            mesh.store(h).unwrap().put_manifest(last.clone()).unwrap();
        }
        let e = c.create("p/x", true).await.err().expect("no version can follow u64::MAX");
        assert!(e.to_string().contains("p/x") && e.to_string().contains(&u64::MAX.to_string()), "{e}");
        // The object stays readable.
        assert_eq!(read(&c, "p/x").await.unwrap(), b"abc");
    });
}
