//! One module per subcommand of `fragstate`.

pub(crate) mod bench_codec;
pub(crate) mod bench_checkpoints;
pub(crate) mod bench_mesh;
pub(crate) mod bench_net;
pub(crate) mod bench_restore;
pub(crate) mod bench_swarm;
pub(crate) mod debug_attack;
pub(crate) mod debug_frame;
pub(crate) mod get;
pub(crate) mod inspect;
pub(crate) mod keygen;
pub(crate) mod ls;
pub(crate) mod node;
pub(crate) mod put;
pub(crate) mod rm;
pub(crate) mod stats;
pub(crate) mod tune;
pub(crate) mod tune_simulate;
