// SPDX-License-Identifier: GPL-2.0

//! Trace events made at run time: a thin layer over the kernel's `struct trace_event_call`.
//!
//! A kernel trace event is three structures that point at each other, plus strings they
//! borrow for as long as the event is registered:
//!
//! ```text
//!   EventCall<T> (pinned, boxed; call.data points back here)
//!   +--------------------------------------------------------------+
//!   | call:  trace_event_call                                      |
//!   |          .class ----------------> class: trace_event_class   |
//!   |          .name, .print_fmt ---+     .system, .reg = reg_shim  |
//!   |          .event.funcs ---+    |     .fields_array --> fields[0]: define_fields_shim
//!   |                          v    |     .fields (list of trace_define_field() results)
//!   |        funcs: trace_event_functions { .trace = print_shim } |
//!   | strings: system, name, print_fmt (NUL-terminated, owned)     |
//!   | ops:     T: EventOps (what the shims call)                   |
//!   +--------------------------------------------------------------+
//! ```
//!
//! `trace_add_event_call()` makes tracefs `events/SYSTEM/NAME/` (enable, filter, format,
//! trigger, hist...) in every trace instance; enabling it in an instance calls `reg` with that
//! instance's `trace_event_file`, which is where records go. Both it and
//! `trace_remove_event_call()` must be called with the kernel's `event_mutex` held, and
//! `event_mutex` is not exported: [`EventMutex`] resolves it once through `sys::ksym` (the one
//! place ufgraph reads an unexported symbol; Documentation/symbols.md).
//!
//! Lifetime: the kernel keeps pointers into an `EventCall` from `trace_add_event_call()` until
//! `trace_remove_event_call()` succeeds. Removal fails with `EBUSY` while any instance has the
//! event enabled, so an `EventCall` is only dropped after a successful [`EventCall::unregister`]
//! (or if it was never registered); [`EventCall`]'s owner must keep it otherwise.

use crate::bindings;
use crate::sys::ksym;
use core::ffi::{c_int, c_void};
use core::fmt;
use core::marker::PhantomPinned;
use core::pin::Pin;
use core::sync::atomic::{AtomicPtr, Ordering::*};
use kernel::alloc::{KBox, KVec};
use kernel::c_str;
use kernel::prelude::*;

static EVENT_MUTEX: AtomicPtr<bindings::mutex> = AtomicPtr::new(core::ptr::null_mut());

/// The kernel's `event_mutex`, which serialises everything about trace events.
pub struct EventMutex;

/// Holding the kernel's `event_mutex`.
pub struct EventMutexGuard(*mut bindings::mutex);

impl EventMutex {
    /// Finds `event_mutex`. Once, at module init; process context.
    pub fn resolve() -> Result {
        let a = ksym::require(c_str!("event_mutex"))?;
        EVENT_MUTEX.store(a as *mut bindings::mutex, Release);
        Ok(())
    }

    /// Takes `event_mutex`. `ENODEV` if it was never resolved. May sleep.
    pub fn lock() -> Result<EventMutexGuard> {
        let m = EVENT_MUTEX.load(Acquire);
        if m.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: `m` is the kernel's `event_mutex` (resolved by name from kallsyms), a mutex
        // that lives as long as the kernel. Process context (callers may sleep).
        unsafe { bindings::ufg_mutex_lock(m) };
        Ok(EventMutexGuard(m))
    }
}

impl Drop for EventMutexGuard {
    fn drop(&mut self) {
        // SAFETY: we hold the mutex (taken in `EventMutex::lock`).
        unsafe { bindings::ufg_mutex_unlock(self.0) };
    }
}

/// A trace instance's file of one of our events: where its records go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EventFile(*mut bindings::trace_event_file);

// SAFETY: a `trace_event_file` pointer is a handle the kernel's tracing code uses from any
// context; we only pass it back to the kernel.
unsafe impl Send for EventFile {}
// SAFETY: as above.
unsafe impl Sync for EventFile {}

