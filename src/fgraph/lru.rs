// SPDX-License-Identifier: GPL-2.0

//! The index allocator of the graph ops array: least recently used first.
//!
//! An ops' index is written into the bitmap of every frame it hooks, and a frame can outlive the
//! ops (a task sleeping in a hooked function). If the index went straight to the next ops, that
//! frame's return would call the new ops' return callback. So a released index goes to the back
//! of a queue and the longest-free index is handed out first, as upstream does.
//!
//! ```text
//!   table: [ 3 | 4 | 5 | ... | 15 | 0 | - | - ]     - : handed out
//!            ^ next (oldest free)     ^ last (where the next release goes)
//! ```
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

/// Why a release was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LruError {
    /// The index is out of range or not allocated.
    NotAllocated,
}

/// An LRU allocator of the indexes `0..N` (`N` <= 32).
#[derive(Clone, Debug)]
pub struct Lru<const N: usize> {
    table: [Option<u8>; N],
    next: usize,
    last: usize,
    allocated: u32,
}

impl<const N: usize> Default for Lru<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Lru<N> {
    const ASSERT_N: () = assert!(N > 0 && N <= 32);

    /// All indexes free, handed out in ascending order.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ASSERT_N;
        let mut table = [None; N];
        let mut i = 0;
        while i < N {
            table[i] = Some(i as u8);
            i += 1;
        }
        Self {
            table,
            next: 0,
            last: 0,
            allocated: 0,
        }
    }

    /// The least recently released free index, or `None` when all `N` are in use.
    pub fn alloc(&mut self) -> Option<usize> {
        let idx = self.table[self.next].take()?;
        self.next = (self.next + 1) % N;
        self.allocated |= 1 << idx;
        Some(idx as usize)
    }

    /// Returns `idx` to the back of the queue.
    pub fn release(&mut self, idx: usize) -> Result<(), LruError> {
        if idx >= N || self.allocated & (1 << idx) == 0 || self.table[self.last].is_some() {
            return Err(LruError::NotAllocated);
        }
        self.table[self.last] = Some(idx as u8);
        self.last = (self.last + 1) % N;
        self.allocated &= !(1 << idx);
        Ok(())
    }

    /// The bitmask of allocated indexes.
    pub fn allocated(&self) -> u32 {
        self.allocated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_all_then_none() {
        let mut l = Lru::<16>::new();
        for i in 0..16 {
            assert_eq!(l.alloc(), Some(i));
        }
        assert_eq!(l.alloc(), None);
        assert_eq!(l.allocated(), 0xffff);
    }

    #[test]
    fn released_index_is_reused_last() {
        let mut l = Lru::<16>::new();
        let a = l.alloc().unwrap();
        let b = l.alloc().unwrap();
        assert_eq!((a, b), (0, 1));
        l.release(a).unwrap();
        // 2..15 come before 0 again.
        let order: Vec<_> = std::iter::from_fn(|| l.alloc()).collect();
        assert_eq!(order, (2..16).chain([0]).collect::<Vec<_>>());
        // Releases queue up in release order.
        l.release(7).unwrap();
        l.release(3).unwrap();
        l.release(12).unwrap();
        assert_eq!(l.alloc(), Some(7));
        assert_eq!(l.alloc(), Some(3));
        assert_eq!(l.alloc(), Some(12));
        assert_eq!(l.alloc(), None);
    }

    #[test]
    fn bad_release_is_refused_and_changes_nothing() {
        let mut l = Lru::<4>::new();
        assert_eq!(l.release(0), Err(LruError::NotAllocated));
        let a = l.alloc().unwrap();
        assert_eq!(l.release(9), Err(LruError::NotAllocated));
        l.release(a).unwrap();
        assert_eq!(l.release(a), Err(LruError::NotAllocated), "double release");
        let got: Vec<_> = std::iter::from_fn(|| l.alloc()).collect();
        assert_eq!(got, vec![1, 2, 3, 0]);
    }
}
