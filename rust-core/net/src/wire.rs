//! The fragment protocol's frames (`/fragstate/frag/1.0.0`), as specified in
//! `NETWORK.md`: every frame is `length (u32 LE) | kind (u8) | body`, where
//! `length` counts the body only. Manifests and fragment headers travel as
//! the envelopes of [`fragstate_core::format`], cells as a 16-byte [`CellFrame`]
//! followed by the cell bytes, small structured bodies as bincode with a
//! size limit. Every frame's length is checked against a per-kind limit
//! before any byte of the body is read, so a peer cannot make a node
//! allocate more than one cell plus a small constant.
//!
//! Decoding never panics: a malformed frame is an [`Error::Format`], and the
//! node that receives one drops the connection to its sender.

use bincode::Options;
use bytes::{Bytes, BytesMut};
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use serde::{Deserialize, Serialize};

use fragstate_core::error::{Error, Result};
use fragstate_core::format::{CellFrame, ObjectSummary, CELL_FRAME_HEADER_LEN, MAX_ENVELOPE_BODY};
use fragstate_core::ids::WriteId;
use fragstate_core::params::MAX_CELL_SIZE;
use fragstate_core::delete::{DeleteStats, DeleteTarget};
pub use fragstate_core::holder_check::{HeldAnswer, HeldQuery};
use fragstate_core::ids::NodeId;
use fragstate_core::version::WriteVersion;
pub use fragstate_client::scrubber::ScrubStats;
pub use crate::node_stats::NodeStats;
pub use index::{decode_canonical, try_encode, IndexAnswer, IndexReadReq, IndexUpdateReq, MAX_INDEX_WIDTH};

#[path = "wire_index.rs"]
mod index;

/// length (4) + kind (1).
pub const FRAME_HEADER_LEN: usize = 5;
/// Largest body of a frame that is not a cell: an envelope of the largest
/// allowed size plus its prefix and checksum.
pub const MAX_CONTROL_BODY: u32 = MAX_ENVELOPE_BODY + 64;
/// Largest body of a cell frame: the largest cell plus its frame header.
pub const MAX_CELL_BODY: u32 = MAX_CELL_SIZE + CELL_FRAME_HEADER_LEN as u32;

/// Frame kinds. Requests are below 64, responses from 64 up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Hello = 1,
    OpenFragment = 2,
    Cell = 3,
    Finish = 4,
    GetCell = 5,
    PutManifest = 6,
    GetManifest = 7,
    List = 8,
    Delete = 9,
    Stat = 10,
    BenchSink = 11,
    BenchSource = 12,
    /// A reader found the receiver's cell corrupt (body: [`GetCellReq`]); answered `Ok`.
    ReportCorrupt = 13,
    /// A speed probe (body: the bytes wanted, a `u32` of at most
    /// [`MAX_PROBE_BYTES`]); answered `CellData` of that many zero bytes.
    Probe = 14,
    /// A holder asks another holder which copies of its objects it has (body:
    /// [`HeldCheckReq`]); answered `HeldAnswers`.
    CheckHeld = 15,
    /// A change, birth or fill of a directory's index (body: [`IndexUpdateReq`]); answered `Ok`.
    IndexUpdate = 16,
    /// A holder's record of a directory's index (body: [`IndexReadReq`]); answered `IndexAnswer`.
    IndexRead = 17,
    Ok = 64,
    Err = 65,
    CellData = 66,
    ManifestData = 67,
    NoManifest = 68,
    Listing = 69,
    Deleted = 70,
    Stats = 71,
    HelloReply = 72,
    /// Answer to `PutManifest`: a [`fragstate_core::version::ManifestPut`].
    ManifestPut = 73,
    /// Answer to `CheckHeld`: one [`HeldAnswer`] per query, in order.
    HeldAnswers = 74,
    /// Answer to `IndexRead`: the holder's record, an `Option<Record>` ([`IndexAnswer`]).
    IndexAnswer = 75,
}

impl Kind {
    pub fn from_u8(b: u8) -> Option<Kind> {
        use Kind::*;
        Some(match b {
            1 => Hello,
            2 => OpenFragment,
            3 => Cell,
            4 => Finish,
            5 => GetCell,
            6 => PutManifest,
            7 => GetManifest,
            8 => List,
            9 => Delete,
            10 => Stat,
            11 => BenchSink,
            12 => BenchSource,
            13 => ReportCorrupt,
            14 => Probe,
            15 => CheckHeld,
            16 => IndexUpdate,
            17 => IndexRead,
            64 => Ok,
            65 => Err,
            66 => CellData,
            67 => ManifestData,
            68 => NoManifest,
            69 => Listing,
            70 => Deleted,
            71 => Stats,
            72 => HelloReply,
            73 => ManifestPut,
            74 => HeldAnswers,
            75 => IndexAnswer,
            _ => return None,
        })
    }

