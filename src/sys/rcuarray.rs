// SPDX-License-Identifier: GPL-2.0

//! An array of words published under RCU in a single allocation that carries its own
//! `rcu_head`: replacing it never waits for a grace period, the old one is handed to
//! `kvfree_rcu()` (RCU frees it with `kvfree()`, no code of ours runs then, so a module may
//! unload with frees still pending). The open-addressing tables (`sys::rcutable`) keep their
//! slots in one, the list of ftrace locations (`sys::ksym`) its addresses.
//!
//! ```text
//!   one kvmalloc'd block (what kvfree_rcu() frees: the rcu_head must be in its first page)
//!   +------------------------+-------+---------+---------+-----+-------------+
//!   | rcu_head (2 words)     | len   | elem 0  | elem 1  | ... | elem cap-1  |
//!   +------------------------+-------+---------+---------+-----+-------------+
//!   ^ Header                          ^ the slice readers see: len elements
//! ```
//!
//! Readers see `&[T]` for as long as their preemption-disabled section ([`NoPreempt`]) lasts;
//! writers are serialised by their caller.

use crate::sys::sync::{NoPreempt, RcuHead};
use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};
use kernel::alloc::{allocator::KVmalloc, flags::__GFP_ZERO, Allocator, Flags};
use kernel::prelude::*;

/// Element types an array may hold: a word, for which all zeroes is a valid value, with no
/// drop glue (the block is freed by `kvfree()`, which runs none).
///
/// # Safety
///
/// Implementors must be valid when all-zero, need no drop, and have the size and alignment of
/// a `usize` at most.
pub unsafe trait Word: Sized {}
// SAFETY: a plain word.
unsafe impl Word for usize {}
// SAFETY: an atomic word: all zeroes is 0, no drop.
unsafe impl Word for AtomicUsize {}

#[repr(C)]
struct Header {
    rcu: RcuHead,
    /// How many elements readers see (at most the capacity allocated).
    len: usize,
}

fn layout<T: Word>(cap: usize) -> Result<Layout> {
    const {
        assert!(core::mem::align_of::<T>() <= core::mem::align_of::<Header>());
        assert!(!core::mem::needs_drop::<T>());
    }
    let elems = Layout::array::<T>(cap).map_err(|_| ENOMEM)?;
    let (l, off) = Layout::new::<Header>().extend(elems).map_err(|_| ENOMEM)?;
    debug_assert_eq!(off, core::mem::size_of::<Header>());
    Ok(l)
}

/// An array not (or no longer) published: owned by its writer, freed at once when dropped.
///
/// # Invariants
///
/// `hdr` is a block from [`KVmalloc`] of `layout::<T>(cap)`, zeroed when allocated, whose
/// header's `len` is at most `cap`; the block is this value's alone.
pub struct Array<T: Word> {
    hdr: NonNull<Header>,
    cap: usize,
    _elems: PhantomData<T>,
}

impl<T: Word> Array<T> {
    /// `len` zeroed elements (vmalloc'd when large).
    pub fn zeroed(len: usize, flags: Flags) -> Result<Self> {
        let l = layout::<T>(len)?;
        let p = KVmalloc::alloc(l, flags | __GFP_ZERO)?;
        let hdr = p.cast::<Header>();
        // SAFETY: the block is at least a `Header` long and aligned for it (the layout above).
        unsafe { (*hdr.as_ptr()).len = len };
        // INVARIANT: a fresh zeroed block of `layout::<T>(len)`, `len` elements long.
        Ok(Self {
            hdr,
            cap: len,
            _elems: PhantomData,
        })
    }

    fn elems(&self) -> *mut T {
        // SAFETY: the elements follow the header inside the block (`layout`).
        unsafe { self.hdr.as_ptr().add(1).cast::<T>() }
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `len <= cap` initialised (zeroed) elements after the header (invariants).
        unsafe { core::slice::from_raw_parts(self.elems(), (*self.hdr.as_ptr()).len) }
    }

    /// The elements, to fill before publishing.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above; the block is ours alone (invariants).
        unsafe { core::slice::from_raw_parts_mut(self.elems(), (*self.hdr.as_ptr()).len) }
    }

    /// Shortens the array to `len` elements (no more than it has): the rest of the block stays
    /// allocated, unseen.
    pub fn truncate(&mut self, len: usize) {
        // SAFETY: the block is ours alone; INVARIANT: `len` never grows past `cap`.
        unsafe { (*self.hdr.as_ptr()).len = len.min((*self.hdr.as_ptr()).len) };
    }

    fn into_raw(self) -> *mut Header {
        let p = self.hdr.as_ptr();
        core::mem::forget(self);
        p
    }
}

