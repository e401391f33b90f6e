// SPDX-License-Identifier: GPL-2.0

//! Module-wide instances reached from code that gets no pointer to them: the graph core (the
//! return trampoline's handler and the C API), the fprobe core, the rethook core, the events
//! (their control files), the `Tasks` of the CPU hotplug callback.
//!
//! Each lives in memory its owner keeps pinned (a `Pin<KBox<_>>` of the module, or a field of
//! one), is published once it is set up and withdrawn by its owner's teardown, after everything
//! that could still reach it has stopped. [`Global::get`] is then a safe load and null test:
//! the argument that the reference it returns is valid is made once, by [`Global::publish`]'s
//! caller, rather than at every use (issue #16; the kernel crate's `GlobalLock` is the model:
//! an `unsafe` promise where the instance is set up, safe access everywhere else).

use core::marker::PhantomData;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, Ordering::*};
use kernel::prelude::*;

/// A published module-wide instance of `T` (see the module documentation).
///
/// # Invariants
///
/// `ptr` is null or points to a `T` that stays valid, at that address, for as long as any
/// reference [`Global::get`] returned from it may be used: until the `T` is withdrawn and every
/// path that could have loaded it before (callbacks, return paths, API calls, file
/// operations) has ended. The caller of [`Global::publish`] guarantees this.
pub struct Global<T> {
    ptr: AtomicPtr<T>,
    // Hands out `&T` on any CPU: `Sync` only if `T` is (an `AtomicPtr` alone always is).
    _shares: PhantomData<T>,
}

impl<T: Sync> Global<T> {
    /// Nothing published.
    pub const fn new() -> Self {
        // INVARIANT: null.
        Self {
            ptr: AtomicPtr::new(null_mut()),
            _shares: PhantomData,
        }
    }

    /// Makes `value` the instance [`Global::get`] returns. `EBUSY` if another one is
    /// published (one instance per module).
    ///
    /// # Safety
    ///
    /// `value` must stay valid, at the same address, until it has been withdrawn with
    /// [`Global::withdraw`] and no code that may have loaded it before can still be using it.
    pub unsafe fn publish(&self, value: &T) -> Result {
        let p = (value as *const T).cast_mut();
        // INVARIANT: the caller's contract.
        self.ptr
            .compare_exchange(null_mut(), p, Release, Relaxed)
            .map(|_| ())
            .map_err(|_| EBUSY)
    }

    /// Withdraws `value` if it is the published instance: [`Global::get`] no longer finds it.
    /// Code that loaded it before may still be using it; its owner waits for that before it
    /// drops it (the `publish` contract).
    pub fn withdraw(&self, value: &T) {
        let p = (value as *const T).cast_mut();
        let _ = self.ptr.compare_exchange(p, null_mut(), Release, Relaxed);
    }

    /// The published instance, if any: one load and a null test.
    #[inline(always)]
    pub fn get(&self) -> Option<&T> {
        let p = self.ptr.load(Acquire);
        // SAFETY: by the type invariant, a non-null `ptr` points to a `T` that stays valid while
        // the reference may be used.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Whether `value` is the published instance.
    pub fn is(&self, value: &T) -> bool {
        core::ptr::eq(self.ptr.load(Relaxed), value)
    }
}

impl<T: Sync> Default for Global<T> {
    fn default() -> Self {
        Self::new()
    }
}