    /// The largest body this kind may carry.
    pub fn max_body(self) -> u32 {
        match self {
            Kind::Cell | Kind::CellData => MAX_CELL_BODY,
            Kind::Finish | Kind::Ok | Kind::NoManifest | Kind::Stat => 0,
            Kind::BenchSink | Kind::BenchSource => MAX_CELL_BODY,
            _ => MAX_CONTROL_BODY,
        }
    }
}

/// The frames a reader accepts at a point of the protocol; any other kind
/// is a protocol violation found from the header, before a body byte is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A server waiting for the next request: a request kind that opens an
    /// exchange (not `Cell`/`Finish`, which belong to an upload; benchmark
    /// frames only in builds with the `bench` feature).
    Request,
    /// Inside a fragment upload: `Cell` of at most `cell_size` bytes, or `Finish`.
    Upload { cell_size: u32 },
    /// The answer to a request of kind `to`: its answer kinds or `Err`; a
    /// `CellData` answer at most `max_cell` bytes when the reader knows it.
    Response { to: Kind, max_cell: Option<u32> },
}

impl Expect {
    /// A response to `to` with no known cell bound.
    pub fn response(to: Kind) -> Self {
        Expect::Response { to, max_cell: None }
    }

    fn describe(self) -> String {
        match self {
            Expect::Request => "a request".into(),
            Expect::Upload { .. } => "a Cell or Finish frame of an upload".into(),
            Expect::Response { to, .. } => format!("an answer to {to:?}"),
        }
    }

    fn accepts(self, kind: Kind) -> bool {
        use Kind::*;
        match self {
            Expect::Request => {
                matches!(kind, Hello | OpenFragment | GetCell | PutManifest | GetManifest | List | Delete | Stat | ReportCorrupt | Probe | CheckHeld | IndexUpdate | IndexRead)
                    || (matches!(kind, BenchSink | BenchSource) && cfg!(feature = "bench"))
            }
            Expect::Upload { .. } => matches!(kind, Cell | Finish),
            Expect::Response { to, .. } => kind == Err || to.answers().contains(&kind),
        }
    }

    /// The body limit for `kind`: the kind's own, lowered by a known cell size.
    fn limit(self, kind: Kind) -> u32 {
        let cell = match (self, kind) {
            (Expect::Upload { cell_size }, Kind::Cell) => Some(cell_size),
            (Expect::Response { max_cell: Some(c), .. }, Kind::CellData) => Some(c),
            _ => None,
        };
        match cell {
            Some(c) => kind.max_body().min(c.saturating_add(CELL_FRAME_HEADER_LEN as u32)),
            None => kind.max_body(),
        }
    }
}

impl Kind {
    /// The kinds that answer a request of this kind (besides `Err`).
    pub fn answers(self) -> &'static [Kind] {
        use Kind::*;
        match self {
            Hello => &[HelloReply],
            OpenFragment | Finish | ReportCorrupt | BenchSink | IndexUpdate => &[Ok],
            GetCell | Probe => &[CellData],
            PutManifest => &[ManifestPut],
            GetManifest => &[ManifestData, NoManifest],
            List => &[Listing],
            Delete => &[Deleted],
            Stat => &[Stats],
            CheckHeld => &[HeldAnswers],
            IndexRead => &[IndexAnswer],
            BenchSource => &[CellData, Ok],
            Cell | Ok | Err | CellData | ManifestData | NoManifest | Listing | Deleted | Stats | HelloReply | ManifestPut | HeldAnswers | IndexAnswer => &[],
        }
    }
}

/// One received frame.
pub struct Frame {
    pub kind: Kind,
    pub body: Bytes,
}

/// A frame that broke the protocol (unknown kind, over its limit): the
/// sender is not a well-behaved fragstate node and its connection is dropped.
pub fn is_protocol_violation(e: &Error) -> bool {
    matches!(e, Error::Protocol { .. })
}

/// Reads one frame of a kind `expect` accepts. `Ok(None)` is a clean end of
/// stream before a frame started. The kind and the length are checked from
/// the header, before any byte of the body is read or allocated.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R, expect: Expect) -> Result<Option<Frame>> {
    match read_frame_header(r, expect).await? {
        None => Ok(None),
        Some((kind, len)) => read_frame_body(r, kind, len).await.map(Some),
    }
}

