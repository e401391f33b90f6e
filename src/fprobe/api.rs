// SPDX-License-Identifier: GPL-2.0

//! The Rust fprobe API: a probe whose handlers are a Rust type's methods.
//!
//! The fprobe core knows probes as C `struct ufgraph_fprobe`s and calls their handlers through
//! the struct's function pointers (its one calling convention, shared with C users of
//! include/ufgraph/fprobe.h). A Rust user implements [`FprobeHandler`] instead; [`Fprobe<H>`]
//! puts that struct first and fills its pointers with trampolines made for `H`, which find the
//! handler next to it (one instance per handler type: the calls into `H` are direct and
//! inlined). Misses, which C users only count in `nmissed`, also reach the handler: the core
//! calls [`FprobeHandler::missed`] through the header's `missed` pointer for probes flagged
//! [`FL_RUST`].
//!
//! ```text
//!   Fprobe<H> (repr(C), pinned)
//!   +----------------------------+ <- *mut ufgraph_fprobe the core keeps
//!   | raw: ufgraph_fprobe        |    entry_handler = entry_tramp::<H> (or none: exit-only),
//!   |   flags |= FL_RUST         |    exit_handler = exit_tramp::<H> (or none: entry-only)
//!   | missed: missed_tramp::<H>  |    RustHead: what the core reads for a miss
//!   +----------------------------+
//!   | handler: H                 |
//!   +----------------------------+
//! ```
//!
//! Dropping an `Fprobe` unregisters it first: once that returns no handler runs any more.
//!
//! The handlers run where ftrace callbacks run: preemption disabled, in any context up to NMI;
//! they must not sleep. `missed` runs where the recursion guard has just turned a call away:
//! a call it makes to a probed function is turned away too and would report a miss again, so
//! a miss notification that arrives while this CPU, in this context, is already notifying is
//! only counted (`nmissed`), not passed on.

use super::{fprobes, Resolved, Target};
use crate::sys::cabi::ufgraph_fprobe;
use crate::sys::ftrace::Regs;
use core::ffi::c_void;
use core::marker::PhantomPinned;
use core::pin::Pin;
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};
use kernel::alloc::KBox;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;
use kernel::types::Opaque;

/// An fprobe flag of ours (above the C API's): the probe is the head of a [`RustHead`].
pub const FL_RUST: u32 = 1 << 31;

/// What a Rust probe does at a probed call.
pub trait FprobeHandler: Send + Sync + Sized + 'static {
    /// Whether the probe has an exit handler. Without one it is entry-only: its calls never
    /// touch the shadow stack.
    const EXIT: bool;

    /// Whether the probe has an entry handler. Without one (an exit-only probe: `EXIT` must be
    /// true) the core's entry handler pointer is null, so a call runs no entry handler (the hot
    /// path skips it) and always goes on to [`FprobeHandler::exit`]; [`FprobeHandler::entry`]
    /// is never called. Asked once, at [`Fprobe::new`].
    fn has_entry(&self) -> bool {
        true
    }

    /// Bytes of entry data each call reserves (at most 15 words, as upstream), handed
    /// to both handlers of the call. Asked once, at [`Fprobe::new`].
    fn entry_data_size(&self) -> usize {
        0
    }

    /// At the entry of a probed function `ip`, called from `ret_ip`, with its registers and
    /// this call's entry data. Returns whether [`FprobeHandler::exit`] runs for this call.
    fn entry(&self, ip: usize, ret_ip: usize, regs: &Regs, data: &mut [u8]) -> bool;

    /// At the return of a call whose entry returned true: `ret_ip` is where it returns to.
    fn exit(&self, _ip: usize, _ret_ip: usize, _regs: &Regs, _data: &mut [u8]) {}

    /// What the probe's exit handler calls: [`FprobeHandler::exit`], unless the handler does
    /// better knowing that `regs` is the register block ufgraph's return trampoline saved (the
    /// kretprobe shim makes its `pt_regs` there on x86_64).
    ///
    /// # Safety
    ///
    /// `regs` must be the registers ufgraph's return trampoline passed the return handler,
    /// during that return (what fprobe's return path calls a probe's exit handler with).
    unsafe fn exit_from_trampoline(&self, ip: usize, ret_ip: usize, regs: &Regs, data: &mut [u8]) {
        self.exit(ip, ret_ip, regs, data)
    }

    /// A call the probe could not handle (no shadow stack, a full one, recursion). `nmissed`
    /// counts it already. Runs where the recursion guard turned the call away: see the module
    /// documentation.
    fn missed(&self) {}
}

