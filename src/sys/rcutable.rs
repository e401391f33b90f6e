// SPDX-License-Identifier: GPL-2.0

//! An RCU-published open-addressing table (`pure::tasktable`) with writers in process context.
//!
//! Readers (ftrace callbacks, any context) look keys up lock-free with preemption disabled.
//! Writers are serialised by the caller, which owns the table's [`Counts`] (typically inside the
//! mutex that serialises them) and may sleep: growing allocates a new table, publishes it and
//! frees the old one after an RCU grace period. Entries are the caller's: the table stores their
//! addresses and finds their keys with `key_of`.

use crate::pure::tasktable::{self, Counts, InsertError};
use crate::sys::sync::{synchronize_rcu, NoPreempt};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};
use kernel::alloc::{flags::__GFP_NOWARN, KBox, KVVec};
use kernel::prelude::*;

struct Slots(KVVec<AtomicUsize>);

/// An empty slot array of `cap` slots (vmalloc'd when large). A failure is an error for the
/// caller to report, not worth a warning with a stack trace.
pub fn alloc_slots(cap: usize) -> Result<KVVec<AtomicUsize>> {
    let gfp = GFP_KERNEL | __GFP_NOWARN;
    let mut v = KVVec::with_capacity(cap, gfp)?;
    for _ in 0..cap {
        v.push(AtomicUsize::new(tasktable::EMPTY), gfp)?;
    }
    Ok(v)
}

/// The table. See the module documentation.
pub struct RcuTable {
    slots: AtomicPtr<Slots>,
}

impl Default for RcuTable {
    fn default() -> Self {
        Self::new()
    }
}

impl RcuTable {
    /// An empty table (no memory until the first insert).
    pub const fn new() -> Self {
        Self {
            slots: AtomicPtr::new(null_mut()),
        }
    }

    fn slots(&self) -> Option<&[AtomicUsize]> {
        let p = self.slots.load(Acquire);
        // SAFETY: a published table is freed only after an RCU grace period; readers hold
        // preemption disabled and writers are serialised with the only code that frees it.
        (!p.is_null()).then(|| unsafe { (*p).0.as_slice() })
    }

    /// Finds the entry for `key`.
    pub fn lookup(
        &self,
        key: usize,
        key_of: impl Fn(usize) -> usize,
        _np: &NoPreempt,
    ) -> Option<usize> {
        tasktable::lookup(self.slots()?, key, key_of)
    }

    /// Finds the entry for `key`, from a writer (serialised with every other writer).
    pub fn lookup_w(
        &self,
        _w: &Counts,
        key: usize,
        key_of: impl Fn(usize) -> usize,
    ) -> Option<usize> {
        tasktable::lookup(self.slots()?, key, key_of)
    }

    /// Makes room for `n` more entries, growing the table if needed. Writers only; may sleep.
    pub fn reserve(
        &self,
        w: &mut Counts,
        n: usize,
        key_of: impl Fn(usize) -> usize + Copy,
    ) -> Result {
        let cap = self.slots().map_or(0, |s| s.len());
        if cap > 0 && tasktable::has_room(w, cap, n) {
            return Ok(());
        }
        let new = KBox::new(
            Slots(alloc_slots(tasktable::capacity_for(w.used + n))?),
            GFP_KERNEL,
        )?;
        let counts = match self.slots() {
            Some(old) => tasktable::rebuild(old, &new.0, key_of).map_err(|_| ENOMEM)?,
            None => Counts::default(),
        };
        *w = counts;
        let old = self.slots.swap(KBox::into_raw(new), AcqRel);
        if !old.is_null() {
            synchronize_rcu();
            // SAFETY: unpublished, and no reader can still hold it after the grace period.
            drop(unsafe { KBox::from_raw(old) });
        }
        Ok(())
    }

    /// Inserts `entry` for a new `key`, or replaces the entry of an existing one (returning
    /// the old entry, which the caller frees after a grace period). Room must have been
    /// reserved for new keys. Writers only.
    pub fn upsert(
        &self,
        w: &mut Counts,
        key: usize,
        entry: usize,
        key_of: impl Fn(usize) -> usize + Copy,
    ) -> Result<Option<usize>> {
        let slots = self.slots().ok_or(ENOMEM)?;
        if let Some(old) = tasktable::replace(slots, key, entry, key_of) {
            return Ok(Some(old));
        }
        match tasktable::insert(slots, w, key, entry, key_of) {
            Ok(()) => Ok(None),
            Err(InsertError::Exists(_)) => Err(EEXIST),
            Err(InsertError::Full) => Err(ENOMEM),
        }
    }

    /// Removes and returns the entry for `key`. Writers only.
    pub fn remove(
        &self,
        w: &mut Counts,
        key: usize,
        key_of: impl Fn(usize) -> usize,
    ) -> Option<usize> {
        tasktable::remove(self.slots()?, w, key, key_of)
    }

    /// Calls `f` on every entry. Writers, or readers with preemption disabled.
    pub fn for_each(&self, f: impl FnMut(usize)) {
        if let Some(s) = self.slots() {
            tasktable::for_each(s, f);
        }
    }

    /// Frees the table itself (not the entries). Writers only, with no reader left (the caller
    /// has waited for a grace period since the last lookup could start).
    pub fn free(&self, w: &mut Counts) {
        let old = self.slots.swap(null_mut(), AcqRel);
        if !old.is_null() {
            synchronize_rcu();
            // SAFETY: unpublished; readers are gone after the grace period.
            drop(unsafe { KBox::from_raw(old) });
        }
        *w = Counts::default();
    }
}

// SAFETY: the table is a pointer to atomics, shared by design (see the module documentation).
unsafe impl Send for RcuTable {}
// SAFETY: as above.
unsafe impl Sync for RcuTable {}