/// The first half of [`read_frame`]: the header, checked. A server takes
/// the body's bytes from the sender's budget between the two halves.
pub async fn read_frame_header<R: AsyncRead + Unpin>(r: &mut R, expect: Expect) -> Result<Option<(Kind, u32)>> {
    let mut head = [0u8; FRAME_HEADER_LEN];
    // Distinguish a clean close (no byte of a new frame) from a torn one.
    let n = r.read(&mut head).await.map_err(|e| Error::io("read frame header", e))?;
    if n == 0 {
        return Ok(None);
    }
    if n < FRAME_HEADER_LEN {
        r.read_exact(&mut head[n..]).await.map_err(|e| Error::io("read frame header", e))?;
    }
    let len = u32::from_le_bytes(head[..4].try_into().unwrap());
    let kind = Kind::from_u8(head[4]).ok_or_else(|| Error::protocol("frame", format!("unknown frame kind {}", head[4])))?;
    if !expect.accepts(kind) {
        return Err(Error::protocol("frame", format!("{kind:?} frame where {} was expected", expect.describe())));
    }
    let limit = expect.limit(kind);
    if len > limit {
        return Err(Error::protocol("frame", format!("{kind:?} frame of {len} bytes exceeds the limit of {limit} bytes")));
    }
    Ok(Some((kind, len)))
}

/// The second half of [`read_frame`]: the body of a checked header.
pub async fn read_frame_body<R: AsyncRead + Unpin>(r: &mut R, kind: Kind, len: u32) -> Result<Frame> {
    let mut body = BytesMut::zeroed(len as usize);
    r.read_exact(&mut body).await.map_err(|e| Error::io(format!("read {kind:?} frame body of {len} bytes"), e))?;
    Ok(Frame { kind, body: body.freeze() })
}

/// Writes one frame (header and body; `extra` is appended to `body`, so a
/// cell is sent without copying it behind its frame header).
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, kind: Kind, body: &[u8], extra: &[u8]) -> Result<()> {
    let len = (body.len() + extra.len()) as u32;
    let mut head = [0u8; FRAME_HEADER_LEN];
    head[..4].copy_from_slice(&len.to_le_bytes());
    head[4] = kind as u8;
    let ctx = |e| Error::io(format!("write {kind:?} frame"), e);
    if body.len() + extra.len() <= 64 * 1024 {
        // Small frames in one write: one yamux data frame instead of three.
        let mut buf = Vec::with_capacity(FRAME_HEADER_LEN + len as usize);
        buf.extend_from_slice(&head);
        buf.extend_from_slice(body);
        buf.extend_from_slice(extra);
        w.write_all(&buf).await.map_err(ctx)?;
    } else {
        w.write_all(&head).await.map_err(ctx)?;
        w.write_all(body).await.map_err(ctx)?;
        w.write_all(extra).await.map_err(ctx)?;
    }
    w.flush().await.map_err(ctx)
}

fn opts() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(MAX_CONTROL_BODY as u64)
        .reject_trailing_bytes()
}

pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    opts().serialize(v).expect("wire messages are far below the size limit")
}

pub fn decode<T: for<'de> Deserialize<'de>>(what: &str, b: &[u8]) -> Result<T> {
    opts().deserialize(b).map_err(|e| Error::protocol(format!("frame body ({what})"), format!("undecodable: {e}")))
}

/// A peer's hello, once its protocol version (the first field, read before
/// anything else of the body is trusted) is this node's: nodes of different
/// versions do not form one cluster, and the connection is dropped as a
/// protocol violation whose message names both versions.
pub fn decode_hello(b: &[u8]) -> Result<Hello> {
    match b.get(..4).map(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]])) {
        Some(theirs) if theirs != PROTOCOL_VERSION => Err(Error::protocol(
            "hello",
            format!("the peer speaks fragstate protocol version {theirs}, this node version {PROTOCOL_VERSION}: run one fragstate version across the cluster"),
        )),
        _ => decode("hello", b),
    }
}

/// A cell on the wire: frame header and bytes.
pub fn split_cell(what: &str, body: Bytes, max_len: u32) -> Result<(CellFrame, Bytes)> {
    let frame = CellFrame::decode(&body, max_len).map_err(|e| Error::protocol(format!("frame body ({what})"), e.to_string()))?;
    if body.len() != CELL_FRAME_HEADER_LEN + frame.len as usize {
        return Err(Error::protocol(
            format!("frame body ({what})"),
            format!("cell frame announces {} bytes, frame carries {}", frame.len, body.len() - CELL_FRAME_HEADER_LEN),
        ));
    }
    Ok((frame, body.slice(CELL_FRAME_HEADER_LEN..)))
}