impl<T: Word> Drop for Array<T> {
    fn drop(&mut self) {
        if let Ok(l) = layout::<T>(self.cap) {
            // SAFETY: the block came from `KVmalloc` with this layout and is ours alone
            // (invariants); nothing uses it after this.
            unsafe { KVmalloc::free(self.hdr.cast(), l) };
        }
    }
}

// SAFETY: an owned block of `T`s: moving it moves them.
unsafe impl<T: Word + Send> Send for Array<T> {}
// SAFETY: `&Array` gives out `&[T]` only.
unsafe impl<T: Word + Sync> Sync for Array<T> {}

/// The published array, or none.
///
/// # Invariants
///
/// `ptr` is null or the header of a block of an [`Array<T>`] published with `Release`, which is
/// freed no sooner than an RCU grace period after it was replaced (`kvfree_rcu()`).
pub struct RcuArray<T: Word> {
    ptr: AtomicPtr<Header>,
    _elems: PhantomData<T>,
}

impl<T: Word> RcuArray<T> {
    /// No array.
    pub const fn new() -> Self {
        Self {
            ptr: AtomicPtr::new(null_mut()),
            _elems: PhantomData,
        }
    }

    /// # Safety
    ///
    /// The array loaded must stay allocated for `'a`: the caller holds preemption disabled
    /// for `'a`, or is the writer (serialised with every replacement) and replaces nothing
    /// during `'a`.
    unsafe fn load<'a>(&self) -> Option<&'a [T]> {
        let p = self.ptr.load(Acquire);
        if p.is_null() {
            return None;
        }
        // A non-null `ptr` is the header of a whole `Array<T>` block (invariants), published
        // with `Release` after it was filled, which the `Acquire` load above pairs with: its
        // `len` and its first `len` elements, right after the header and aligned for `T`
        // (`layout`), are initialised (zeroed at allocation, `len` at most the capacity).
        // SAFETY: those elements (above) stay allocated for `'a` (the caller's contract) and
        // nothing writes them once published (writers build a new block): a shared slice.
        Some(unsafe { core::slice::from_raw_parts(p.add(1).cast::<T>(), (*p).len) })
    }

    /// The published elements, for a reader: they stay allocated while `np` holds preemption
    /// off (a grace period after a replacement at least).
    pub fn get<'a>(&'a self, _np: &'a NoPreempt) -> Option<&'a [T]> {
        // SAFETY: `_np` holds preemption off for `'a`, and a replaced block is freed only
        // after a grace period (invariants).
        unsafe { self.load() }
    }

    /// The published elements, for a writer.
    ///
    /// # Safety
    ///
    /// The caller must be serialised with every [`RcuArray::replace`] of this array, and make
    /// none while it uses the slice.
    pub unsafe fn get_w(&self) -> Option<&[T]> {
        // SAFETY: only a replacement frees the block, and the caller makes none meanwhile.
        unsafe { self.load() }
    }

    /// Publishes `new` (or nothing) in place of the current array, which is freed a grace
    /// period from now: readers still holding it keep it until they re-enable preemption.
    /// Never sleeps. Writers only, serialised by the caller.
    pub fn replace(&self, new: Option<Array<T>>) {
        // INVARIANT: a whole `Array`'s block, published with `Release`.
        let p = new.map_or(null_mut(), Array::into_raw);
        let old = self.ptr.swap(p, AcqRel);
        if !old.is_null() {
            // `old` was published, so it is a whole block from `KVmalloc` (invariants), which
            // `kvfree()` frees; its `rcu_head` is the header's first field, at offset 0, inside
            // the block's first page as `kvfree_rcu()` requires, and unused (zeroed, and each
            // block is handed to RCU once: the swap took it out). No new reader can load it now;
            // readers that did hold preemption off (`get`), and the writers (`get_w`'s contract)
            // make no replacement while they use it. Its elements need no drop (`Word`).
            // SAFETY: `kvfree_rcu()`'s requirements hold (above), and it frees `old` a grace
            // period after this, after its last reader. INVARIANT: freed no sooner than that.
            unsafe { crate::sys::sync::kvfree_rcu(old, core::ptr::addr_of_mut!((*old).rcu)) };
        }
    }
}

impl<T: Word> Default for RcuArray<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Word> Drop for RcuArray<T> {
    fn drop(&mut self) {
        self.replace(None);
    }
}

// SAFETY: shares `T`s between CPUs (`T: Sync`); blocks are freed by RCU on any CPU.
unsafe impl<T: Word + Send + Sync> Send for RcuArray<T> {}
// SAFETY: as above.
unsafe impl<T: Word + Send + Sync> Sync for RcuArray<T> {}
