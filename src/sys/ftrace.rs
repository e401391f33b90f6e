// SPDX-License-Identifier: GPL-2.0

//! `struct ftrace_ops`: a callback on the entry of chosen kernel functions.
//!
//! [`Ops`] owns a heap-allocated, pinned `ftrace_ops` next to its handler, so that the callback can
//! find the handler from the `op` pointer ftrace hands it. It unregisters and frees its filter on
//! drop. ftrace marks an ops that is not in kernel data as DYNAMIC and, on unregister, waits for an
//! RCU-tasks grace period: once `unregister` returns no CPU runs our callback any more, so the
//! allocation can go.

use crate::bindings;
use crate::sys::sync::{NoPreempt, Recursion, Refused};
use crate::sys::to_result;
use core::mem::ManuallyDrop;
use core::pin::Pin;
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVec};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::Opaque;

/// The C `struct ftrace_ops`, as ftrace callbacks receive it.
pub type RawFtraceOps = bindings::ftrace_ops;
/// The C `struct ftrace_regs`, as ftrace callbacks receive it (see [`Regs`]).
pub type RawFregs = bindings::ftrace_regs;

/// The address of the return trampoline (src/fgraph/arch/tramp_*.S), which hooked functions
/// return through.
#[inline(always)]
pub fn return_trampoline() -> usize {
    bindings::ufgraph_return_trampoline as *const () as usize
}

/// ftrace's clock (`trace_clock_local()`, nanoseconds, per CPU and cheap): what function_graph's
/// call times use.
#[inline(always)]
pub fn clock_local() -> u64 {
    // SAFETY: no preconditions.
    unsafe { bindings::trace_clock_local() }
}

/// The registers ftrace saved at a function's entry (`struct ftrace_regs`, DYNAMIC_FTRACE_WITH_ARGS):
/// the argument registers, the stack pointer and the instruction pointer.
#[repr(transparent)]
pub struct Regs(Opaque<bindings::ftrace_regs>);

impl Regs {
    /// Borrows a `struct ftrace_regs` for the duration of a callback.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a valid `struct ftrace_regs` that outlives `'a` and that nobody else
    /// mutates while it is borrowed, but through this `Regs` (an `Opaque`: the kretprobe
    /// shim's `pt_regs` is made in the return trampoline's block, `sys::regs`).
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::ftrace_regs) -> &'a Regs {
        // SAFETY: `Regs` is a transparent wrapper of `Opaque<ftrace_regs>`, which has the layout of
        // `ftrace_regs`; the caller guarantees validity for `'a`.
        unsafe { &*ptr.cast::<Regs>() }
    }

    /// The raw pointer, for C functions that take `struct ftrace_regs *`.
    pub fn as_ptr(&self) -> *mut bindings::ftrace_regs {
        self.0.get()
    }

    /// The word at byte offset `off`, one of the offsets of `arch::hot::fregs`.
    #[inline(always)]
    pub(in crate::sys) fn word(&self, off: usize) -> usize {
        // SAFETY: `off` is the offset of a word of `struct ftrace_regs` (arch::hot::fregs), and
        // `self` wraps valid registers (type invariant).
        unsafe { self.as_ptr().cast::<u8>().add(off).cast::<usize>().read() }
    }

    /// The instruction pointer saved on entry: the traced function's address (on x86 past the
    /// `__fentry__` call site, as ftrace reports it).
    #[inline(always)]
    pub fn ip(&self) -> usize {
        self.word(crate::sys::hot::fregs::IP)
    }

    /// The stack pointer saved on entry.
    #[inline(always)]
    pub fn sp(&self) -> usize {
        self.word(crate::sys::hot::fregs::SP)
    }

    /// The `n`th integer argument (0-based) of the traced function, by the calling convention.
    /// Beyond the register arguments the value is meaningless.
    #[inline(always)]
    pub fn arg(&self, n: u32) -> usize {
        match crate::sys::hot::fregs::ARGS.get(n as usize) {
            Some(&off) => self.word(off),
            // SAFETY: as for `ip`; the glue reads the stack argument the ABI puts there.
            None => unsafe { bindings::ufg_fregs_arg(self.as_ptr(), n) },
        }
    }

    /// The return-value register. Meaningful in a return callback.
    #[inline(always)]
    pub fn retval(&self) -> usize {
        self.word(crate::sys::hot::fregs::RETVAL)
    }
}