/// Node role, announced in the hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Holds fragments.
    Storage,
    /// Only reads and writes.
    Client,
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "storage" => Ok(Role::Storage),
            "client" => Ok(Role::Client),
            _ => Err(format!("invalid role {s:?}: allowed storage, client")),
        }
    }
}

/// A delete that reaches nodes which were down when it was issued.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tombstone {
    /// `true`: every path starting with `path`; `false`: exactly `path`.
    pub prefix: bool,
    pub path: String,
    /// Objects created before this time (writer's clock) are deleted.
    pub at_unix_ms: u64,
}

/// Exchanged when two nodes connect and every few seconds after.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u32,
    pub role: Role,
    /// Its failure domain; shared, not copied, by every view built from it
    /// ([`Inner::live`](crate::state::Inner) runs for every lookup and placement).
    pub domain: std::sync::Arc<str>,
    pub free_bytes: u64,
    /// Recent path, prefix and overwrite deletes (newest first, bounded).
    pub tombstones: Vec<Tombstone>,
}

/// 2: `List` is paged ([`ListReq`], [`ListPage`]). 3: `PutManifest` answers
/// [`Kind::ManifestPut`], `Delete` of older writes, `ReportCorrupt`
/// requests; [`NodeStats`] has `manifests_deleted` and the scrub's counters.
/// 4: [`NodeStats`] has `heap_bytes`. 5: the cluster key keys Noise's
/// handshake (its prologue) instead of a `pnet` cipher around it; nodes of
/// older versions fail the handshake. 6: [`NodeStats`] has the node's own
/// client's view (`client`: per-peer estimates, adaptive mode); `Probe` requests.
/// 7: the client's view counts manifest lookups (`manifest_lookups`,
/// `manifest_requests`, `manifest_lookups_by_path`); hellos carry tombstones
/// of overwrites (the older writes of a path).
/// 8: `CheckHeld` requests (a holder's check of its copies with the other
/// holders, [`fragstate_core::holder_check`]); [`NodeStats`] counts them.
/// 9: `IndexUpdate` and `IndexRead` requests: the directory index
/// ([`fragstate_core::dir_index`]) on storage nodes; [`NodeStats`] counts its records.
/// 10: the client's view counts directory index rebuilds (`index_rebuilds`).
/// Peers of another version are not members ([`decode_hello`]).
pub const PROTOCOL_VERSION: u32 = 10;

/// A `CheckHeld` request: the asker's copies of objects the receiver also holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldCheckReq {
    pub queries: Vec<HeldQuery>,
}

/// Queries in one `CheckHeld` request at most; a node answers more with an error.
pub const MAX_HELD_QUERIES: usize = 4096;
/// Wire bytes of one `CheckHeld` request's queries, about, at most (one
/// longer query goes alone, within the frame limit).
pub const HELD_CHECK_BATCH_BYTES: usize = 1 << 20;

/// The largest speed probe a node answers ([`Kind::Probe`]).
pub const MAX_PROBE_BYTES: u32 = 1 << 20;

/// A `List` request: committed objects under `prefix` whose path sorts after
/// `after` (the last path of the previous page; `None` for the first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListReq {
    pub prefix: String,
    pub after: Option<String>,
}

/// One page of a listing; `more` says another page follows after the last entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPage {
    pub entries: Vec<ObjectSummary>,
    pub more: bool,
}

/// Encoded bytes of a listing page at most, well below the frame limit
/// ([`MAX_CONTROL_BODY`]), so that a prefix of any size lists in pages.
pub const LIST_PAGE_BYTES: usize = 4 << 20;

/// The page of `sorted` (summaries in path order) after `after`: as many
/// entries as fit in `budget` encoded bytes (at least one).
pub fn list_page(sorted: Vec<ObjectSummary>, after: Option<&str>, budget: usize) -> ListPage {
    let mut entries = Vec::new();
    let mut bytes = 16; // list length + flag
    let mut rest = sorted.into_iter().filter(|s| after.is_none_or(|a| s.path.as_str() > a)).peekable();
    while let Some(s) = rest.peek() {
        // path length prefix + path + length + time + write id
        let size = 8 + s.path.len() + 8 + 8 + 16;
        if !entries.is_empty() && bytes + size > budget {
            break;
        }
        bytes += size;
        entries.push(rest.next().expect("peeked"));
    }
    ListPage { more: rest.peek().is_some(), entries }
}

