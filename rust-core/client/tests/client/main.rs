//! The client's tests over in-process meshes (`fragstate_client::mesh::Mesh`),
//! one module per concern, in one test binary: as seven binaries each linked
//! and optimised the whole dependency tree again, which cost a fresh CI build
//! three minutes of CPU. Run one module with
//! `cargo test --profile ci -p fragstate-client --test client lookup::`.

mod adaptive;
mod bit_flips;
mod common;
mod dir_index;
mod lookup;
mod mesh;
mod overwrite;
mod scrub;