/// The head the core reads for a miss of a probe flagged [`FL_RUST`]. `raw` is the core's to
/// write (`nmissed`, `hlist_array`) while handlers hold a shared reference: behind `Opaque`.
#[repr(C)]
pub struct RustHead {
    raw: Opaque<ufgraph_fprobe>,
    /// Calls the handler's `missed`, given the head's `raw`.
    missed: unsafe fn(*mut ufgraph_fprobe),
}

/// Per CPU (modulo its size), the context levels (bit `1 << level`) notifying a miss now.
/// Two CPUs that share a cell only make a notification be counted without being passed on.
static NOTIFYING: [AtomicU8; 256] = [const { AtomicU8::new(0) }; 256];

/// Tells a Rust probe's handler about a miss, unless this CPU is already doing so in this
/// context (a handler's `missed` that called a probed function: see the module documentation).
///
/// # Safety
///
/// `fp` must be a registered probe flagged [`FL_RUST`] (the head of a live [`RustHead`]), and
/// preemption must be disabled.
pub(super) unsafe fn notify_missed(fp: *mut ufgraph_fprobe) {
    let cell = &NOTIFYING[crate::fgraph::arch::hot::cpu() % NOTIFYING.len()];
    let bit = 1 << crate::sys::sync::context_level();
    if cell.fetch_or(bit, Relaxed) & bit != 0 {
        return;
    }
    // SAFETY: the head of a `RustHead` (caller), whose `missed` is set before registration.
    unsafe { ((*fp.cast::<RustHead>()).missed)(fp) };
    cell.fetch_and(!bit, Relaxed);
}

/// A probe whose handlers are `H`'s methods. See the module documentation.
///
/// # Invariants
///
/// `head.raw`'s handlers are the trampolines for `H`, and `head.missed` is `missed_tramp::<H>`;
/// `registered` says whether the core holds `head.raw` (then `self` does not move: it is only
/// handed out pinned).
#[repr(C)]
pub struct Fprobe<H: FprobeHandler> {
    head: RustHead,
    handler: H,
    /// The entry data's size, as in `head.raw` (read here: `raw` is the core's).
    data_size: usize,
    registered: bool,
    _pin: PhantomPinned,
}

// SAFETY: the handler is Send + Sync; the C probe is written by the core (atomically, or under
// its registration lock) and otherwise only through `Pin<&mut Self>`.
unsafe impl<H: FprobeHandler> Send for Fprobe<H> {}
// SAFETY: as above; `&Fprobe` gives out `&H` and an atomic read of `nmissed`.
unsafe impl<H: FprobeHandler> Sync for Fprobe<H> {}

/// The `Fprobe<H>` whose head is `fp`.
///
/// # Safety
///
/// `fp` must be the `head.raw` of a live `Fprobe<H>`.
unsafe fn of<'a, H: FprobeHandler>(fp: *mut ufgraph_fprobe) -> &'a Fprobe<H> {
    // SAFETY: `head.raw` is the first field of the repr(C) `Fprobe<H>` (caller).
    unsafe { &*fp.cast::<Fprobe<H>>() }
}

/// The call's entry data, `size` bytes at `data`.
///
/// # Safety
///
/// `data` must be null (and `size` 0), or point to `size` bytes reserved for this call only.
unsafe fn data_of<'a>(data: *mut c_void, size: usize) -> &'a mut [u8] {
    if data.is_null() || size == 0 {
        return &mut [];
    }
    // SAFETY: `size` bytes of this call's entry data (caller).
    unsafe { core::slice::from_raw_parts_mut(data.cast(), size) }
}

