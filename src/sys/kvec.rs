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
    // SAFETY: `i < len`, so element `i` is in bounds and initialised. It is read out exactly
    // once: the copy below overwrites its slot without dropping it.
    let item = unsafe { p.add(i).read() };
    // SAFETY: the source `i + 1..len` and the destination `i..len - 1` both lie within the first
    // `len` (initialised) elements of the allocation; `ptr::copy` allows them to overlap.
    unsafe { core::ptr::copy(p.add(i + 1), p.add(i), len - i - 1) };
    // The old last slot now duplicates element `len - 2` (or held `item`): shrinking the length
    // keeps it from being dropped twice.
    // SAFETY: `len - 1 <= capacity`, and the first `len - 1` elements are initialised.
    unsafe { v.set_len(len - 1) };
    Some(item)
}

/// Removes and returns the last element (`Vec::pop`).
pub fn pop<T>(v: &mut KVec<T>) -> Option<T> {
    let n = v.len();
    n.checked_sub(1).and_then(|i| remove(v, i))
}

/// Keeps the elements `keep` says, in order, dropping the others' slots (`Vec::retain`, for
/// `Copy` elements, which need no drop).
pub fn retain<T: Copy>(v: &mut KVec<T>, mut keep: impl FnMut(&T) -> bool) {
    let len = v.len();
    let mut n = 0;
    for i in 0..len {
        let x = v[i];
        if keep(&x) {
            v[n] = x;
            n += 1;
        }
    }
    // SAFETY: `n <= len`, and the first `n` elements are initialised; the rest are `Copy`
    // values, which need no drop.
    unsafe { v.set_len(n) };
}

/// Drops every element, keeping the allocation (`Vec::clear`).
pub fn clear<T>(v: &mut KVec<T>) {
    while pop(v).is_some() {}
}

/// Inserts `item` at `i` (`i <= len`), shifting the ones after it up (`Vec::insert`), without
/// allocating: `Err(item)` back if there is no room (or `i` is out of bounds).
pub fn insert<T>(v: &mut KVec<T>, i: usize, item: T) -> Result<(), T> {
    let len = v.len();
    if i > len || v.capacity() == len {
        return Err(item);
    }
    let p = v.as_mut_ptr();
    // Slot `i` is overwritten below without being dropped: its element moved up.
    // SAFETY: `len < capacity`: the source `i..len` and the destination `i + 1..len + 1` lie
    // within the allocation; `ptr::copy` allows them to overlap.
    unsafe {
        core::ptr::copy(p.add(i), p.add(i + 1), len - i);
        p.add(i).write(item);
    }
    // SAFETY: `len + 1 <= capacity`, and the first `len + 1` elements are initialised now.
    unsafe { v.set_len(len + 1) };
    Ok(())
}
