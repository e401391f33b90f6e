// SPDX-License-Identifier: GPL-2.0

//! [`GraphOps`]: a Rust graph user, owning its `ftrace_ops` (the filter), its slot and handler.

use super::graph::{graph, GraphHandler, Slot};
use crate::sys::ftrace::RawOps;
use core::mem::ManuallyDrop;
use core::pin::Pin;
use core::ptr::addr_of_mut;
use kernel::alloc::{KBox, KVec};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::Opaque;

struct Inner<H> {
    ftrace: Opaque<crate::sys::ftrace::RawFtraceOps>,
    slot: Slot,
    handler: H,
}

/// A graph ops: set its filter, register it, and `H` is called at the entry and return of the
/// functions it selects. Dropping it unregisters it and frees its filter.
pub struct GraphOps<H: GraphHandler> {
    // Dropped by hand: only once the core no longer knows it.
    inner: ManuallyDrop<Pin<KBox<Inner<H>>>>,
    registered: bool,
    /// The functions selected with [`GraphOps::set_filter_ips`] (ftrace locations, sorted): at
    /// registration they put the ops on the core's hub (one `ftrace_ops` for all); while it is
    /// registered there the core keeps them, and hands them back, as changed, at
    /// unregistration. `None` once a glob was set: ftrace keeps that filter, on the ops' own
    /// `ftrace_ops`.
    hub_ips: Option<KVec<usize>>,
    /// Whether `hub_ips` was set: emptied again (its functions removed, or their module gone),
    /// it is refused at registration rather than taken for "no filter" (every function).
    hub_set: bool,
}

// SAFETY: the ftrace_ops is only handed to ftrace (which locks) and the handler is Send + Sync.
unsafe impl<H: GraphHandler> Send for GraphOps<H> {}
// SAFETY: `&GraphOps` gives out `&H` (Sync) and the slot's atomics only.
unsafe impl<H: GraphHandler> Sync for GraphOps<H> {}

impl<H: GraphHandler> GraphOps<H> {
    /// An unregistered ops with an empty filter.
    pub fn new(handler: H) -> Result<Self> {
        let mut b = KBox::<Inner<H>>::new_uninit(GFP_KERNEL)?;
        let p: *mut Inner<H> = b.as_mut_ptr();
        // The slot records the addresses of the handler and the ftrace_ops next to it, which
        // stay put: the box is pinned from here on and never moved out of.
        // SAFETY: `p` is the box's uninitialised memory; every field is initialised in place.
        let b = unsafe {
            addr_of_mut!((*p).ftrace)
                .write(Opaque::new(crate::sys::ftrace::RawFtraceOps::default()));
            addr_of_mut!((*p).handler).write(handler);
            let ops = RawOps::from_raw((*p).ftrace.get());
            addr_of_mut!((*p).slot).write(Slot::new(addr_of_mut!((*p).handler), ops));
            Pin::from(b.assume_init())
        };
        Ok(Self {
            inner: ManuallyDrop::new(b),
            registered: false,
            hub_ips: (!H::OWN_FTRACE_OPS).then(KVec::new),
            hub_set: false,
        })
    }

    /// Selects the functions matching `glob` (replacing the filter), on the ops' own
    /// `ftrace_ops`. `EINVAL` if none match; `EBUSY` while registered on the hub.
    pub fn set_filter(&mut self, glob: &CStr) -> Result {
        if self.registered && self.inner.slot.on_hub() {
            return Err(EBUSY);
        }
        self.inner.slot.ftrace().set_filter(glob)?;
        self.hub_ips = None;
        Ok(())
    }

    /// Adds (or removes) the functions at `ips` to the filter; `reset` clears it first. While
    /// registered on the hub, `reset` is refused (`EINVAL`), as is removing every function.
    pub fn set_filter_ips(&mut self, ips: &[usize], remove: bool, reset: bool) -> Result {
        if self.registered {
            if !self.inner.slot.on_hub() {
                return self.inner.slot.ftrace().set_filter_ips(ips, remove, reset);
            }
            if reset {
                return Err(EINVAL);
            }
            let g = graph().ok_or(ENODEV)?;
            return g.hub_filter(&self.inner.slot, ips, remove);
        }
        let Some(cur) = self.hub_ips.as_mut() else {
            return self.inner.slot.ftrace().set_filter_ips(ips, remove, reset);
        };
        super::graph::edit_hub_list(cur, ips, remove, reset)?;
        self.hub_set = true;
        Ok(())
    }

    /// Starts hooking. `ENOSPC` when 16 ops are registered, `EINVAL` if the functions selected
    /// with [`GraphOps::set_filter_ips`] were all removed again; on failure nothing is left
    /// behind.
    pub fn register(&mut self) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        let g = graph().ok_or(ENODEV)?;
        match self.hub_ips.as_deref() {
            // SAFETY: the slot is pinned in our box and unregistered before the box is freed.
            Some(ips) if !ips.is_empty() => unsafe { g.register_hub(&self.inner.slot, ips) }?,
            Some(_) if self.hub_set => return Err(EINVAL),
            // SAFETY: as above.
            _ => unsafe { g.register(&self.inner.slot) }?,
        }
        self.registered = true;
        Ok(())
    }

    /// Stops hooking: when this returns, no callback of ours runs.
    pub fn unregister(&mut self) -> Result {
        if !self.registered {
            return Ok(());
        }
        let g = graph().ok_or(ENODEV)?;
        let on_hub = self.inner.slot.on_hub();
        let ips = g.unregister(&self.inner.slot)?;
        if on_hub {
            self.hub_ips = Some(ips);
        }
        self.registered = false;
        Ok(())
    }

    /// The ops' index while registered.
    pub fn idx(&self) -> Option<usize> {
        self.registered.then(|| self.inner.slot.idx())
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.inner.handler
    }

    /// The slot (missed counters).
    pub fn slot(&self) -> &Slot {
        &self.inner.slot
    }
}

impl<H: GraphHandler> Drop for GraphOps<H> {
    fn drop(&mut self) {
        if let Err(e) = self.unregister() {
            // Freeing a registered ops would leave ftrace calling freed memory: leak it.
            pr_err!("graph ops unregister failed ({:?}); leaking it\n", e);
            return;
        }
        self.inner.slot.ftrace().free_filter();
        // SAFETY: dropped exactly once, here, after unregistering; nothing refers to it now.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}