#[derive(Serialize, Deserialize)]
pub struct GetCellReq {
    pub path: String,
    pub write_id: WriteId,
    pub index: u8,
    pub stripe: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum WireDelete {
    Path(String),
    Prefix(String),
    Write { path: String, write_id: WriteId },
    OlderWrites { path: String, newest: WriteVersion },
}

impl From<&DeleteTarget> for WireDelete {
    fn from(t: &DeleteTarget) -> Self {
        match t {
            DeleteTarget::Path(p) => WireDelete::Path(p.clone()),
            DeleteTarget::Prefix(p) => WireDelete::Prefix(p.clone()),
            DeleteTarget::Write { path, write_id } => WireDelete::Write { path: path.clone(), write_id: *write_id },
            DeleteTarget::OlderWrites { path, newest } => WireDelete::OlderWrites { path: path.clone(), newest: *newest },
        }
    }
}

impl From<WireDelete> for DeleteTarget {
    fn from(t: WireDelete) -> Self {
        match t {
            WireDelete::Path(p) => DeleteTarget::Path(p),
            WireDelete::Prefix(p) => DeleteTarget::Prefix(p),
            WireDelete::Write { path, write_id } => DeleteTarget::Write { path, write_id },
            WireDelete::OlderWrites { path, newest } => DeleteTarget::OlderWrites { path, newest },
        }
    }
}

#[derive(Serialize, Deserialize)]
pub struct WireDeleteStats {
    pub manifests: u64,
    pub fragments: u64,
    pub bytes: u64,
}

impl From<DeleteStats> for WireDeleteStats {
    fn from(s: DeleteStats) -> Self {
        WireDeleteStats { manifests: s.manifests, fragments: s.fragments, bytes: s.bytes }
    }
}

impl From<WireDeleteStats> for DeleteStats {
    fn from(s: WireDeleteStats) -> Self {
        DeleteStats { manifests: s.manifests, fragments: s.fragments, bytes: s.bytes }
    }
}

/// An error as sent back to the requester: enough to rebuild the variants
/// that the pipelines tell apart ([`Error::is_node_fault`]).
#[derive(Serialize, Deserialize)]
pub enum WireError {
    NotFound { path: String },
    StoreFull { node: String, budget: u64, used: u64, requested: u64 },
    CellNotFound { path: String, index: u64, stripe: u32, node: String },
    Format { what: String, reason: String },
    InvalidState { path: String, reason: String },
    InvalidParameter { name: String, value: String, allowed: String },
    /// Anything else (I/O on the holder, …): the holder is at fault.
    Node { message: String },
}

impl WireError {
    pub fn from_error(e: &Error) -> Self {
        match e {
            Error::NotFound { path } => WireError::NotFound { path: path.clone() },
            Error::StoreFull { node, budget, used, requested } => {
                WireError::StoreFull { node: node.clone(), budget: *budget, used: *used, requested: *requested }
            }
            Error::CellNotFound { path, index, stripe, node } => {
                WireError::CellNotFound { path: path.clone(), index: *index as u64, stripe: *stripe, node: node.clone() }
            }
            Error::Format { what, reason } => WireError::Format { what: what.clone(), reason: reason.clone() },
            Error::InvalidState { path, reason } => WireError::InvalidState { path: path.clone(), reason: reason.clone() },
            Error::InvalidParameter { name, value, allowed } => {
                WireError::InvalidParameter { name: name.to_string(), value: value.clone(), allowed: allowed.clone() }
            }
            other => WireError::Node { message: other.to_string() },
        }
    }

    pub fn into_error(self, node: &NodeId) -> Error {
        match self {
            WireError::NotFound { path } => Error::NotFound { path },
            WireError::StoreFull { node, budget, used, requested } => Error::StoreFull { node, budget, used, requested },
            WireError::CellNotFound { path, index, stripe, node } => Error::CellNotFound { path, index: index as usize, stripe, node },
            WireError::Format { what, reason } => Error::Format { what: format!("node {node}: {what}"), reason },
            WireError::InvalidState { path, reason } => Error::InvalidState { path, reason: format!("node {node}: {reason}") },
            WireError::InvalidParameter { name, value, allowed } => Error::InvalidParameter {
                name: "parameter (remote)",
                value: format!("{name} = {value}"),
                allowed,
            },
            WireError::Node { message } => Error::NodeUnavailable { node: node.clone(), reason: message },
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