/// The probe's entry handler, for an `H`.
///
/// # Safety
///
/// Called by the fprobe core only, for a registered `Fprobe<H>`'s head, with the hooked call's
/// registers and its entry data.
unsafe extern "C" fn entry_tramp<H: FprobeHandler>(
    fp: *mut ufgraph_fprobe,
    ip: c_ulong,
    ret_ip: c_ulong,
    fregs: *mut crate::sys::ftrace::RawFregs,
    data: *mut c_void,
) -> c_int {
    // SAFETY: a registered `Fprobe<H>` (caller).
    let p = unsafe { of::<H>(fp) };
    // SAFETY: the core reserved `entry_data_size` bytes for this call (or none).
    let data = unsafe { data_of(data, p.data_size) };
    // SAFETY: the core passes the entry registers, valid for the call.
    let regs = unsafe { Regs::from_raw(fregs) };
    // The C convention: nonzero skips the exit handler.
    c_int::from(!p.handler.entry(ip, ret_ip, regs, data))
}

/// The probe's exit handler, for an `H`.
///
/// # Safety
///
/// As for [`entry_tramp`], at the hooked call's return, with the registers ufgraph's return
/// trampoline saved: the core calls a probe's exit handler only there (`fprobe::callpath`).
unsafe extern "C" fn exit_tramp<H: FprobeHandler>(
    fp: *mut ufgraph_fprobe,
    ip: c_ulong,
    ret_ip: c_ulong,
    fregs: *mut crate::sys::ftrace::RawFregs,
    data: *mut c_void,
) {
    // SAFETY: a registered `Fprobe<H>` (caller).
    let p = unsafe { of::<H>(fp) };
    // SAFETY: the entry data the entry handler saw.
    let data = unsafe { data_of(data, p.data_size) };
    // SAFETY: the core passes the exit registers, valid for the call.
    let regs = unsafe { Regs::from_raw(fregs) };
    // SAFETY: the return trampoline's registers, during its return (this function's contract).
    unsafe { p.handler.exit_from_trampoline(ip, ret_ip, regs, data) };
}

/// Runs the exit handler of `fp` directly, `K::exit_from_trampoline` inlined, if `fp` is the
/// head of an `Fprobe<K>` (its exit handler is `exit_tramp::<K>`, told by address as
/// `fgraph`'s `Slot::ret_is` tells a handler type: one instance of it in the module, the kernel
/// building Rust as one codegen unit), instead of through the head's pointer: no indirect call
/// and no second function. Returns whether it was one (otherwise nothing ran).
///
/// # Safety
///
/// `fp` must be a registered probe, not disabled, at the return of a hooked call, with the
/// registers ufgraph's return trampoline saved (`regs`) and the call's entry data (`data`, of
/// the probe's `entry_data_size`, or null): what the core calls a probe's exit handler with.
#[inline(always)]
pub(super) unsafe fn exit_known<K: FprobeHandler>(
    fp: *mut ufgraph_fprobe,
    ip: usize,
    ret_ip: usize,
    regs: &Regs,
    data: *mut c_void,
) -> bool {
    if !K::EXIT {
        return false;
    }
    // SAFETY: a registered probe (caller); its handlers do not change while it is registered.
    let Some(h) = (unsafe { (*fp).exit_handler }) else {
        return false;
    };
    let mine: unsafe extern "C" fn(
        *mut ufgraph_fprobe,
        c_ulong,
        c_ulong,
        *mut crate::sys::ftrace::RawFregs,
        *mut c_void,
    ) = exit_tramp::<K>;
    if !core::ptr::fn_addr_eq(h, mine) {
        return false;
    }
    // SAFETY: only `Fprobe::<K>::new` makes a probe whose exit handler is `exit_tramp::<K>`, and
    // it is registered (caller): a live `Fprobe<K>`.
    let p = unsafe { of::<K>(fp) };
    // SAFETY: the entry data the entry handler saw (caller).
    let data = unsafe { data_of(data, p.data_size) };
    // SAFETY: the return trampoline's registers, during its return (caller).
    unsafe { p.handler.exit_from_trampoline(ip, ret_ip, regs, data) };
    true
}

/// The probe's miss notification, for an `H`.
///
/// # Safety
///
/// As for [`notify_missed`], for an `Fprobe<H>`.
unsafe fn missed_tramp<H: FprobeHandler>(fp: *mut ufgraph_fprobe) {
    // SAFETY: a registered `Fprobe<H>` (caller).
    unsafe { of::<H>(fp) }.handler.missed();
}