/// What runs on entry of every function an [`Ops`] filters in. It may run on any CPU, in any
/// context (NMI included) and concurrently with itself: it must not sleep or take sleeping locks.
/// It runs under ftrace's recursion guard ([`Recursion`]): a function it calls that is hooked
/// too does not call it again in the same context.
pub trait Handler: Send + Sync {
    /// `ip` is the traced function, `parent_ip` its caller. `np` is the preemption guard the
    /// recursion guard holds.
    fn call(&self, ip: usize, parent_ip: usize, regs: &Regs, np: &NoPreempt);
    /// A call of `ip` that the recursion guard refused (this context was already inside a
    /// callback, or RCU was not watching). Must not call anything traceable.
    fn missed(&self, _ip: usize) {}
}

/// An `ftrace_ops` owned elsewhere (inside a C user's structure, or an [`Ops`]), driven through
/// its address.
#[derive(Clone, Copy)]
pub struct RawOps(*mut bindings::ftrace_ops);

// SAFETY: ftrace's registration and filter functions take their own locks and may be called
// from any task.
unsafe impl Send for RawOps {}
// SAFETY: as above.
unsafe impl Sync for RawOps {}

impl RawOps {
    /// Wraps an `ftrace_ops`.
    ///
    /// # Safety
    ///
    /// `ops` must point to an `ftrace_ops` that stays allocated, at the same address, for as long
    /// as it is registered or has a filter (until [`RawOps::free_filter`]).
    pub unsafe fn from_raw(ops: *mut bindings::ftrace_ops) -> Self {
        Self(ops)
    }

    /// The raw pointer.
    pub fn as_ptr(self) -> *mut bindings::ftrace_ops {
        self.0
    }

    /// Replaces the filter with the functions matching `glob`; `EINVAL` when nothing matches.
    pub fn set_filter(self, glob: &CStr) -> Result {
        // ftrace_set_filter takes a writable buffer: hand it a copy.
        let mut buf = KVec::new();
        buf.extend_from_slice(glob.as_bytes(), GFP_KERNEL)?;
        buf.push(0, GFP_KERNEL)?;
        let len = glob.len() as core::ffi::c_int;
        // SAFETY: `self.0` is a valid ftrace_ops (type invariant); `buf` holds `len` bytes and a
        // NUL for the duration of the call, which does not keep it.
        to_result(unsafe { bindings::ftrace_set_filter(self.0, buf.as_mut_ptr(), len, 1) })
    }

    /// Adds (or with `remove`, removes) the functions at `ips`; `reset` clears the filter first.
    pub fn set_filter_ips(self, ips: &[usize], remove: bool, reset: bool) -> Result {
        // SAFETY: `self.0` is valid; `ips` is read only during the call.
        to_result(unsafe {
            bindings::ftrace_set_filter_ips(
                self.0,
                ips.as_ptr().cast_mut(),
                ips.len() as _,
                remove as _,
                reset as _,
            )
        })
    }

    /// Registers the ops: its `func` starts being called.
    ///
    /// # Safety
    ///
    /// `func` and `private` must be set, and whatever `func` uses must outlive the registration.
    pub unsafe fn register(self) -> Result {
        // SAFETY: the caller vouches for the ops' callback; it stays allocated (type invariant).
        to_result(unsafe { bindings::register_ftrace_function(self.0) })
    }

    /// Unregisters the ops. When this returns no CPU still runs its callback.
    pub fn unregister(self) -> Result {
        // SAFETY: `self.0` is valid; ftrace checks that it is registered.
        to_result(unsafe { bindings::unregister_ftrace_function(self.0) })
    }

    /// Frees the filter hashes ftrace allocated for an unregistered ops. Once, when the ops is
    /// done with: 6.12's `ftrace_free_filter()` leaves the ops pointing at the freed hashes, so
    /// the ops must not be filtered or registered again.
    pub fn free_filter(self) {
        // SAFETY: `self.0` is valid and (by the caller's sequencing) not registered; ftrace
        // warns and does nothing otherwise.
        unsafe { bindings::ftrace_free_filter(self.0) };
    }
}

#[repr(C)]
struct Inner<H> {
    // First, so that `op` and the `Inner` share an address.
    ops: Opaque<bindings::ftrace_ops>,
    handler: H,
}

/// An ftrace_ops with its handler. Filter it with [`Ops::set_filter`] or [`Ops::set_filter_ips`]
/// before [`Ops::register`]; an ops with an empty filter would trace every function.
pub struct Ops<H: Handler> {
    // Dropped by hand: only once ftrace no longer knows it.
    inner: ManuallyDrop<Pin<KBox<Inner<H>>>>,
    registered: bool,
}

