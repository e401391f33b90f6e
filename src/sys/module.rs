// SPDX-License-Identifier: GPL-2.0

//! References on modules (`try_module_get()`/`module_put()`): this module's own, which every
//! enabled event holds so that `rmmod` cannot take its probes away, and a tracepoint's module,
//! which a `t:` probe holds so that the tracepoint stays.

use crate::bindings;
use kernel::ThisModule;

/// A reference on a module, dropped with `module_put()` when the guard goes: the module cannot
/// be unloaded while it is held.
///
/// # Invariants
///
/// `0` points to a module on which this guard owns one reference.
pub struct ModuleRef(*mut bindings::module);

// SAFETY: module references may be dropped from any task.
unsafe impl Send for ModuleRef {}
// SAFETY: `&ModuleRef` exposes nothing.
unsafe impl Sync for ModuleRef {}

impl ModuleRef {
    /// Takes a reference on `m`; `None` once the module is going (`rmmod` has begun).
    ///
    /// # Safety
    ///
    /// `m` must point to a live module for the duration of the call.
    pub unsafe fn try_get(m: *mut bindings::module) -> Option<Self> {
        // SAFETY: `m` is live (the caller).
        let ok = unsafe { bindings::try_module_get(m) };
        // INVARIANT: the reference just taken. Built only then (not `then_some`, which would
        // build, and drop, a guard for a reference never taken).
        ok.then(|| Self(m))
    }

    /// Keeps the reference after the guard is gone, for an owner that cannot hold the guard
    /// (an event's enable state, set and cleared by separate file operations). Nothing drops
    /// it any more: the owner must drop it later with exactly one [`Module::put_kept`] on the
    /// same module, or the module can never be unloaded.
    pub fn keep(self) {
        core::mem::forget(self);
    }
}

impl Drop for ModuleRef {
    fn drop(&mut self) {
        // SAFETY: by the type invariant, the guard owns a reference on the module.
        unsafe { bindings::module_put(self.0) };
    }
}

/// This module, for the references its enabled events hold on it.
///
/// # Invariants
///
/// `0` is this module's `struct module` (null when built in), which lives while its code runs.
pub struct Module(*mut bindings::module);

// SAFETY: the pointer is only handed to the module reference API, callable from any task.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

impl Module {
    /// The module `this` is.
    pub fn this(this: &'static ThisModule) -> Self {
        // INVARIANT: `THIS_MODULE`.
        Self(this.as_ptr().cast())
    }

    /// Takes a reference on this module, refused (`None`) once `rmmod` has begun.
    pub fn try_get(&self) -> Option<ModuleRef> {
        // SAFETY: our own module is live while we run its code (the type invariant).
        unsafe { ModuleRef::try_get(self.0) }
    }

    /// Drops a reference that [`ModuleRef::keep`] kept.
    ///
    /// # Safety
    ///
    /// The caller owns such a reference on this module and gives it up.
    pub unsafe fn put_kept(&self) {
        // INVARIANT: a guard for the reference the caller gives up.
        drop(ModuleRef(self.0));
    }
}
