//! `fragstate keygen FILE`: a new random cluster key.


use fragstate_core::Result;
use fragstate_net::key::write_cluster_key;


pub(crate) fn keygen(file: &std::path::Path) -> Result<()> {
    write_cluster_key(file)?;
    println!("wrote a new cluster key to {}", file.display());
    Ok(())
}
