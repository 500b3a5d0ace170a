//! The cluster key: 32 secret bytes shared by every member, read from a key
//! file in the standard libp2p/IPFS swarm-key (`pnet`) format:
//!
//! ```text
//! /key/swarm/psk/1.0.0/
//! /base16/
//! <64 hex digits: 32 random bytes>
//! ```
//!
//! `fragstate keygen FILE` writes one (mode 0600). Every node of a cluster
//! uses the same file; it keys the noise handshake (its prologue,
//! `swarm::build_transport`), so a connection between nodes with different
//! keys (or one with a key and one without) fails in the handshake and such
//! a node can neither join nor read.
//! The node identity (peer id) key is separate: see [`load_or_create_identity`].

use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use libp2p::identity::Keypair;
use libp2p::pnet::PreSharedKey;

use fragstate_core::error::{Error, Result};

/// Parses a key file's text. Anything but ASCII is refused first: libp2p's
/// parser slices the hex line by bytes and panics inside a multi-byte
/// character (found by the `cluster_key` fuzz target).
pub fn parse_cluster_key(text: &str, file: &Path) -> Result<PreSharedKey> {
    if let Some(at) = text.bytes().position(|b| !b.is_ascii()) {
        return Err(Error::format(
            format!("cluster key file {}", file.display()),
            format!("non-ASCII byte at offset {at} (a key file is \"/key/swarm/psk/1.0.0/\", \"/base16/\" and 64 hex digits on three lines)"),
        ));
    }
    PreSharedKey::from_str(text.trim_end()).map_err(|e| {
        Error::format(
            format!("cluster key file {}", file.display()),
            format!("{e} (expected \"/key/swarm/psk/1.0.0/\", \"/base16/\" and 64 hex digits on three lines)"),
        )
    })
}

/// Reads a key file; refuses one that users other than its owner may read
/// or write (as ssh does for private keys): whoever reads the key can join
/// the cluster and serve forged state to every Flink process.
pub fn load_cluster_key(file: &Path) -> Result<PreSharedKey> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file)
        .map_err(|e| Error::io(format!("read cluster key file {}", file.display()), e))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        return Err(Error::invalid(
            "cluster key file mode",
            format!("{mode:04o} on {}", file.display()),
            format!("owner-only (0600 or 0400): run `chmod 600 {}` (fragstate keygen writes 0600)", file.display()),
        ));
    }
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(format!("read cluster key file {}", file.display()), e))?;
    parse_cluster_key(&text, file)
}

fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::io("read /dev/urandom", e))?;
    Ok(b)
}

/// Text of a new random key file.
pub fn generate_cluster_key_text() -> Result<String> {
    let bytes: [u8; 32] = random_bytes()?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("/key/swarm/psk/1.0.0/\n/base16/\n{hex}\n"))
}

/// Writes a new key file; refuses to overwrite an existing one.
pub fn write_cluster_key(file: &Path) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let text = generate_cluster_key_text()?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .map_err(|e| Error::io(format!("create cluster key file {}", file.display()), e))?;
    f.write_all(text.as_bytes()).map_err(|e| Error::io(format!("write cluster key file {}", file.display()), e))
}

/// The node's identity: kept in `file` (protobuf-encoded ed25519 keypair) so
/// that a restarted disk-backed node has the same peer id, which is what the
/// manifests name as holder. Created on first use.
pub fn load_or_create_identity(file: &Path) -> Result<Keypair> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::read(file) {
        Ok(bytes) => Keypair::from_protobuf_encoding(&bytes)
            .map_err(|e| Error::format(format!("node identity file {}", file.display()), e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let kp = Keypair::generate_ed25519();
            let bytes = kp.to_protobuf_encoding().map_err(|e| Error::format("node identity", e.to_string()))?;
            let tmp = file.with_extension("tmp");
            let write = || -> std::io::Result<()> {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
                f.write_all(&bytes)?;
                f.sync_all()?;
                std::fs::rename(&tmp, file)
            };
            write().map_err(|e| Error::io(format!("write node identity file {}", file.display()), e))?;
            Ok(kp)
        }
        Err(e) => Err(Error::io(format!("read node identity file {}", file.display()), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_differ() {
        let a = generate_cluster_key_text().unwrap();
        let b = generate_cluster_key_text().unwrap();
        assert_ne!(a, b);
        let ka = parse_cluster_key(&a, Path::new("a")).unwrap();
        let kb = parse_cluster_key(&b, Path::new("b")).unwrap();
        assert_ne!(ka.fingerprint().to_string(), kb.fingerprint().to_string());
        // The parsed key is the 32 bytes the file's hex line spells.
        let hex = a.lines().nth(2).unwrap();
        assert_eq!(hex.len(), 64, "{a}");
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
        }
        assert_eq!(ka.fingerprint().to_string(), PreSharedKey::new(bytes).fingerprint().to_string());
    }

    #[test]
    fn a_hex_line_with_multi_byte_characters_is_an_error_not_a_panic() {
        // 64 bytes of "hex" with a 3-byte character across a digit pair (the fuzzer's find).
        let text = format!("/key/swarm/psk/1.0.0/\n/base16/\n5e5e5e5e5e5e5\u{203f}{}\n", "e5".repeat(24));
        assert_eq!(text.lines().nth(2).unwrap().len(), 64);
        let e = parse_cluster_key(&text, Path::new("k.key")).unwrap_err().to_string();
        assert!(e.contains("k.key") && e.contains("non-ASCII byte at offset 44"), "{e}");
    }

    #[test]
    fn key_files_others_may_read_are_refused_naming_file_and_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cluster.key");
        write_cluster_key(&file).unwrap();
        let key = load_cluster_key(&file).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = load_cluster_key(&file).unwrap_err().to_string();
            assert!(e.contains(&format!("{mode:04o} on {}", file.display())) && e.contains("chmod 600"), "{e}");
        }
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(load_cluster_key(&file).unwrap().fingerprint().to_string(), key.fingerprint().to_string());
    }

    #[test]
    fn bad_key_files_name_the_file() {
        let e = parse_cluster_key("/key/swarm/psk/1.0.0/\n/base16/\nxyz\n", Path::new("/etc/k")).unwrap_err().to_string();
        assert!(e.contains("/etc/k"), "{e}");
        assert!(parse_cluster_key("", Path::new("k")).is_err());
    }
}