// SAFETY: the raw ftrace_ops is only handed to ftrace's register/unregister/filter calls, which
// take their own locks and may be made from any task; the handler is Send.
unsafe impl<H: Handler> Send for Ops<H> {}
// SAFETY: `&Ops` only gives out `&H` (H: Sync) and `is_registered`; every method that touches the
// ftrace_ops takes `&mut self`.
unsafe impl<H: Handler> Sync for Ops<H> {}

/// The `ftrace_ops` callback of an [`Ops<H>`].
///
/// # Safety
///
/// Called by ftrace only, for a registered `Ops<H>`'s `ftrace_ops`, with ftrace's arguments.
unsafe extern "C" fn callback<H: Handler>(
    ip: usize,
    parent_ip: usize,
    op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // Never null: the module builds only for kernels with DYNAMIC_FTRACE_WITH_ARGS (helpers.c),
    // whose ftrace always passes its registers (only arches without it pass NULL).
    debug_assert!(!fregs.is_null());
    // ftrace calls us only with the `op` we registered; `Ops` keeps it allocated until after
    // unregistering, which waits until no CPU is still in this callback.
    // SAFETY: `op` is the first field of a live repr(C) `Inner<H>` (above).
    let inner = unsafe { &*op.cast::<Inner<H>>() };
    // The ops is registered without FTRACE_OPS_FL_RECURSION (which would route every call
    // through ftrace's assist function, an extra indirect call): the guard is ours.
    let guard = match Recursion::try_lock(ip, parent_ip) {
        Ok(g) => g,
        Err(Refused::Recursion) => {
            inner.handler.missed(ip);
            return;
        }
        Err(Refused::Unsafe) => return,
    };
    // SAFETY: ftrace passes a valid `ftrace_regs` for the duration of the callback.
    let regs = unsafe { Regs::from_raw(fregs) };
    inner.handler.call(ip, parent_ip, regs, guard.no_preempt());
}

impl<H: Handler> Ops<H> {
    /// A new, unregistered ops with `FTRACE_OPS_FL_*` `flags`.
    pub fn new(handler: H, flags: u64) -> Result<Self> {
        let raw = bindings::ftrace_ops {
            func: Some(callback::<H>),
            flags: flags as _,
            ..Default::default()
        };
        let inner = KBox::pin(
            Inner {
                ops: Opaque::new(raw),
                handler,
            },
            GFP_KERNEL,
        )?;
        Ok(Self {
            inner: ManuallyDrop::new(inner),
            registered: false,
        })
    }

    fn raw(&self) -> *mut bindings::ftrace_ops {
        self.inner.ops.get()
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.inner.handler
    }

    fn ops(&self) -> RawOps {
        RawOps(self.raw())
    }

    /// Replaces the filter with the functions matching `glob` (ftrace's syntax: `vfs_*`,
    /// `*lock`, a plain name, or `:mod:NAME`). Fails with `EINVAL` when nothing matches.
    pub fn set_filter(&mut self, glob: &CStr) -> Result {
        self.ops().set_filter(glob)
    }

    /// Adds (or with `remove`, removes) the functions at `ips` to the filter; `reset` clears it
    /// first. Addresses must be ftrace locations (function entries).
    pub fn set_filter_ips(&mut self, ips: &[usize], remove: bool, reset: bool) -> Result {
        self.ops().set_filter_ips(ips, remove, reset)
    }

    /// Starts calling the handler.
    pub fn register(&mut self) -> Result {
        if self.registered {
            return Err(EBUSY);
        }
        // SAFETY: `func` is our callback, which only uses the handler pinned next to the ops;
        // both stay allocated until after `unregister` (see `drop`).
        unsafe { self.ops().register() }?;
        self.registered = true;
        Ok(())
    }

    /// Stops calling the handler. When this returns no CPU is still running it.
    pub fn unregister(&mut self) -> Result {
        if !self.registered {
            return Ok(());
        }
        self.ops().unregister()?;
        self.registered = false;
        Ok(())
    }

    /// Whether the handler is being called.
    pub fn is_registered(&self) -> bool {
        self.registered
    }
}

impl<H: Handler> Drop for Ops<H> {
    fn drop(&mut self) {
        if let Err(e) = self.unregister() {
            // Freeing a still-registered ops would leave ftrace calling freed memory: leak it.
            pr_err!(
                "unregister_ftrace_function failed ({:?}); leaking the ops\n",
                e
            );
            return;
        }
        self.ops().free_filter();
        // SAFETY: `inner` is dropped exactly once, here, and nothing uses it afterwards.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}
