//! The one error type of every fragstate crate. Every variant's message names the value
//! that was wrong and, where there is one, the range that is allowed, so that
//! the text can be shown to a Flink user unchanged (the JNI layer turns it
//! into an `IOException` message).

use crate::ids::NodeId;

/// `Result` with fragstate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, one variant per decision a caller takes
/// on it (retry elsewhere, report to the user, drop a peer).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration value or argument outside its bounds.
    #[error("invalid {name} = {value}: allowed {allowed}")]
    InvalidParameter {
        /// What was set (an option or argument name).
        name: &'static str,
        /// The value given.
        value: String,
        /// The allowed values or range.
        allowed: String,
    },

    /// Another process holds the store directory's lock.
    #[error("store directory {dir} is in use by another process (it holds {dir}/LOCK)")]
    StoreInUse {
        /// The store directory.
        dir: String,
    },

    /// No committed object at this path.
    #[error("{path}: no such object")]
    NotFound {
        /// The object path.
        path: String,
    },

    /// A create without overwrite found an object at this path.
    #[error("{path}: object already exists (write mode NO_OVERWRITE)")]
    AlreadyExists {
        /// The object path.
        path: String,
    },

    /// Fewer live storage nodes (or failure domains) than a placement needs.
    #[error(
        "cannot place {needed} fragments (k={k} + m={m}): only {usable} usable storage nodes \
         in {domains} failure domains are live ({reason})"
    )]
    InsufficientNodes {
        /// Nodes the placement needed (`k + m`, or 1 for a replacement).
        needed: usize,
        /// Data fragments of the object.
        k: usize,
        /// Parity fragments of the object.
        m: usize,
        /// Live storage nodes that could take a fragment.
        usable: usize,
        /// Failure domains among them.
        domains: usize,
        /// Why the rest were not usable.
        reason: String,
    },

    /// A stripe with fewer than `k` good cells: more than `m` fragments lost.
    #[error(
        "{path}: stripe {stripe} cannot be rebuilt: {good} good cells of the {k} needed \
         (missing fragments {missing:?}, corrupt fragments {corrupt:?}){causes}"
    )]
    StripeUnrecoverable {
        /// The object path.
        path: String,
        /// The stripe index.
        stripe: u32,
        /// Good cells a stripe needs.
        k: usize,
        /// Good cells found.
        good: usize,
        /// Fragment indices whose cell could not be fetched.
        missing: Vec<usize>,
        /// Fragment indices whose cell failed its checksum.
        corrupt: Vec<usize>,
        /// Why each missing fragment is missing, as "; fragment I: …" (empty
        /// where the caller does not know, as in decoding given cells).
        causes: String,
    },

    /// A node's store refused a cell over its byte budget, or (disk store)
    /// over what its file system has left.
    #[error("node {node}: store full: {used} of {budget} bytes used, {requested} more requested")]
    StoreFull {
        /// The node.
        node: String,
        /// Its byte budget; when the file system is what is full, the bytes
        /// it holds plus what the file system has left.
        budget: u64,
        /// Bytes it holds.
        used: u64,
        /// Bytes the refused cell needed.
        requested: u64,
    },

    /// A node did not answer or is not connected.
    #[error("node {node} unavailable: {reason}")]
    NodeUnavailable {
        /// The node.
        node: NodeId,
        /// What failed.
        reason: String,
    },

    /// Stored or received bytes that do not decode (bad magic, version,
    /// checksum, length).
    #[error("{what}: malformed data: {reason}")]
    Format {
        /// What was decoded.
        what: String,
        /// What was wrong.
        reason: String,
    },

    /// A peer broke the wire protocol (unknown frame kind, a frame over its
    /// limit, a body that does not decode, a frame out of place): it is not
    /// a well-behaved fragstate node, and its connection is dropped.
    #[error("{what}: protocol violation: {reason}")]
    Protocol {
        /// The frame or body.
        what: String,
        /// What was wrong.
        reason: String,
    },

    /// An operation that needs at least one live node found none that answered.
    #[error("no live node answered {what}")]
    NoNodeAnswered {
        /// The operation.
        what: String,
    },

    /// A node-level operation was used wrongly (started twice with another
    /// configuration, outside a runtime, …).
    #[error("{component}: {reason}")]
    Usage {
        /// The component used wrongly.
        component: &'static str,
        /// What was wrong.
        reason: String,
    },

    /// A node does not hold a cell it was asked for.
    #[error("{path}: fragment {index} stripe {stripe} not held by node {node}")]
    CellNotFound {
        /// The object path.
        path: String,
        /// The fragment index.
        index: usize,
        /// The stripe index.
        stripe: u32,
        /// The node asked.
        node: String,
    },

    /// An operation on an object that its state does not allow (a write after
    /// a failed write, a manifest that found no stable set of holders, …).
    #[error("{path}: {reason}")]
    InvalidState {
        /// The object path.
        path: String,
        /// What is wrong.
        reason: String,
    },

    /// A seek past the end of an object.
    #[error("invalid seek to {offset} in {path}: allowed 0 ≤ offset ≤ {length}")]
    InvalidSeek {
        /// The object path.
        path: String,
        /// The offset asked for.
        offset: u64,
        /// The object's length.
        length: u64,
    },

    /// A local file or socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// A request got no answer within the request timeout.
    #[error("request to node {node} timed out after {millis} ms")]
    Timeout {
        /// The node asked.
        node: NodeId,
        /// The timeout.
        millis: u64,
    },
}

impl Error {
    /// A [`Error::Format`] error in `what`.
    pub fn format(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Format {
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// A [`Error::Protocol`] violation in `what`.
    pub fn protocol(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Protocol {
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// An [`Error::Io`] error while doing `context`.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// An [`Error::InvalidParameter`] error: `name` = `value`, `allowed` says what is.
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
