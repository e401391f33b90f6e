// SPDX-License-Identifier: GPL-2.0

//! An RCU-published open-addressing table (`sys::rcutable::table`) with writers in process context.
//!
//! Readers (ftrace callbacks, any context) look keys up lock-free with preemption disabled.
//! Writers are serialised by the caller, which keeps the table's [`Writer`] (its counts, and the
//! proof of being the writer) inside the mutex that serialises them, and may sleep: growing
//! allocates a new slot array and publishes it; the old one is freed an RCU grace period later
//! by RCU itself (`sys::rcuarray`), without the writer waiting. Entries
//! are the caller's: the table stores their addresses (`RcuTable<T>` holds `T`s the caller
//! allocated and frees, a grace period after they leave), finds their keys with
//! [`Keyed::key`], and hands them out as `&T` for as long as the reader's preemption-disabled
//! section (or the writer's serialisation) lasts.

pub mod table;

use crate::sys::rcuarray::{Array, RcuArray};
use crate::sys::rcutable::table::{Counts, InsertError};
use crate::sys::sync::NoPreempt;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering::*};
use kernel::alloc::{flags::__GFP_NOWARN, KVVec};
use kernel::prelude::*;

/// An empty slot array of `cap` slots (vmalloc'd when large). A failure is an error for the
/// caller to report, not worth a warning with a stack trace.
pub fn alloc_slots(cap: usize) -> Result<KVVec<AtomicUsize>> {
    let gfp = GFP_KERNEL | __GFP_NOWARN;
    let mut v = KVVec::with_capacity(cap, gfp)?;
    for _ in 0..cap {
        v.push(AtomicUsize::new(table::EMPTY), gfp)?;
    }
    Ok(v)
}

/// What a table finds its entries by: a word of the entry, the same every time it is asked.
pub trait Keyed {
    /// The entry's key.
    fn key(&self) -> usize;
}

/// The writers' side of one [`RcuTable`]: its occupancy, and the proof that its holder is the
/// table's (serialised) writer. Made only together with its table ([`RcuTable::new`]) and
/// neither `Copy`, `Clone` nor `Default`, so it cannot be forged: it lives in the state the
/// writers' lock guards, and a `&Writer` or `&mut Writer` is reached only through that lock's
/// guard. Each table checks that a writer passed to it is its own (as the kernel crate's
/// `LockedBy` checks its owner).
pub struct Writer<T> {
    counts: Counts,
    /// The table's identity ([`RcuTable::id`]).
    table: usize,
    _entries: PhantomData<fn() -> T>,
}

impl<T> Writer<T> {
    /// The table's occupancy.
    pub fn counts(&self) -> Counts {
        self.counts
    }
}

/// The identity of the next table made: a table and its writer carry the same one.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// The table. See the module documentation.
///
/// # Invariants
///
/// - `slots` holds no array or a slot array allocated by [`RcuTable::reserve`]; one that is
///   replaced or unpublished is freed only after an RCU grace period (`RcuArray`'s
///   invariants).
/// - Every slot holds [`table::EMPTY`], [`table::TOMBSTONE`] or the address of a `T`
///   (never 0 or 1: a `T` is non-null and at least 2-aligned, checked in [`RcuTable::new`]),
///   whose key is [`Keyed::key`] of that `T`.
/// - A `T` whose address is in a slot stays valid until a grace period after it left the table
///   (the writer that removed it frees it no sooner: [`RcuTable::remove`]'s contract with its
///   callers), and, while in the table, is only reached through shared references.
pub struct RcuTable<T> {
    slots: RcuArray<AtomicUsize>,
    /// The identity its [`Writer`] carries.
    id: usize,
    // Hands out `&T` to any CPU; the entries are the writers' to free.
    _entries: PhantomData<T>,
}

/// The key of the entry at address `e`.
///
/// # Safety
///
/// `e` must be the address of a `T` in the table, or of one a writer removed but cannot have
/// freed yet (see the type invariants).
unsafe fn key_at<T: Keyed>(e: usize) -> usize {
    // SAFETY: the caller's contract.
    unsafe { &*(e as *const T) }.key()
}

impl<T: Keyed> RcuTable<T> {
    /// An empty table (no memory until the first insert), and its only writer, for the state
    /// the writers' lock guards.
    pub fn new() -> (Self, Writer<T>) {
        // An entry's address is never EMPTY (0: `NonNull`) nor TOMBSTONE (1: alignment).
        const {
            assert!(core::mem::align_of::<T>() > table::TOMBSTONE);
        }
        let id = NEXT_ID.fetch_add(1, Relaxed);
        // INVARIANT: no slot array yet.
        let table = Self {
            slots: RcuArray::new(),
            id,
            _entries: PhantomData,
        };
        let writer = Writer {
            counts: Counts::default(),
            table: id,
            _entries: PhantomData,
        };
        (table, writer)
    }

    /// Checks that `w` is this table's writer: another table's would be no proof that this
    /// one's writers are serialised.
    fn own(&self, w: &Writer<T>) {
        assert_eq!(w.table, self.id, "rcutable: another table's writer");
    }

    /// The slots, for the table's writer `w`, as long as `w` is borrowed.
    fn slots_w<'a>(&'a self, w: &'a Writer<T>) -> Option<&'a [AtomicUsize]> {
        self.own(w);
        // `w` is this table's one writer (`own` just checked it; a `Writer` cannot be forged),
        // which the writers' lock serialises; the only replacements, `reserve` and `free`,
        // need `&mut Writer`, and the slice borrows `w` for `'a`.
        // SAFETY: no writer, this one included, replaces the slots while the slice lives
        // (above), which is `get_w`'s contract.
        unsafe { self.slots.get_w() }
    }

