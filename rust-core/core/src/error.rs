//! The one error type of the crate. Every variant's message names the value
//! that was wrong and, where there is one, the range that is allowed, so that
//! the text can be shown to a Flink user unchanged (the JNI layer turns it
//! into an `IOException` message).

use crate::ids::NodeId;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid {name} = {value}: allowed {allowed}")]
    InvalidParameter {
        name: &'static str,
        value: String,
        allowed: String,
    },

    #[error("store directory {dir} is in use by another process (it holds {dir}/LOCK)")]
    StoreInUse { dir: String },

    #[error("{path}: no such object")]
    NotFound { path: String },

    #[error("{path}: object already exists (write mode NO_OVERWRITE)")]
    AlreadyExists { path: String },

    #[error(
        "cannot place {needed} fragments (k={k} + m={m}): only {usable} usable storage nodes \
         in {domains} failure domains are live ({reason})"
    )]
    InsufficientNodes {
        needed: usize,
        k: usize,
        m: usize,
        usable: usize,
        domains: usize,
        reason: String,
    },

    #[error(
        "{path}: stripe {stripe} cannot be rebuilt: {good} good cells of the {k} needed \
         (missing fragments {missing:?}, corrupt fragments {corrupt:?})"
    )]
    StripeUnrecoverable {
        path: String,
        stripe: u32,
        k: usize,
        good: usize,
        missing: Vec<usize>,
        corrupt: Vec<usize>,
    },

    #[error("node {node}: store full: {used} of {budget} bytes used, {requested} more requested")]
    StoreFull {
        node: String,
        budget: u64,
        used: u64,
        requested: u64,
    },

    #[error("node {node} unavailable: {reason}")]
    NodeUnavailable { node: NodeId, reason: String },

    #[error("{what}: malformed data: {reason}")]
    Format { what: String, reason: String },

    #[error("{path}: fragment {index} stripe {stripe} not held by node {node}")]
    CellNotFound {
        path: String,
        index: usize,
        stripe: u32,
        node: String,
    },

    #[error("{path}: {reason}")]
    InvalidState { path: String, reason: String },

    #[error("invalid seek to {offset} in {path}: allowed 0 ≤ offset ≤ {length}")]
    InvalidSeek { path: String, offset: u64, length: u64 },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error("request to node {node} timed out after {millis} ms")]
    Timeout { node: NodeId, millis: u64 },
}

impl Error {
    pub fn format(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Format {
            what: what.into(),
            reason: reason.into(),
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub fn invalid(name: &'static str, value: impl ToString, allowed: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }

    /// True for errors that say something about one node (it is down, full,
    /// slow or lost a fragment) rather than about the request: the writer
    /// answers these by placing the fragment on another node, the reader by
    /// asking another holder.
    pub fn is_node_fault(&self) -> bool {
        matches!(
            self,
            Error::NodeUnavailable { .. }
                | Error::StoreFull { .. }
                | Error::Timeout { .. }
                | Error::CellNotFound { .. }
                | Error::Io { .. }
        )
    }
}
