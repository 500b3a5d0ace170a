//! Deterministic randomness for tests, benchmarks, simulations and
//! protocol choices that need no secrecy (no randomness source, no I/O):
//! the same seed gives the same sequence on every machine.

/// xorshift64: fast, seedable, not for anything an attacker may predict.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0 .. n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (((self.next_u64() >> 11) as u128 * n as u128) >> 53) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `len` bytes of [`Rng`] output from `seed`: incompressible-looking.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..len).map(|_| (rng.next_u64() >> 32) as u8).collect()
}

/// `len` bytes that look like serialized state: in every 16 bytes, 8 of
/// slowly changing structure and 8 of noise (zstd halves them, as it does
/// serialized records).
pub fn state_like(len: usize) -> Vec<u8> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    (0..len)
        .map(|i| {
            let x = rng.next_u64();
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

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Rng::new(3);
        let mut seen = [0u32; 7];
        for _ in 0..7_000 {
            seen[rng.below(7)] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
        assert_eq!(rng.below(0), 0);
        assert!((0.0..1.0).contains(&rng.unit()));
    }
}
