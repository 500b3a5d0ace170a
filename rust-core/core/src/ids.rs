//! The names of things: nodes, writes, fragments, and the clock that orders
//! object versions.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A node's identity: a mesh name (`mesh-3`) or, on the network, a peer id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeId(Arc<str>);

impl NodeId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for NodeId {
    fn from(s: &str) -> Self {
        NodeId(Arc::from(s))
    }
}

impl From<String> for NodeId {
    fn from(s: String) -> Self {
        NodeId(Arc::from(s))
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Identifies one write of one path: a path written again gets a new id, so
/// fragments of an older version are never mixed into a newer one.
pub type WriteId = u128;

/// Names one fragment of one write of one object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FragmentKey {
    pub path: Arc<str>,
    pub write_id: WriteId,
    pub index: u8,
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
