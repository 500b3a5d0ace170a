//! Deterministic bytes for tests and benchmarks (no randomness source, no
//! I/O): the same call gives the same bytes on every machine.

/// `len` bytes of xorshift64 output from `seed`: incompressible-looking.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

/// `len` bytes that look like serialized state: in every 16 bytes, 8 of
/// slowly changing structure and 8 of noise (zstd halves them, as it does
/// serialized records).
pub fn state_like(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 16 < 8 {
                (i / 64) as u8
            } else {
                x as u8
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_seed_dependent() {
        assert_eq!(noise(64, 1), noise(64, 1));
        assert_ne!(noise(64, 1), noise(64, 2));
        assert_eq!(state_like(100), state_like(100));
        assert_eq!(&state_like(100)[..8], &[0u8; 8]);
    }
}
