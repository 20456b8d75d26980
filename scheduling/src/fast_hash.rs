//! A fixed-seed hasher for the planner's own maps and sets (pod signatures, topology
//! groups, domain names, memo keys).
//!
//! Why not the standard library's SipHash: its per-key setup and rounds were some 7 % of a
//! 20,000-pod plan's instructions, and its random seed buys protection against crafted collisions,
//! which matters for a long-lived service hashing untrusted keys, less for one planning call
//! over a snapshot whose size is already bounded. Why it is safe for determinism: nothing
//! the planner outputs depends on a map's iteration order (it never did: SipHash's seed
//! changes every run), so a different hash changes the time, never the plan.
//!
//! Word-at-a-time multiply-rotate mixing, in the style of the hashers compilers use for
//! their interning tables.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A [`HashMap`] with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A [`HashSet`] with [`FastHasher`].
pub type FastSet<T> = HashSet<T, BuildHasherDefault<FastHasher>>;

const K: u64 = 0xf135_7aea_2e62_a9c5;

/// See the module documentation.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(K).rotate_left(26);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // A folded full-width multiply, so the low bits (the table's index) depend on
        // every input bit: a plain multiply carries only upwards.
        let m = u128::from(self.0) * u128::from(K ^ 0x2d35_8dcc_aa6c_78a5);
        (m as u64) ^ ((m >> 64) as u64)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            // The length keeps "a\0" and "a" apart within the last word.
            self.add(u64::from_le_bytes(buf) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(t: &T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(t)
    }

    #[test]
    fn same_key_same_hash_and_near_keys_differ() {
        assert_eq!(hash(&"zone-a"), hash(&"zone-a"));
        let keys = ["", "a", "a\0", "ab", "abcdefgh", "abcdefghi", "abcdefgi"];
        let hashes: HashSet<u64> = keys.iter().map(hash).collect();
        assert_eq!(hashes.len(), keys.len());
        assert_ne!(hash(&(1usize, 2usize)), hash(&(2usize, 1usize)));
    }

    #[test]
    fn low_bits_spread_small_integers() {
        // A table of 1,024 buckets indexes by the low 10 bits: consecutive integers (pod and
        // claim indices) must not pile into a few buckets.
        let buckets: HashSet<u64> = (0u64..1024).map(|i| hash(&i) & 1023).collect();
        assert!(buckets.len() > 600, "{} buckets", buckets.len());
    }
}
