// SPDX-License-Identifier: GPL-2.0

//! Enabling and disabling an event: the instances (trace files) that enabled it, perf
//! listeners, the module reference each holds, and register on enable (the first user registers
//! the event's probes, the last one gone unregisters them).

use super::event::Event;
use super::{events, Events};
use crate::sys::sync::synchronize_rcu;
use crate::sys::trace_event::{AtomicEventFile, EventFile};
use core::sync::atomic::Ordering::*;
use kernel::alloc::{KBox, KVec};
use kernel::prelude::*;

/// The records' instances: a copy-on-write list of the files that enabled the event. An enable
/// publishes a new list; a disable clears its file's slot in place (readers skip null slots),
/// so that it needs no memory: the kernel ignores what a disable returns, and a file left in
/// the list would get records after the kernel freed it (an instance removed).
pub(super) struct FileList {
    files: KVec<AtomicEventFile>,
}

impl FileList {
    pub(super) fn live(&self) -> impl Iterator<Item = EventFile> + '_ {
        AtomicEventFile::live(&self.files, Acquire)
    }
}

impl Event {
    /// Whether an instance enables the event or perf listens: its probes are registered then.
    /// Changes only under `event_mutex`.
    pub(super) fn in_use(&self) -> bool {
        !self.files.load(Acquire).is_null() || self.perf_users.load(Relaxed) != 0
    }

    /// A new list: the live files of `old` and `file`.
    fn list_with(old: Option<&FileList>, file: EventFile) -> Result<*mut FileList> {
        let n = old.map_or(0, |l| l.live().count());
        let mut files = KVec::with_capacity(n + 1, GFP_KERNEL)?;
        for f in Iterator::chain(
            old.into_iter().flat_map(|l| l.live()),
            core::iter::once(file),
        ) {
            // Within the capacity: does not allocate.
            let _ = files.push(AtomicEventFile::new(f), GFP_KERNEL);
        }
        Ok(KBox::into_raw(KBox::new(FileList { files }, GFP_KERNEL)?))
    }

    /// `file` (enabled, in `old`) stops getting records. Cannot fail, allocates nothing: its
    /// slot is cleared in place, or the list unpublished if it was the last live one. The last
    /// user gone, the probes are unregistered. Under `event_mutex`.
    fn disable(&self, ev: &Events, old: *mut FileList, file: EventFile) {
        // SAFETY: `old` is the published list (the caller found `file` in it), replaced only
        // under `event_mutex`, which we hold.
        let list = unsafe { &*old };
        let last = list.live().all(|f| f == file);
        if last {
            self.files.store(core::ptr::null_mut(), Release);
        } else {
            for f in list.files.iter() {
                if f.load(Relaxed) == Some(file) {
                    f.clear(Release);
                }
            }
        }
        // Hits that may still write to `file` (or read the list) run with preemption disabled.
        synchronize_rcu();
        if last {
            // SAFETY: unpublished above, and no reader is left after the grace period.
            drop(unsafe { KBox::from_raw(old) });
        }
        // The last user unregisters the probes: no handler runs once that returns.
        if !self.in_use() {
            ev.disarm(self);
        }
        // SAFETY: balances the reference kept when this file enabled the event.
        unsafe { ev.module.put_kept() };
    }

    /// An instance enables (`on`) or disables the event: the kernel's `reg`, under
    /// `event_mutex`.
    pub(super) fn enable(&self, file: EventFile, on: bool) -> Result {
        let ev = events().ok_or(ENODEV)?;
        let old = self.files.load(Acquire);
        // SAFETY: lists are only replaced here, under `event_mutex` (the kernel holds it when
        // it calls `reg`), so `old` is live.
        let old_list = (!old.is_null()).then(|| unsafe { &*old });
        let present = old_list.is_some_and(|l| l.live().any(|f| f == file));
        if on == present {
            return Ok(());
        }
        if !on {
            self.disable(ev, old, file);
            return Ok(());
        }
        // A reference on the module for as long as the file enables the event, refused once
        // `rmmod` has begun: an event enabled between its refcount check and our exit would
        // be left registered, its probes on text about to be freed.
        // Kept when the probes are registered, balanced when the file disables the event.
        let Some(module) = ev.module.try_get() else {
            return Err(ENODEV);
        };
        // Everything that can fail before the probes are registered, so that a failure leaves
        // nothing behind.
        let new = Self::list_with(old_list, file)?;
        // The first user registers the probes (register on enable).
        if !self.in_use() {
            if let Err(e) = ev.arm(self) {
                // SAFETY: never published.
                drop(unsafe { KBox::from_raw(new) });
                return Err(e);
            }
        }
        self.files.store(new, Release);
        module.keep();
        // Hits that may still use the old list run with preemption disabled.
        synchronize_rcu();
        if !old.is_null() {
            // SAFETY: unpublished above, and no reader is left after the grace period.
            drop(unsafe { KBox::from_raw(old) });
        }
        Ok(())
    }

    /// perf starts (`on`) or stops listening: the kernel's `perf` hook.
    pub(super) fn set_perf(&self, on: bool) -> Result {
        let ev = events().ok_or(ENODEV)?;
        if on {
            // As for an instance's enable (see `reg`).
            // Kept while perf listens.
            let Some(module) = ev.module.try_get() else {
                return Err(ENODEV);
            };
            if !self.in_use() {
                ev.arm(self)?;
            }
            self.perf_users.fetch_add(1, Relaxed);
            module.keep();
        } else {
            self.perf_users.fetch_sub(1, Relaxed);
            // Hits that saw a listener finish before the reference goes.
            synchronize_rcu();
            if !self.in_use() {
                ev.disarm(self);
            }
            // SAFETY: balances the reference kept when perf started listening.
            unsafe { ev.module.put_kept() };
        }
        Ok(())
    }
}
