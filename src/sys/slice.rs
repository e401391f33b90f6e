// SPDX-License-Identifier: GPL-2.0

//! Slice helpers without panic paths objtool does not know.
//!
//! At `-Copt-level=2` (the kernel's level with `CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE`), core's
//! `copy_from_slice` and `sort_unstable` keep calls to `len_mismatch_fail` and
//! `panic_on_ord_violation`. Both never return, but 6.12's objtool does not have them in its
//! list of noreturn Rust functions: it then warns that the caller "falls through to the next
//! function", and ufgraph's build treats warnings as errors. These do the same work with no
//! such call.
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

/// Copies `src` into `dst`, which must have the same length (checked in debug builds: the host
/// tests). In release builds the shorter length wins, never a panic.
#[inline]
pub fn copy<T: Copy>(dst: &mut [T], src: &[T]) {
    debug_assert_eq!(dst.len(), src.len());
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

/// Sorts `v` in place, O(n log n) with no allocation and no recursion: a heapsort. Not stable
/// (callers sort plain numbers, or indices by a key).
pub fn sort<T: Ord + Copy>(v: &mut [T]) {
    sort_by(v, |a, b| a < b);
}

/// As [`sort`], ordered by `less`, which must be a strict weak order (if it is not, the order
/// is unspecified, never a panic).
pub fn sort_by<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    // Sorted already, the common case (a list of addresses read in order, ftrace's own list):
    // one pass instead of the heapsort's n log n (18165 functions: about 5 million
    // instructions).
    if v.windows(2).all(|w| !less(&w[1], &w[0])) {
        return;
    }
    // Sift the element at `root` down the max-heap held in `v[..end]`.
    let sift = |v: &mut [T], mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && less(&v[child], &v[child + 1]) {
            child += 1;
        }
        if !less(&v[root], &v[child]) {
            return;
        }
        v.swap(root, child);
        root = child;
    };
    let n = v.len();
    for i in (0..n / 2).rev() {
        sift(v, i, n);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        sift(v, 0, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_std() {
        let mut seed = 0x1234_5678u64;
        for n in [0usize, 1, 2, 3, 7, 64, 1000] {
            let mut v: std::vec::Vec<u64> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed % 97
                })
                .collect();
            let mut w = v.clone();
            sort(&mut v);
            w.sort();
            assert_eq!(v, w);
        }
    }

    #[test]
    fn sorted_reversed_and_almost_sorted() {
        let sorted: std::vec::Vec<u64> = (0..1000).map(|i| i / 3).collect();
        let mut v = sorted.clone();
        sort(&mut v);
        assert_eq!(v, sorted);
        v.reverse();
        sort(&mut v);
        assert_eq!(v, sorted);
        // Sorted but for its last element, then its first: the one-pass check must not stop
        // the sort.
        let mut v = sorted.clone();
        v.push(0);
        sort(&mut v);
        let mut w = sorted.clone();
        w.insert(0, 0);
        assert_eq!(v, w);
        let mut v = sorted.clone();
        v[0] = 999;
        sort(&mut v);
        let mut w = sorted[1..].to_vec();
        w.push(999);
        assert_eq!(v, w);
    }

    #[test]
    fn sorts_by_a_key() {
        let names = ["vfs_read", "a", "vfs_open", "zz", "m"];
        let mut idx = [0usize, 1, 2, 3, 4];
        sort_by(&mut idx, |&a, &b| names[a] < names[b]);
        let sorted: std::vec::Vec<_> = idx.iter().map(|&i| names[i]).collect();
        assert_eq!(sorted, ["a", "m", "vfs_open", "vfs_read", "zz"]);
    }

    #[test]
    fn copies() {
        let mut d = [0u8; 4];
        copy(&mut d, b"abcd");
        assert_eq!(&d, b"abcd");
    }
}
