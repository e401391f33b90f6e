// SPDX-License-Identifier: GPL-2.0

//! What the 6.12 kernel crate's `KVec` lacks: taking elements out.

use kernel::alloc::KVec;

/// Removes and returns element `i`, shifting the ones after it down (`Vec::remove`), or `None`
/// if `i` is out of bounds.
pub fn remove<T>(v: &mut KVec<T>, i: usize) -> Option<T> {
    let len = v.len();
    if i >= len {
        return None;
    }
    let p = v.as_mut_ptr();
    // SAFETY: `i < len`, so element `i` is initialised; it is read out once, the elements after
    // it are moved down over it (overlapping copy), and the length drops by one, so the moved
    // element is neither dropped twice nor reachable through `v`.
    unsafe {
        let item = p.add(i).read();
        core::ptr::copy(p.add(i + 1), p.add(i), len - i - 1);
        v.set_len(len - 1);
        Some(item)
    }
}

/// Removes and returns the last element (`Vec::pop`).
pub fn pop<T>(v: &mut KVec<T>) -> Option<T> {
    let n = v.len();
    n.checked_sub(1).and_then(|i| remove(v, i))
}

/// Drops every element, keeping the allocation (`Vec::clear`).
pub fn clear<T>(v: &mut KVec<T>) {
    while pop(v).is_some() {}
}