/// An [`EventFile`] slot readers load while the owner swaps or clears it (an event's
/// copy-on-write list of files).
pub struct AtomicEventFile(AtomicPtr<bindings::trace_event_file>);

impl AtomicEventFile {
    /// A slot holding `file`.
    pub fn new(file: EventFile) -> Self {
        Self(AtomicPtr::new(file.0))
    }

    /// The file, unless the slot was cleared.
    pub fn load(&self, order: core::sync::atomic::Ordering) -> Option<EventFile> {
        let p = self.0.load(order);
        (!p.is_null()).then_some(EventFile(p))
    }

    /// Empties the slot.
    pub fn clear(&self, order: core::sync::atomic::Ordering) {
        self.0.store(core::ptr::null_mut(), order);
    }

    /// The files of the slots not cleared, each loaded with `order` (every hit of an event
    /// walks its list: the same code as a walk over raw pointers).
    #[inline(always)]
    pub fn live(
        slots: &[Self],
        order: core::sync::atomic::Ordering,
    ) -> impl Iterator<Item = EventFile> + '_ {
        slots
            .iter()
            .map(move |f| f.0.load(order))
            .filter(|f| !f.is_null())
            .map(EventFile)
    }
}

impl EventFile {
    /// A file from its raw pointer, as [`EventFile::as_ptr`] gave it (writing to it is what
    /// needs a live file: [`EventFile::write`]).
    pub fn from_raw(p: *mut bindings::trace_event_file) -> Self {
        EventFile(p)
    }

    /// The raw pointer, as a key.
    pub fn as_ptr(self) -> *mut bindings::trace_event_file {
        self.0
    }

    /// Writes one record of `len` bytes (the whole record, `struct trace_entry` first) into
    /// this file's ring buffer, unless the event is soft-disabled or filtered by pid, or the
    /// buffer is full. `fill` gets the record, zeroed past the `trace_entry` (which the
    /// kernel fills), and must leave the first [`TRACE_ENTRY_SIZE`] bytes alone. Triggers
    /// and the event filter run as for any event. Returns false when the ring buffer refused
    /// the record (full, or tracing off in this instance).
    ///
    /// # Safety
    ///
    /// `self` must be a file our `reg` callback was given and has not been told to forget
    /// (`TRACE_REG_UNREGISTER`), or one the kernel keeps until an RCU grace period has passed
    /// since: callers run with preemption disabled and unregistration waits for them.
    pub unsafe fn write(self, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        if len < TRACE_ENTRY_SIZE {
            return false;
        }
        // SAFETY: `self.0` is live (the caller's contract).
        if unsafe { bindings::ufg_event_soft_disabled(self.0) } {
            // Nothing to write (triggers ran, or the event is soft-disabled): not a loss.
            return true;
        }
        let mut fb = core::mem::MaybeUninit::<bindings::trace_event_buffer>::zeroed();
        // SAFETY: `fb` is ours; the file is live; the kernel reserves `len` bytes or fails.
        let p = unsafe { bindings::ufg_event_reserve(fb.as_mut_ptr(), self.0, len as _) };
        if p.is_null() {
            return false;
        }
        // SAFETY: `p` points to `len` reserved bytes of the ring buffer, ours until commit;
        // the kernel filled the `trace_entry` at its start, the rest is zeroed here first.
        let rec = unsafe {
            core::ptr::write_bytes(
                p.cast::<u8>().add(TRACE_ENTRY_SIZE),
                0,
                len - TRACE_ENTRY_SIZE,
            );
            core::slice::from_raw_parts_mut(p.cast::<u8>(), len)
        };
        fill(rec);
        // SAFETY: `fb` was set up by the successful reserve above, committed once.
        unsafe { bindings::ufg_event_commit(fb.as_mut_ptr()) };
        true
    }
}

/// An event as perf sees it: where records for the perf events listening to it go.
#[derive(Clone, Copy, Debug)]
pub struct PerfCall(*mut bindings::trace_event_call);