    // The probe's key function: every slot a probe reads holds an entry of the table.
    fn key_of(e: usize) -> usize {
        // `tasktable` passes only entries read from a slot to `key_of`; the caller of every
        // table operation is a reader inside a preemption-disabled section or a writer,
        // serialised with the frees.
        // SAFETY: so `e` is a `T` of the table, or one removed since, freed no sooner than a
        // grace period later (the type's invariants): alive while it is read here.
        unsafe { key_at::<T>(e) }
    }

    /// Finds the entry for `key`. The reference lives no longer than the preemption-disabled
    /// section `np` stands for: the entry may be freed a grace period after it is removed.
    pub fn lookup<'a>(&'a self, key: usize, np: &'a NoPreempt) -> Option<&'a T> {
        let e = table::lookup(self.slots.get(np)?, key, Self::key_of)?;
        // SAFETY: an entry of the table, freed no sooner than a grace period after its removal
        // (type invariants), which `np` holds off for the reference's lifetime.
        Some(unsafe { &*(e as *const T) })
    }

    /// Finds the entry for `key`, from a writer (serialised with every other writer). The
    /// reference lives no longer than the borrow of the writer `w`: entries are freed only by
    /// writers.
    pub fn lookup_w<'a>(&'a self, w: &'a Writer<T>, key: usize) -> Option<&'a T> {
        self.own(w);
        let e = table::lookup(self.slots_w(w)?, key, Self::key_of)?;
        // SAFETY: an entry of the table; only writers free entries, and the caller, the writer,
        // holds `w` (so the writers' lock) for the reference's lifetime.
        Some(unsafe { &*(e as *const T) })
    }

    /// Makes room for `n` more entries, growing the table if needed. Writers only; may sleep
    /// (to allocate), never waits for readers: the old slots are freed by RCU.
    pub fn reserve(&self, w: &mut Writer<T>, n: usize) -> Result {
        let cap = self.slots_w(w).map_or(0, |s| s.len());
        if cap > 0 && table::has_room(&w.counts, cap, n) {
            return Ok(());
        }
        // Zeroed: every slot EMPTY. A failure is an error for the caller to report, not worth
        // a warning with a stack trace.
        let new = Array::<AtomicUsize>::zeroed(
            table::capacity_for(w.counts.used + n),
            GFP_KERNEL | __GFP_NOWARN,
        )?;
        let counts = match self.slots_w(w) {
            Some(old) => table::rebuild(old, new.as_slice(), Self::key_of).map_err(|_| ENOMEM)?,
            None => Counts::default(),
        };
        w.counts = counts;
        // INVARIANT: the new array holds the same entries; the old one is freed after a grace
        // period (`RcuArray::replace`).
        self.slots.replace(Some(new));
        Ok(())
    }

    /// Inserts `entry` under its key, or replaces the entry of an existing one (returning the
    /// old entry, which the caller frees after a grace period). Room must have been reserved
    /// for new keys. Writers only.
    ///
    /// # Safety
    ///
    /// `entry` must stay valid, and not be mutated but through shared references, until a
    /// grace period after it leaves the table ([`RcuTable::upsert`] replacing it, or
    /// [`RcuTable::remove`]).
    pub unsafe fn upsert(
        &self,
        w: &mut Writer<T>,
        entry: NonNull<T>,
    ) -> Result<Option<NonNull<T>>> {
        self.own(w);
        let w = &mut w.counts;
        // SAFETY: the writer (`own`), which replaces nothing while it uses the slice.
        let slots = unsafe { self.slots.get_w() }.ok_or(ENOMEM)?;
        let e = entry.as_ptr() as usize;
        // SAFETY: the caller's valid entry.
        let key = unsafe { key_at::<T>(e) };
        // INVARIANT: the caller's contract keeps `entry` valid while it is in the table.
        if let Some(old) = table::replace(slots, key, e, Self::key_of) {
            return Ok(NonNull::new(old as *mut T));
        }
        match table::insert(slots, w, key, e, Self::key_of) {
            Ok(()) => Ok(None),
            Err(InsertError::Exists(_)) => Err(EEXIST),
            Err(InsertError::Full) => Err(ENOMEM),
        }
    }

    /// Removes and returns the entry for `key`, which the caller frees no sooner than a grace
    /// period from now (readers may still hold it). Writers only.
    pub fn remove(&self, w: &mut Writer<T>, key: usize) -> Option<NonNull<T>> {
        self.own(w);
        // SAFETY: the writer (`own`), which replaces nothing while it uses the slice.
        let slots = unsafe { self.slots.get_w() }?;
        let e = table::remove(slots, &mut w.counts, key, Self::key_of)?;
        NonNull::new(e as *mut T)
    }

    /// Calls `f` on every entry. Writers only.
    pub fn for_each(&self, w: &Writer<T>, mut f: impl FnMut(&T)) {
        self.own(w);
        if let Some(s) = self.slots_w(w) {
            table::for_each(s, |e| {
                // SAFETY: an entry of the table; only writers free entries, and the caller is
                // the writer (it holds `w`) for the whole walk.
                f(unsafe { &*(e as *const T) })
            });
        }
    }

    /// Frees the table itself (not the entries), a grace period from now (readers may still be
    /// probing it). Writers only.
    pub fn free(&self, w: &mut Writer<T>) {
        self.own(w);
        self.slots.replace(None);
        w.counts = Counts::default();
    }
}

// SAFETY: the table holds pointers to atomics and to entries it only hands out as `&T`: moving
// or sharing it shares the entries (`T: Sync`), which writers on any CPU free (`T: Send`).
unsafe impl<T: Send + Sync> Send for RcuTable<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for RcuTable<T> {}