impl<H: FprobeHandler> Fprobe<H> {
    /// An unregistered probe for `handler`. `E2BIG` for too much entry data; `EINVAL` for
    /// entry data without an exit handler (entry-only calls have no frame to keep it in) or
    /// without an entry handler (nothing would fill it), and for a probe with neither handler.
    pub fn new(handler: H) -> Result<Pin<KBox<Self>>> {
        let size = handler.entry_data_size();
        let entry = handler.has_entry();
        if crate::fprobe::hdr::data_words(size).is_none() {
            return Err(E2BIG);
        }
        if size > 0 && !(H::EXIT && entry) {
            return Err(EINVAL);
        }
        if !H::EXIT && !entry {
            return Err(EINVAL);
        }
        let raw = ufgraph_fprobe {
            entry_handler: if entry { Some(entry_tramp::<H>) } else { None },
            exit_handler: if H::EXIT { Some(exit_tramp::<H>) } else { None },
            entry_data_size: size,
            flags: FL_RUST,
            ..Default::default()
        };
        let p = Fprobe {
            head: RustHead {
                raw: Opaque::new(raw),
                missed: missed_tramp::<H>,
            },
            handler,
            data_size: size,
            registered: false,
            _pin: PhantomPinned,
        };
        Ok(KBox::pin(p, GFP_KERNEL)?)
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// Calls the probe missed (`nmissed`).
    pub fn nmissed(&self) -> usize {
        // SAFETY: `nmissed` is only updated atomically (the core's `missed`); `raw` is in an
        // `Opaque`, so the core may write it while `self` is shared.
        unsafe {
            core::sync::atomic::AtomicUsize::from_ptr(
                core::ptr::addr_of_mut!((*self.head.raw.get()).nmissed).cast(),
            )
        }
        .load(Relaxed)
    }

    /// The raw probe the core keeps (the address of the whole `Fprobe`: `head.raw` is first).
    fn raw(&self) -> *mut ufgraph_fprobe {
        self.head.raw.get()
    }

    /// Registers the probe on `t`. `EBUSY` if it is registered already; the core's errors
    /// otherwise, with nothing left registered.
    pub fn register(self: Pin<&mut Self>, t: &Target<'_>) -> Result {
        let core = fprobes().ok_or(ENODEV)?;
        if self.registered {
            return Err(EBUSY);
        }
        let fp = self.raw();
        // SAFETY: the probe is pinned and unregistered before it is dropped (`Drop`).
        unsafe { core.register(fp, t) }?;
        // SAFETY: a field write; nothing moves.
        unsafe { self.get_unchecked_mut().registered = true };
        Ok(())
    }

    /// Registers the probe on functions resolved by `Fprobes::resolve_gen`: `EAGAIN` if a
    /// module came or went since and some of them are a module's (resolve again), `EINVAL` if
    /// they are not sorted and unique.
    pub fn register_resolved(self: Pin<&mut Self>, r: Resolved) -> Result {
        let core = fprobes().ok_or(ENODEV)?;
        if self.registered {
            return Err(EBUSY);
        }
        // The core's tables count each function once: a duplicate would leave its filter
        // count off (an emptied filter hooks every function).
        if r.ips.windows(2).any(|w| w[0] >= w[1]) {
            return Err(EINVAL);
        }
        let fp = self.raw();
        // SAFETY: as in `register`.
        unsafe { core.register_checked(fp, r) }?;
        // SAFETY: a field write; nothing moves.
        unsafe { self.get_unchecked_mut().registered = true };
        Ok(())
    }

    /// Unregisters the probe: when this returns, neither handler runs any more. `EINVAL` if it
    /// is not registered.
    pub fn unregister(self: Pin<&mut Self>) -> Result {
        if !self.registered {
            return Err(EINVAL);
        }
        let core = fprobes().ok_or(ENODEV)?;
        core.unregister(self.raw())?;
        // SAFETY: a field write; nothing moves.
        unsafe { self.get_unchecked_mut().registered = false };
        Ok(())
    }
}

impl<H: FprobeHandler> Drop for Fprobe<H> {
    fn drop(&mut self) {
        if !self.registered {
            return;
        }
        match fprobes() {
            // The core must not keep a pointer to freed memory: unregistering cannot fail for
            // a registered probe.
            Some(core) => {
                let _ = core.unregister(self.raw());
            }
            // The core went first (it is unpublished before it is torn down): no new call
            // reaches the probe, but one may still be running a handler.
            None => crate::sys::sync::synchronize_rcu(),
        }
    }
}
