//! The manifests a store holds, by path and by holder: the second index lets
//! repair find the objects that lost a holder from that holder alone,
//! instead of scanning every manifest the node keeps.

use std::collections::{btree_map, BTreeMap, BTreeSet, HashMap};
use std::ops::RangeBounds;
use std::sync::Arc;

use fragstate_core::format::Manifest;
use fragstate_core::ids::NodeId;

/// Manifests by path, and the paths of the manifests that name each holder.
#[derive(Default)]
pub(crate) struct Manifests {
    by_path: BTreeMap<String, Arc<Manifest>>,
    by_holder: HashMap<NodeId, BTreeSet<String>>,
}

impl Manifests {
    pub fn get(&self, path: &str) -> Option<&Arc<Manifest>> {
        self.by_path.get(path)
    }

    /// Keeps `m` as the manifest of its path; returns the one it replaced.
    pub fn insert(&mut self, m: Arc<Manifest>) -> Option<Arc<Manifest>> {
        for h in &m.holders {
            self.by_holder.entry(h.clone()).or_default().insert(m.path.clone());
        }
        let old = self.by_path.insert(m.path.clone(), m.clone())?;
        for h in old.holders.iter().filter(|h| !m.holders.contains(h)) {
            self.unindex(h, &old.path);
        }
        Some(old)
    }

    pub fn remove(&mut self, path: &str) -> Option<Arc<Manifest>> {
        let old = self.by_path.remove(path)?;
        for h in &old.holders {
            self.unindex(h, path);
        }
        Some(old)
    }

    fn unindex(&mut self, holder: &NodeId, path: &str) {
        if let Some(paths) = self.by_holder.get_mut(holder) {
            paths.remove(path);
            if paths.is_empty() {
                self.by_holder.remove(holder);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    #[cfg(test)]
    pub fn values(&self) -> btree_map::Values<'_, String, Arc<Manifest>> {
        self.by_path.values()
    }

    pub fn range<R: RangeBounds<String>>(&self, range: R) -> btree_map::Range<'_, String, Arc<Manifest>> {
        self.by_path.range(range)
    }

    /// Every node some held manifest names as a holder.
    pub fn holders(&self) -> impl Iterator<Item = &NodeId> {
        self.by_holder.keys()
    }

    /// The held manifests that name `holder`, in path order.
    pub fn naming<'a>(&'a self, holder: &NodeId) -> impl Iterator<Item = &'a Arc<Manifest>> + 'a {
        self.by_holder.get(holder).into_iter().flatten().filter_map(|p| self.by_path.get(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstate_core::params::{CodingParams, Compression};
    use proptest::prelude::*;

    fn manifest(path: &str, revision: u32, holders: &[u8]) -> Arc<Manifest> {
        Arc::new(Manifest {
            path: path.into(),
            write_id: 1,
            revision,
            length: 1,
            params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
            holders: holders.iter().map(|h| NodeId::from(format!("n{h}"))).collect(),
            stripes: Vec::new(),
            created_unix_ms: 1,
            writer: String::new(),
        })
    }

    fn naming(m: &Manifests, h: u8) -> Vec<String> {
        m.naming(&NodeId::from(format!("n{h}"))).map(|m| m.path.clone()).collect()
    }

    #[test]
    fn a_repair_moves_the_object_from_the_replaced_holder_to_the_new_one() {
        let mut m = Manifests::default();
        m.insert(manifest("a", 0, &[1, 2, 3]));
        m.insert(manifest("b", 0, &[2, 3, 4]));
        assert_eq!(naming(&m, 2), ["a", "b"]);
        assert!(m.insert(manifest("a", 1, &[5, 2, 3])).is_some());
        assert!(naming(&m, 1).is_empty());
        assert_eq!(naming(&m, 5), ["a"]);
        m.remove("b");
        assert_eq!(naming(&m, 2), ["a"]);
        assert!(naming(&m, 4).is_empty());
        let mut holders: Vec<String> = m.holders().map(|h| h.to_string()).collect();
        holders.sort();
        assert_eq!(holders, ["n2", "n3", "n5"]);
    }

    proptest! {
        /// Whatever is inserted and removed, the holder index is exactly what the manifests say.
        #[test]
        fn the_holder_index_agrees_with_the_manifests(ops in proptest::collection::vec((any::<bool>(), 0u8..6, proptest::collection::vec(0u8..8, 0..4)), 0..60)) {
            let mut m = Manifests::default();
            for (insert, path, holders) in ops {
                let path = format!("p{path}");
                if insert { m.insert(manifest(&path, 0, &holders)); } else { m.remove(&path); }
            }
            for h in 0u8..8 {
                let id = NodeId::from(format!("n{h}"));
                let want: Vec<String> = m.values().filter(|x| x.holders.contains(&id)).map(|x| x.path.clone()).collect();
                prop_assert_eq!(naming(&m, h), want);
                prop_assert_eq!(m.holders().any(|x| *x == id), m.values().any(|x| x.holders.contains(&id)));
            }
        }
    }
}
