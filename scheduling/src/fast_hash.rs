//! A fast hasher for the planner's own maps and sets (pod signatures, topology groups,
//! domain names, memo keys), seeded once per process.
//!
//! Why not the standard library's SipHash: its per-key setup and rounds were some 7 % of a
//! 20,000-pod plan's instructions. Why a random seed all the same: the extender and the
//! provisioner are long-lived services hashing keys that come from pods users write, and with a
//! seed known in advance anyone can craft many keys that land in one bucket and turn each map
//! operation into a scan. The seed is drawn once per process from the standard library's
//! randomness and copied into each map, so a hash costs what it did with a fixed seed.
//!
//! Why a folded multiply (the full 128-bit product, its halves xored) per word and not a
//! plain multiply: a plain multiply by an odd constant turns a flip of the top input bit into
//! a flip of the top output bit whatever the state, so keys crafted from such flips collide
//! under every seed; the high half of the full product depends on all input bits.
//!
//! Why it is safe for determinism: nothing the planner outputs depends on a map's iteration
//! order (a test plans the same scenarios under different seeds), so the seed changes the
//! time, never the plan.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A [`HashMap`] with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, FastBuildHasher>;
/// A [`HashSet`] with [`FastHasher`].
pub type FastSet<T> = HashSet<T, FastBuildHasher>;

const K: u64 = 0xf135_7aea_2e62_a9c5;
const FINISH: u64 = K ^ 0x2d35_8dcc_aa6c_78a5;

/// The process's seed, drawn on first use.
static PROCESS_SEED: OnceLock<u64> = OnceLock::new();

#[cfg(test)]
thread_local! {
    /// A seed the tests set for the maps their thread creates (see [`with_seed`]).
    static TEST_SEED: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

fn process_seed() -> u64 {
    #[cfg(test)]
    if let Some(seed) = TEST_SEED.with(std::cell::Cell::get) {
        return seed;
    }
    // `RandomState` draws its keys from the OS; hashing a constant with them gives a random
    // word without a dependency.
    *PROCESS_SEED.get_or_init(|| RandomState::new().hash_one(0x5eed_u64))
}

/// Runs `f` with every [`FastMap`] and [`FastSet`] it creates on this thread seeded with
/// `seed`, to show that plans do not depend on the seed.
#[cfg(test)]
pub(crate) fn with_seed<R>(seed: u64, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TEST_SEED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(TEST_SEED.with(|s| s.replace(Some(seed))));
    f()
}

/// Builds [`FastHasher`]s starting from the process's seed (copied here when a map is made).
#[derive(Clone, Copy, Debug)]
pub struct FastBuildHasher {
    seed: u64,
}

impl Default for FastBuildHasher {
    #[inline]
    fn default() -> Self {
        FastBuildHasher {
            seed: process_seed(),
        }
    }
}

impl BuildHasher for FastBuildHasher {
    type Hasher = FastHasher;

    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.seed)
    }
}

/// The low and high halves of the full product, xored: every output bit depends on every
/// input bit.
#[inline]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let m = u128::from(a) * u128::from(b);
    (m as u64) ^ ((m >> 64) as u64)
}

