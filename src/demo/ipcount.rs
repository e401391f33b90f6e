// SPDX-License-Identifier: GPL-2.0

//! Lock-free hit counts per instruction pointer, for callbacks that may run in any context.
//!
//! The table is a fixed array of `N` slots with open addressing (linear probing). A slot is claimed
//! once, by a compare-and-swap of its key from 0 to the ip, and never freed while the table lives;
//! counts only grow. That makes `hit()` wait-free for a known ip and lock-free on first sight, safe
//! from NMI and from every CPU at once, with no allocation.
//!
//! ```text
//!   keys:   [ 0 | ip_a | 0 | ip_c | ip_b | 0 | ... ]   slot = hash(ip) % N, then probe +1
//!   counts: [ 0 |  12  | 0 |   1  |  40  | 0 | ... ]   counts[i] belongs to keys[i]
//!   lost:   hits of ips that found the table full
//! ```
//!
//! A reader may see a key whose count is still 0 (claimed, not yet added): it is reported as 0.
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Hit counts for up to `N` distinct instruction pointers. `N` must be a power of two.
pub struct IpCounts<const N: usize> {
    keys: [AtomicUsize; N],
    counts: [AtomicU64; N],
    lost: AtomicU64,
}

impl<const N: usize> Default for IpCounts<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> IpCounts<N> {
    const ASSERT_POW2: () = assert!(N.is_power_of_two());

    /// An empty table.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ASSERT_POW2;
        Self {
            keys: [const { AtomicUsize::new(0) }; N],
            counts: [const { AtomicU64::new(0) }; N],
            lost: AtomicU64::new(0),
        }
    }

    fn home(ip: usize) -> usize {
        // Fibonacci hashing: function addresses share their low bits (alignment) and high bits
        // (the text region), so mix before taking the top bits.
        let h = (ip as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) as usize & (N - 1)
    }

    /// Counts one hit of `ip`. An `ip` of 0 is not a function: it is counted as lost.
    pub fn hit(&self, ip: usize) {
        if ip == 0 {
            self.lost.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let home = Self::home(ip);
        for probe in 0..N {
            let i = (home + probe) & (N - 1);
            let mut key = self.keys[i].load(Ordering::Acquire);
            if key == 0 {
                key =
                    match self.keys[i].compare_exchange(0, ip, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(_) => ip,
                        Err(other) => other,
                    };
            }
            if key == ip {
                self.counts[i].fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        self.lost.fetch_add(1, Ordering::Relaxed);
    }

    /// The hits counted for `ip` so far.
    pub fn get(&self, ip: usize) -> u64 {
        self.iter().find(|&(k, _)| k == ip).map_or(0, |(_, c)| c)
    }

    /// Hits that could not be attributed because the table was full.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    /// All hits: attributed and lost.
    pub fn total(&self) -> u64 {
        self.iter().map(|(_, c)| c).sum::<u64>() + self.lost()
    }

    /// The (ip, hits) pairs seen so far, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.keys
            .iter()
            .zip(self.counts.iter())
            .filter_map(|(k, c)| {
                let k = k.load(Ordering::Acquire);
                (k != 0).then(|| (k, c.load(Ordering::Relaxed)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_each_ip_apart() {
        let t = IpCounts::<8>::new();
        for _ in 0..3 {
            t.hit(0xffff_ffff_8100_0000);
        }
        t.hit(0xffff_ffff_8100_0040);
        assert_eq!(t.get(0xffff_ffff_8100_0000), 3);
        assert_eq!(t.get(0xffff_ffff_8100_0040), 1);
        assert_eq!(t.get(0xffff_ffff_8100_0080), 0);
        assert_eq!(t.total(), 4);
        assert_eq!(t.lost(), 0);
    }

    #[test]
    fn full_table_counts_lost_hits() {
        let t = IpCounts::<4>::new();
        for ip in 1..=6usize {
            t.hit(ip * 16);
        }
        assert_eq!(t.iter().count(), 4);
        assert_eq!(t.lost(), 2);
        assert_eq!(t.total(), 6);
        // A known ip still counts once the table is full.
        let (known, before) = t.iter().next().unwrap();
        t.hit(known);
        assert_eq!(t.get(known), before + 1);
    }

    #[test]
    fn zero_ip_is_lost() {
        let t = IpCounts::<4>::new();
        t.hit(0);
        assert_eq!(t.lost(), 1);
        assert_eq!(t.iter().count(), 0);
    }

    #[test]
    fn concurrent_hits_are_all_counted() {
        let t = Arc::new(IpCounts::<64>::new());
        let threads: Vec<_> = (0..8)
            .map(|n| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000usize {
                        // Every thread races to claim the same 40 keys.
                        t.hit(0x1000 + ((i + n) % 40) * 0x40);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert_eq!(t.iter().count(), 40);
        assert_eq!(t.total(), 80_000);
        assert_eq!(t.lost(), 0);
        // Each key was claimed exactly once.
        let mut keys: Vec<_> = t.iter().map(|(k, _)| k).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 40);
    }
}