// SAFETY: a handle to a registered event, passed back to the kernel only.
unsafe impl Send for PerfCall {}
// SAFETY: as above.
unsafe impl Sync for PerfCall {}

impl PerfCall {
    /// Writes one record of `len` bytes (as [`EventFile::write`]) for the perf events that
    /// listen to this event on this CPU, if any; `regs` are the probe's registers (perf
    /// samples them). Returns whether a record was submitted.
    ///
    /// # Safety
    ///
    /// The event must be registered, and the caller must run with preemption disabled (perf's
    /// buffers are per CPU); unregistration of the event waits for such callers.
    pub unsafe fn write(
        self,
        regs: &crate::sys::ftrace::Regs,
        ret_addr: Option<usize>,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> bool {
        if len < TRACE_ENTRY_SIZE {
            return false;
        }
        // perf puts a u32 size before the record and keeps the two u64-aligned.
        let size = (len + 4).next_multiple_of(8) - 4;
        let (mut rctx, mut pt): (c_int, *mut bindings::pt_regs) = (0, core::ptr::null_mut());
        // SAFETY: the call is registered (caller's contract); the glue checks for listeners and
        // allocates a per-CPU buffer of `size` bytes, or returns NULL.
        let p = unsafe { bindings::ufg_perf_begin(self.0, size as _, &mut rctx, &mut pt) };
        if p.is_null() {
            return false;
        }
        // What perf samples: the probe's registers, as the kretprobe shim builds them (at a
        // return the exit registers, ip = the return address, as the kernel's kretprobe events
        // give them).
        // SAFETY: `pt` is this CPU's perf register buffer, handed out with `p`, ours until
        // submitted.
        crate::sys::regs::fill_pt_regs(regs, ret_addr, unsafe {
            &mut *pt.cast::<core::mem::MaybeUninit<crate::sys::regs::PtRegs>>()
        });
        // SAFETY: `p` points to `size` bytes of perf's buffer, ours until submitted; zeroed
        // past the trace_entry first.
        let rec = unsafe {
            core::ptr::write_bytes(
                p.cast::<u8>().add(TRACE_ENTRY_SIZE),
                0,
                size - TRACE_ENTRY_SIZE,
            );
            core::slice::from_raw_parts_mut(p.cast::<u8>(), size)
        };
        fill(rec);
        // SAFETY: the buffer from `ufg_perf_begin`, submitted once with its context.
        unsafe { bindings::ufg_perf_end(self.0, p, size as _, rctx, pt) };
        true
    }
}

/// Bytes of `struct trace_entry`, the common head of every record (checked at init).
pub const TRACE_ENTRY_SIZE: usize = 8;

/// Checks the layout assumptions of this module against the running kernel's.
pub fn check_layout() -> Result {
    // SAFETY: a constant from the glue.
    let n = unsafe { bindings::ufg_trace_entry_size() };
    if n as usize != TRACE_ENTRY_SIZE {
        pr_err!(
            "struct trace_entry is {} bytes, not {}\n",
            n,
            TRACE_ENTRY_SIZE
        );
        return Err(EINVAL);
    }
    Ok(())
}

/// The text of a record being printed (tracefs `trace`): [`fmt::Write`] into a `trace_seq`.
pub struct SeqOut(*mut bindings::trace_seq);

impl fmt::Write for SeqOut {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // SAFETY: `self.0` is the iterator's trace_seq, valid during the print callback that
        // made us; `s` is valid for its length.
        unsafe { bindings::trace_seq_putmem(self.0, s.as_ptr().cast(), s.len() as _) };
        // SAFETY: as above.
        if unsafe { bindings::ufg_seq_overflowed(self.0) } {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

impl SeqOut {
    /// Writes raw bytes (a string field's text, as `%s` would).
    pub fn bytes(&mut self, b: &[u8]) -> fmt::Result {
        // SAFETY: as in `write_str`.
        unsafe { bindings::trace_seq_putmem(self.0, b.as_ptr().cast(), b.len() as _) };
        // SAFETY: as above.
        if unsafe { bindings::ufg_seq_overflowed(self.0) } {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }

    /// Writes `addr` as `%pS` ("func+0x1c/0x40 [mod]") or, without `offset`, as `%ps`.
    pub fn symbol(&mut self, addr: u64, offset: bool) -> fmt::Result {
        // SAFETY: as in `write_str`.
        if unsafe { bindings::ufg_seq_symbol(self.0, addr as usize, offset) } {
            Ok(())
        } else {
            Err(fmt::Error)
        }
    }
}

/// Defines the fields of an event (its `format` file, filters, histograms), in the
/// `define_fields` callback.
pub struct Fields(*mut bindings::trace_event_call);

impl Fields {
    /// Adds a field. `ty` and `name` must be NUL-terminated and outlive the event's
    /// registration: the kernel keeps the pointers.
    ///
    /// # Safety
    ///
    /// `ty` and `name` must stay valid and unchanged until the event is unregistered.
    pub unsafe fn define(
        &mut self,
        ty: &[u8],
        name: &[u8],
        offset: usize,
        size: usize,
        signed: bool,
    ) -> Result {
        if ty.last() != Some(&0) || name.last() != Some(&0) {
            return Err(EINVAL);
        }
        // SAFETY: `self.0` is the call being set up (we are inside its define_fields callback);
        // the strings are NUL-terminated and outlive the registration (caller's contract).
        let r = unsafe {
            bindings::trace_define_field(
                self.0,
                ty.as_ptr().cast(),
                name.as_ptr().cast(),
                offset as c_int,
                size as c_int,
                signed as c_int,
                bindings::UFG_FILTER_OTHER,
            )
        };
        if r < 0 {
            Err(Error::from_errno(r))
        } else {
            Ok(())
        }
    }
}

/// What one of our events does, called by the kernel's tracing core.
pub trait EventOps: Send + Sync + Sized + 'static {
    /// An instance enables (`on`) or disables the event: records for it go to `file`.
    /// Called with `event_mutex` held; may sleep.
    fn reg(&self, file: EventFile, on: bool) -> Result;
    /// A perf event starts (`on`) or stops listening to the event. Called with `event_mutex`
    /// held; may sleep. Records then go through [`PerfCall::write`].
    fn perf(&self, on: bool) -> Result;
    /// Defines the fields after the common ones (see [`Fields::define`]).
    fn define_fields(&self, fields: &mut Fields) -> Result;
    /// Writes the text of one record (the whole record, `trace_entry` first), without the
    /// trailing newline.
    fn print(&self, rec: &[u8], out: &mut SeqOut) -> fmt::Result;
}

/// One trace event and everything the kernel borrows from it. See the module documentation.
pub struct EventCall<T: EventOps> {
    call: bindings::trace_event_call,
    class: bindings::trace_event_class,
    funcs: bindings::trace_event_functions,
    fields: [bindings::trace_event_fields; 2],
    system: KVec<u8>,
    name: KVec<u8>,
    print_fmt: KVec<u8>,
    registered: bool,
    ops: T,
    _pin: PhantomPinned,
}

// SAFETY: the raw pointers inside point into the same pinned box or to strings it owns; the
// kernel reads them under its own locks. `T` is Send + Sync.
unsafe impl<T: EventOps> Send for EventCall<T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: EventOps> Sync for EventCall<T> {}

fn cstring(s: &[u8]) -> Result<KVec<u8>> {
    if s.contains(&0) {
        return Err(EINVAL);
    }
    let mut v = KVec::with_capacity(s.len() + 1, GFP_KERNEL)?;
    v.extend_from_slice(s, GFP_KERNEL)?;
    v.push(0, GFP_KERNEL)?;
    Ok(v)
}

/// The `EventCall` whose `call` is `call`.
///
/// # Safety
///
/// `call` must be the `call` field of a live `EventCall<T>` (its `data` points back to it).
unsafe fn owner<'a, T: EventOps>(call: *mut bindings::trace_event_call) -> &'a EventCall<T> {
    // SAFETY: `data` was set to the pinned box's address in `EventCall::new`.
    unsafe { &*(*call).data.cast::<EventCall<T>>() }
}

/// C enums in the prototypes of callbacks C calls through a pointer, for kCFI (CFI_CLANG).
///
/// kCFI checks an indirect call by a hash of the callee's prototype. clang hashes an `enum`
/// parameter or return type by its name (`9trace_reg`); bindgen makes the enum a `u32` alias,
/// which rustc hashes as an integer, so a callback declared with it fails every call of a kernel
/// built with CFI_CLANG (found in issue #18: `reg_shim` from `__ftrace_event_enable_disable`).
/// In an `extern "C"` signature rustc hashes a `repr(C)` struct by its bare name, as C does, and a
/// one-field `repr(C)` struct of a `u32` is passed and returned exactly as the enum is (in one
/// register on x86_64 and arm64). Each type here is named as the C enum and wraps its value.
#[allow(non_camel_case_types)]
pub mod cenum {
    use crate::bindings;

    /// `enum trace_reg`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct trace_reg(pub bindings::trace_reg);

    /// `enum print_line_t`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct print_line_t(pub bindings::print_line_t);

    const _: () =
        assert!(core::mem::size_of::<trace_reg>() == core::mem::size_of::<bindings::trace_reg>());
    const _: () = assert!(
        core::mem::size_of::<print_line_t>() == core::mem::size_of::<bindings::print_line_t>()
    );
}

/// The event class's `reg` callback.
///
/// # Safety
///
/// Called by the tracing core only, for a registered event whose call is inside an
/// `Event<T>`.
unsafe extern "C" fn reg_shim<T: EventOps>(
    call: *mut bindings::trace_event_call,
    ty: cenum::trace_reg,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the kernel calls `reg` only for registered events, all of which are ours.
    let ev = unsafe { owner::<T>(call) };
    let r = match ty.0 {
        bindings::trace_reg_TRACE_REG_REGISTER => ev.ops.reg(EventFile(data.cast()), true),
        bindings::trace_reg_TRACE_REG_UNREGISTER => ev.ops.reg(EventFile(data.cast()), false),
        t if t as i64 == bindings::UFG_TRACE_REG_PERF_REGISTER as i64 => ev.ops.perf(true),
        t if t as i64 == bindings::UFG_TRACE_REG_PERF_UNREGISTER as i64 => ev.ops.perf(false),
        // PERF_OPEN/CLOSE/ADD/DEL: perf's own bookkeeping (the per-CPU lists of listeners),
        // nothing for us to do.
        _ => Ok(()),
    };
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The event class's `define_fields` callback.
///
/// # Safety
///
/// As for [`reg_shim`].
unsafe extern "C" fn define_fields_shim<T: EventOps>(
    call: *mut bindings::trace_event_call,
) -> c_int {
    // SAFETY: as in `reg_shim`.
    let ev = unsafe { owner::<T>(call) };
    match ev.ops.define_fields(&mut Fields(call)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The event's `trace` (text output) callback.
///
/// # Safety
///
/// Called by the tracing core only, with an iterator on a record of a registered `Event<T>`.
unsafe extern "C" fn print_shim<T: EventOps>(
    iter: *mut bindings::trace_iterator,
    _flags: c_int,
    event: *mut bindings::trace_event,
) -> cenum::print_line_t {
    let off = core::mem::offset_of!(bindings::trace_event_call, event);
    // SAFETY: `event` is the `event` field of one of our calls (the kernel finds this callback
    // through it), so stepping back by its offset gives the call.
    let call = unsafe {
        event
            .cast::<u8>()
            .sub(off)
            .cast::<bindings::trace_event_call>()
    };
    // SAFETY: as in `reg_shim`; the kernel prints only records of registered events (it looks
    // the type up under `trace_event_sem`, which unregistration takes for writing).
    let ev = unsafe { owner::<T>(call) };
    let mut size: usize = 0;
    // SAFETY: the iterator is valid during the callback; the glue reads two of its fields.
    let (seq, ent) = unsafe {
        (
            bindings::ufg_iter_seq(iter),
            bindings::ufg_iter_ent(iter, &mut size as *mut usize as *mut _),
        )
    };
    if ent.is_null() {
        return cenum::print_line_t(bindings::print_line_t_TRACE_TYPE_UNHANDLED);
    }
    // SAFETY: the iterator's current record: `size` bytes at `ent`, stable during the call.
    let rec = unsafe { core::slice::from_raw_parts(ent.cast::<u8>(), size) };
    let mut out = SeqOut(seq);
    let r = ev
        .ops
        .print(rec, &mut out)
        .and_then(|()| fmt::Write::write_str(&mut out, "\n"));
    cenum::print_line_t(match r {
        Ok(()) => bindings::print_line_t_TRACE_TYPE_HANDLED,
        Err(_) => bindings::print_line_t_TRACE_TYPE_PARTIAL_LINE,
    })
}

impl<T: EventOps> EventCall<T> {
    /// A new event `system/name` with print format `print_fmt` (what the `format` file shows
    /// after "print fmt: "), not yet registered.
    pub fn new(system: &[u8], name: &[u8], print_fmt: &[u8], ops: T) -> Result<Pin<KBox<Self>>> {
        let mut ev = KBox::pin(
            EventCall {
                call: bindings::trace_event_call::default(),
                class: bindings::trace_event_class::default(),
                funcs: bindings::trace_event_functions::default(),
                fields: [
                    bindings::trace_event_fields::default(),
                    bindings::trace_event_fields::default(),
                ],
                system: cstring(system)?,
                name: cstring(name)?,
                print_fmt: cstring(print_fmt)?,
                registered: false,
                ops,
                _pin: PhantomPinned,
            },
            GFP_KERNEL,
        )?;
        // SAFETY: we only set up pointers between fields of the pinned box; nothing moves.
        let e = unsafe { ev.as_mut().get_unchecked_mut() };
        let me = core::ptr::addr_of_mut!(*e);
        // The callbacks' types differ from bindgen's only in the `cenum` wrappers, which are
        // passed and returned as the integers they wrap.
        type Print = unsafe extern "C" fn(
            *mut bindings::trace_iterator,
            c_int,
            *mut bindings::trace_event,
        ) -> cenum::print_line_t;
        type Reg = unsafe extern "C" fn(
            *mut bindings::trace_event_call,
            cenum::trace_reg,
            *mut c_void,
        ) -> c_int;
        // The same, as bindgen declares them.
        type PrintC = unsafe extern "C" fn(
            *mut bindings::trace_iterator,
            c_int,
            *mut bindings::trace_event,
        ) -> bindings::print_line_t;
        type RegC = unsafe extern "C" fn(
            *mut bindings::trace_event_call,
            bindings::trace_reg,
            *mut c_void,
        ) -> c_int;
        // SAFETY: same ABI (above); C calls it with the prototype it is declared with here.
        e.funcs.trace =
            Some(unsafe { core::mem::transmute::<Print, PrintC>(print_shim::<T> as Print) });
        e.fields[0].type_ = bindings::UFG_TRACE_FUNCTION_TYPE as *const _;
        e.fields[0].__bindgen_anon_1.define_fields = Some(define_fields_shim::<T>);
        // fields[1] stays zeroed: the terminator.
        e.class.system = e.system.as_ptr().cast();
        // SAFETY: as for `trace` above.
        e.class.reg = Some(unsafe { core::mem::transmute::<Reg, RegC>(reg_shim::<T> as Reg) });
        e.class.fields_array = e.fields.as_mut_ptr();
        e.class.raw_init = Some(bindings::trace_event_raw_init);
        let fields = core::ptr::addr_of_mut!(e.class.fields);
        // INIT_LIST_HEAD: an empty list points at itself.
        e.class.fields.next = fields;
        e.class.fields.prev = fields;
        e.call.class = core::ptr::addr_of_mut!(e.class);
        e.call.__bindgen_anon_1.name = e.name.as_mut_ptr().cast();
        e.call.event.funcs = core::ptr::addr_of_mut!(e.funcs);
        e.call.print_fmt = e.print_fmt.as_mut_ptr().cast();
        e.call.flags = bindings::UFG_TRACE_EVENT_FL_FPROBE;
        e.call.data = me.cast();
        Ok(ev)
    }

    /// The event as perf sees it.
    pub fn perf_call(&self) -> PerfCall {
        PerfCall(core::ptr::addr_of!(self.call).cast_mut())
    }

    /// What the kernel calls us with.
    pub fn ops(&self) -> &T {
        &self.ops
    }

    /// Whether the event is registered.
    pub fn is_registered(&self) -> bool {
        self.registered
    }

    /// Registers the event: `events/SYSTEM/NAME/` appears in every instance.
    pub fn register(self: Pin<&mut Self>, _g: &EventMutexGuard) -> Result {
        // SAFETY: nothing is moved out of the pinned box.
        let e = unsafe { self.get_unchecked_mut() };
        if e.registered {
            return Err(EBUSY);
        }
        // SAFETY: the call is fully set up and pinned; we hold `event_mutex`.
        let r = unsafe { bindings::trace_add_event_call(&mut e.call) };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        e.registered = true;
        Ok(())
    }

    /// Unregisters the event. `EBUSY` while an instance has it enabled (nothing changes then).
    pub fn unregister(self: Pin<&mut Self>, _g: &EventMutexGuard) -> Result {
        // SAFETY: nothing is moved out of the pinned box.
        let e = unsafe { self.get_unchecked_mut() };
        if !e.registered {
            return Ok(());
        }
        // SAFETY: registered by `register`; we hold `event_mutex`.
        let r = unsafe { bindings::trace_remove_event_call(&mut e.call) };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        e.registered = false;
        Ok(())
    }
}

impl<T: EventOps> Drop for EventCall<T> {
    fn drop(&mut self) {
        // The owner unregisters first; should it not have, the kernel still points here, and
        // freeing would be a use-after-free: leaking is the lesser evil.
        if self.registered {
            pr_err!("trace event dropped while registered: leaking it\n");
            // Nothing can be leaked from within `drop`; the owner's `Drop` calls
            // `unregister` and keeps (leaks) the box when that fails. This branch is a bug.
        }
    }
}

/// Whether any event named `system/name` exists in the top trace instance (ours or the
/// kernel's). Takes `event_mutex` itself: call it without holding [`EventMutexGuard`].
pub fn event_exists(system: &[u8], name: &[u8]) -> Result<bool> {
    let s = cstring(system)?;
    let n = cstring(name)?;
    // SAFETY: NUL-terminated strings; NULL is the top instance. A found file is put back.
    let f = unsafe {
        bindings::trace_get_event_file(core::ptr::null(), s.as_ptr().cast(), n.as_ptr().cast())
    };
    let v = f as isize;
    if f.is_null() || (-4095..0).contains(&v) {
        return Ok(false);
    }
    // SAFETY: `f` was returned by trace_get_event_file with references we give back.
    unsafe { bindings::trace_put_event_file(f) };
    Ok(true)
}

/// Words in a kernel stack (`THREAD_SIZE / sizeof(long)`): one more than the largest
/// `$stackN` a probe may read.
pub fn thread_words() -> u64 {
    // SAFETY: a constant from the glue.
    unsafe { bindings::ufg_stack_index_max() as u64 }
}

/// `offsetof(struct dentry, d_name.name)` and `offsetof(struct file, f_path.dentry)`, for the
/// `%pd` and `%pD` fetch arguments.
pub fn dentry_offsets() -> (u32, u32) {
    // SAFETY: constants from the glue.
    unsafe {
        (
            bindings::ufg_dentry_name_offset(),
            bindings::ufg_file_dentry_offset(),
        )
    }
}