/// See the module documentation.
#[derive(Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = folded_multiply(self.0 ^ word, K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // Once more, so the low bits (the table's index) depend on the last word's high bits.
        folded_multiply(self.0, FINISH)
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
    use std::hash::Hash;

    fn hash<T: Hash + ?Sized>(t: &T) -> u64 {
        FastBuildHasher::default().hash_one(t)
    }

    fn hash_seeded<T: Hash + ?Sized>(seed: u64, t: &T) -> u64 {
        FastBuildHasher { seed }.hash_one(t)
    }

    /// How many of `2^bits` buckets (a table's index: the hash's low bits) the keys fill.
    fn buckets_filled(seed: u64, keys: &[Vec<u8>], bits: u32) -> usize {
        let mask = (1u64 << bits) - 1;
        let filled: HashSet<u64> = keys
            .iter()
            .map(|k| hash_seeded(seed, k.as_slice()) & mask)
            .collect();
        filled.len()
    }

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// Seeds other than the ones the keys were crafted for: the process's own and two more.
    fn other_seeds() -> [u64; 3] {
        [process_seed(), 0x0123_4567_89ab_cdef, 0xdead_beef_cafe_f00d]
    }

    #[test]
    fn same_key_same_hash_and_near_keys_differ() {
        assert_eq!(hash("zone-a"), hash("zone-a"));
        let keys = ["", "a", "a\0", "ab", "abcdefgh", "abcdefghi", "abcdefgi"];
        let hashes: HashSet<u64> = keys.iter().map(hash).collect();
        assert_eq!(hashes.len(), keys.len());
        assert_ne!(hash(&(1usize, 2usize)), hash(&(2usize, 1usize)));
    }

    #[test]
    fn low_bits_spread_small_integers() {
        // A table of 1,024 buckets indexes by the low 10 bits: consecutive integers (pod and
        // claim indices) must not pile into a few buckets.
        for seed in [0, process_seed()] {
            let buckets: HashSet<u64> =
                (0u64..1024).map(|i| hash_seeded(seed, &i) & 1023).collect();
            assert!(
                buckets.len() > 600,
                "seed {seed:x}: {} buckets",
                buckets.len()
            );
        }
    }

    #[test]
    fn the_seed_is_drawn_once_and_maps_copy_it() {
        assert_eq!(process_seed(), process_seed());
        assert_eq!(FastBuildHasher::default().seed, process_seed());
        // A test can set the seed for its thread, and gets the process's back afterwards.
        let before = process_seed();
        assert_eq!(with_seed(7, || FastBuildHasher::default().seed), 7);
        assert_eq!(process_seed(), before);
    }

    /// Keys crafted with a known seed: two words, the second chosen so the state after it is
    /// the same for every key. With the seed the attacker assumed, 4,096 keys share one hash
    /// (every insertion probes past all the others: quadratic); with any other seed they fill
    /// about as many buckets as random keys would (a table of 4,096 holds random keys in
    /// some 2,600).
    #[test]
    fn keys_crafted_for_a_known_seed_spread_under_another() {
        let known = 0; // what a fixed seed would be
        let target = 0x5555_aaaa_5555_aaaa;
        let keys: Vec<Vec<u8>> = (0..4096u64)
            .map(|i| {
                let w1 = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                // The state after the length prefix and w1, under the known seed.
                let mut h = FastHasher(known);
                h.write_usize(16);
                h.add(w1);
                bytes(&[w1, h.0 ^ target])
            })
            .collect();
        let under_known: HashSet<u64> = keys
            .iter()
            .map(|k| hash_seeded(known, k.as_slice()))
            .collect();
        assert_eq!(
            under_known.len(),
            1,
            "the crafted keys collide under the seed they were made for"
        );
        for seed in other_seeds() {
            let filled = buckets_filled(seed, &keys, 12);
            assert!(
                filled > 2300,
                "seed {seed:x}: 4,096 keys in {filled} of 4,096 buckets"
            );
        }
    }

    /// Keys crafted without knowing the seed, against the plain multiply-rotate mixing this
    /// hasher used before: flipping the top bit of one word and the bit the rotation moves it
    /// to in the next leaves the state unchanged whatever the seed, so ten such independent
    /// choices give 1,024 keys that collide under every seed. The folded multiply spreads them.
    #[test]
    fn keys_crafted_against_a_plain_multiply_spread() {
        fn plain_multiply_rotate(seed: u64, words: &[u64]) -> u64 {
            words
                .iter()
                .fold(seed, |s, &w| (s ^ w).wrapping_mul(K).rotate_left(26))
        }
        let keys: Vec<Vec<u64>> = (0..1024u64)
            .map(|choice| {
                let mut words = vec![0x6162_6364_6566_6768; 20];
                for bit in 0..10 {
                    if choice >> bit & 1 == 1 {
                        words[2 * bit] ^= 1 << 63;
                        words[2 * bit + 1] ^= 1 << 25;
                    }
                }
                words
            })
            .collect();
        for seed in [0, 1, process_seed()] {
            let plain: HashSet<u64> = keys
                .iter()
                .map(|k| plain_multiply_rotate(seed, k))
                .collect();
            assert_eq!(
                plain.len(),
                1,
                "the crafted keys collide under the old mixing, seed {seed:x}"
            );
        }
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| bytes(k)).collect();
        for seed in other_seeds() {
            let filled = buckets_filled(seed, &keys, 10);
            assert!(
                filled > 550,
                "seed {seed:x}: 1,024 keys in {filled} of 1,024 buckets"
            );
        }
    }
    /// The planner's output is the same whatever the seed: maps change order, never the plan.
    #[test]
    fn plans_do_not_depend_on_the_seed() {
        use crate::fixtures::{bench_catalog, bench_pods, generic_pods, pool};
        use crate::{Options, Snapshot, schedule};
        for pods in [bench_pods(1200, 42), generic_pods(600, 7)] {
            let snap = Snapshot {
                pending: pods,
                nodepools: vec![pool("default", bench_catalog(400))],
                ..Default::default()
            };
            let plans: Vec<_> = [1, 0x9e37_79b9_7f4a_7c15, process_seed()]
                .into_iter()
                .map(|seed| with_seed(seed, || schedule(&snap, &Options::default())))
                .collect();
            assert!(
                plans[0].new_claims.len() > 1,
                "a plan with claims to compare"
            );
            assert!(plans[0].unschedulable.is_empty());
            assert_eq!(plans[0], plans[1]);
            assert_eq!(plans[0], plans[2]);
        }
    }
}
