// SPDX-License-Identifier: GPL-2.0

//! fprobe events: upstream's `f:` dynamic events (Documentation/trace/fprobetrace.rst), on
//! ufgraph's fprobe, as real trace events.
//!
//! ```text
//!   write "f:grp/ev vfs_read len=$arg3:u32"  to  /sys/kernel/debug/ufgraph/dynamic_events
//!      |  pure::probedef::parse      (errors -> error_log, upstream's messages and carets)
//!      |  pure::event::compile       (@SYM resolved through kallsyms)
//!      v
//!   Registry (under the kernel's event_mutex, then our mutex)
//!      Entry { event: EventCall<Event>, probes: [Probe] }     one event, 1..n probes
//!         Event:  programs, record layout, files (RCU list of instances enabling it)
//!         Probe:  a ufgraph_fprobe (first field) + the event it feeds + its command
//!
//!   hit:  fprobe handler -> Event::record -> for each enabled file:
//!            dynamic_size, reserve, head + pure::event::store, commit
//!   read: tracefs `trace` -> EventOps::print -> head + pure::event::render_args
//! ```
//!
//! The control files live in debugfs, next to ufgraph's other files, because tracefs does
//! not let modules add files (`tracefs_create_file()` is not exported in 6.12). The events
//! themselves are tracefs's: `events/GRP/EVENT/{enable,filter,format,trigger,hist,id}` in every
//! instance. Documentation/events.md tells how to use them, and how the VM test binds these
//! files over tracefs's `dynamic_events`, `error_log` and `README` to run upstream's
//! ftracetest cases unmodified.
//!
//! Locking: `event_mutex` (the kernel's) first, then the registry's mutex. The kernel calls our
//! `reg` with `event_mutex` held, and, when it removes an instance, its `trace_types_lock` too;
//! `reg` takes the registry lock when it registers or unregisters the event's probes. So the
//! registry lock is never held across `trace_add_event_call()` or `trace_remove_event_call()`,
//! which take `trace_types_lock` (lockdep, test 69): the entry is added after, or taken out
//! before. `event_mutex`, held throughout, keeps anyone else from changing the entries.
//!
//! Unloading: enabling an event in any instance takes a reference on the module, dropped when
//! it is disabled, so `rmmod` fails with `EBUSY` (and changes nothing) while any event is
//! enabled; disabled events are removed by module exit. The reference is taken with
//! `try_module_get`, which fails once `rmmod` has passed its refcount check: an enable in the
//! window before our exit runs is refused (`ENODEV`) rather than left registered.

mod env;

use crate::bindings::{self, ufgraph_fprobe};
use crate::fprobe::{self, Target};
use crate::pure::event::{self as rec, Program};
use crate::pure::probedef::{self, Command, Config, ProbeDef, ProbeKind, RemoveDef};
use crate::sys::debugfs::SeqFile;
use crate::sys::ftrace::Regs;
use crate::sys::ksym;
use crate::sys::kvec;
use crate::sys::sync::{synchronize_rcu, NoPreempt};
use crate::sys::trace_event::{
    self, EventCall, EventFile, EventMutex, EventOps, Fields, PerfCall, SeqOut,
};
use crate::sys::tracepoint::{self, ModuleRef, Tracepoint};
use core::ffi::c_void;
use core::fmt::{self, Write};
use core::pin::Pin;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};
use kernel::alloc::{KBox, KVec};
use kernel::ffi::{c_int, c_ulong};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Mutex;

/// How many `error_log` entries are kept (upstream's `TRACING_LOG_ERRS_MAX`).
const ERROR_LOG_MAX: usize = 8;

/// The records' instances: a copy-on-write list of the files that enabled the event. An enable
/// publishes a new list; a disable clears its file's slot in place (readers skip null slots),
/// so that it needs no memory: the kernel ignores what a disable returns, and a file left in
/// the list would get records after the kernel freed it (an instance removed).
struct FileList {
    files: KVec<AtomicPtr<bindings::trace_event_file>>,
}

impl FileList {
    fn live(&self) -> impl Iterator<Item = EventFile> + '_ {
        self.files
            .iter()
            .map(|f| f.load(Acquire))
            .filter(|f| !f.is_null())
            .map(EventFile::from_raw)
    }
}

/// One event: what its probes record, and where.
pub struct Event {
    is_return: bool,
    /// A tracepoint probe (`t:`): its probes are on a tracepoint's probestub, and record only
    /// the calls whose first argument is [`stub_data`] (see [`StubUse`]).
    tracepoint: bool,
    head: usize,
    args_size: usize,
    progs: KVec<Program>,
    /// The function arguments an exit probe saves at entry, in entry-data order.
    entry_args: KVec<u16>,
    /// NUL-terminated field types and names, borrowed by the kernel while registered.
    field_types: KVec<KVec<u8>>,
    field_names: KVec<KVec<u8>>,
    name: KVec<u8>,
    /// The instances that enabled the event (null: none). RCU: read with preemption off.
    files: AtomicPtr<FileList>,
    /// Records a ring buffer refused (full, too big, or tracing off in that instance).
    dropped: AtomicUsize,
    /// perf events listening (any CPU).
    perf_users: AtomicUsize,
}

/// One probe of an event. `fp` must stay the first field: handlers get `&fp`.
#[repr(C)]
struct Probe {
    fp: ufgraph_fprobe,
    event: *const Event,
    perf: PerfCall,
    /// The definition, as written (parsed again to show it).
    cmd: KVec<u8>,
}

// SAFETY: `event` points into the pinned `EventCall` that owns the probe's entry; the probe
// is shared with handlers only while registered.
unsafe impl Send for Probe {}
// SAFETY: as above.
unsafe impl Sync for Probe {}

/// One probe of an event, as the registry keeps it.
struct Slot {
    probe: Pin<KBox<Probe>>,
    /// The symbol (a glob), NUL-terminated: matched again when `ips` are stale.
    sym: KVec<u8>,
    /// The functions `sym` matched last, and the module generation then
    /// (`fprobe::Resolved`): a module that came or went since makes them stale.
    ips: KVec<usize>,
    gen: u64,
    /// Registered with the fprobe core: while the event has a user (register on enable).
    armed: bool,
    /// A tracepoint probe's tracepoint: its probestub is the one function in `ips`, and is
    /// attached to the tracepoint while the probe is armed (see [`StubUse`]).
    tp: Option<Tracepoint>,
    /// The module of `tp`, if a module's: held while the probe is defined, so that the
    /// tracepoint and its probestub stay (its `rmmod` fails with `EBUSY` meanwhile).
    _tp_module: Option<ModuleRef>,
}

/// A tracepoint whose probestub ufgraph attached, and how many armed probes need it there.
///
/// Upstream's tracepoint probe events (6.12) put `__probestub_<tp>` on the tracepoint when a
/// probe is registered and take it off when one is unregistered: a second probe on the same
/// tracepoint fails (`EEXIST` from the tracepoint core), and removing one of two would silence
/// the other. Here the stub is attached once, by the first armed probe on the tracepoint, and
/// detached by the last (`tracepoint_synchronize_unregister()` then waits for the CPUs still
/// in it).
///
/// The stub is attached with [`stub_data`] as its `data`, not NULL as upstream does: the pair
/// is then ufgraph's own, so the kernel's own tracepoint probe events on the same tracepoint
/// (if it has them) neither refuse ours nor detach it, and its calls of the stub (with NULL)
/// are told apart from ours by the stub's first argument, which ufgraph's handler checks.
struct StubUse {
    tp: Tracepoint,
    users: usize,
}

/// The `data` ufgraph attaches probestubs with: the address of a static of its own.
fn stub_data() -> *mut c_void {
    static STUB_DATA: u8 = 0;
    core::ptr::addr_of!(STUB_DATA).cast_mut().cast()
}

struct Entry {
    group: KVec<u8>,
    name: KVec<u8>,
    kind: ProbeKind,
    event: Pin<KBox<EventCall<Event>>>,
    probes: KVec<Slot>,
}

struct ErrEntry {
    text: KVec<u8>,
}

struct Registry {
    entries: KVec<Entry>,
    errors: KVec<ErrEntry>,
    /// The tracepoints whose probestub armed probes use.
    stubs: KVec<StubUse>,
}

/// The fprobe events of this module.
#[pin_data(PinnedDrop)]
pub struct Events {
    #[pin]
    reg: Mutex<Registry>,
    cfg: Config,
    thread_words: u64,
    module: *mut bindings::module,
}

// SAFETY: `module` is this module's `struct module`, used only for reference counting.
unsafe impl Send for Events {}
// SAFETY: as above; everything else is behind the mutex or immutable.
unsafe impl Sync for Events {}

static EVENTS: AtomicPtr<Events> = AtomicPtr::new(core::ptr::null_mut());

fn events<'a>() -> Option<&'a Events> {
    let p = EVENTS.load(Acquire);
    // SAFETY: published by `Events::publish` while the module lives; cleared before it goes.
    (!p.is_null()).then(|| unsafe { &*p })
}

fn cvec(s: &[u8]) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(s.len() + 1, GFP_KERNEL)?;
    v.extend_from_slice(s, GFP_KERNEL)?;
    v.push(0, GFP_KERNEL)?;
    Ok(v)
}

fn bytes(s: &[u8]) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(s.len(), GFP_KERNEL)?;
    v.extend_from_slice(s, GFP_KERNEL)?;
    Ok(v)
}

/// A `core::fmt::Write` into a growable kernel vector.
struct VecWriter(KVec<u8>);

impl Write for VecWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0
            .extend_from_slice(s.as_bytes(), GFP_KERNEL)
            .map_err(|_| fmt::Error)
    }
}

fn format(f: impl FnOnce(&mut VecWriter) -> fmt::Result) -> Result<KVec<u8>> {
    let mut w = VecWriter(KVec::new());
    f(&mut w).map_err(|_| ENOMEM)?;
    Ok(w.0)
}

fn as_str(v: &[u8]) -> &str {
    core::str::from_utf8(v).unwrap_or("?")
}

impl Event {
    #[inline(never)]
    fn new(def: &ProbeDef<'_>) -> Result<Self> {
        let mut progs = KVec::with_capacity(def.nargs(), GFP_KERNEL)?;
        let mut field_types = KVec::with_capacity(def.nargs(), GFP_KERNEL)?;
        let mut field_names = KVec::with_capacity(def.nargs(), GFP_KERNEL)?;
        for arg in def.args() {
            let mut err = None;
            let p = rec::compile(&arg, |sym| match ksym::lookup_kallsyms(sym.as_bytes()) {
                Ok(a) => a.map(|a| a as u64),
                Err(e) => {
                    err = Some(e);
                    None
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            let p = p.map_err(|e| Error::from_errno(e.errno()))?;
            field_types.push(
                format(|w| {
                    p.write_field_type(w)?;
                    w.write_str("\0")
                })?,
                GFP_KERNEL,
            )?;
            field_names.push(cvec(p.name().as_bytes())?, GFP_KERNEL)?;
            progs.push(p, GFP_KERNEL)?;
        }
        let mut entry_args = KVec::new();
        entry_args.extend_from_slice(def.entry_args(), GFP_KERNEL)?;
        Ok(Event {
            is_return: def.is_return(),
            tracepoint: def.kind() == ProbeKind::Tracepoint,
            head: if def.is_return() {
                rec::EXIT_HEAD
            } else {
                rec::ENTRY_HEAD
            },
            args_size: def.args_size(),
            progs,
            entry_args,
            field_types,
            field_names,
            name: bytes(def.event().as_bytes())?,
            files: AtomicPtr::new(core::ptr::null_mut()),
            dropped: AtomicUsize::new(0),
            perf_users: AtomicUsize::new(0),
        })
    }

    /// Whether an instance enables the event or perf listens: its probes are registered then.
    /// Changes only under `event_mutex`.
    fn in_use(&self) -> bool {
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
            let _ = files.push(AtomicPtr::new(f.as_ptr()), GFP_KERNEL);
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
                if f.load(Relaxed) == file.as_ptr() {
                    f.store(core::ptr::null_mut(), Release);
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
        // SAFETY: balances the reference taken when this file enabled the event.
        unsafe { bindings::module_put(ev.module) };
    }

    fn print_fmt(&self) -> Result<KVec<u8>> {
        format(|w| rec::write_print_fmt(&self.progs, self.is_return, w))
    }

    /// Writes one record per enabled instance, and one for perf if it listens. `head` fills
    /// the head fields; `ret_addr` is the return address at a return (perf then samples the
    /// exit registers, ip = that address).
    fn record(
        &self,
        env: &env::HitEnv<'_>,
        perf: PerfCall,
        ret_addr: Option<usize>,
        head: impl Fn(&mut [u8]),
    ) {
        let _np = NoPreempt::new();
        if self.perf_users.load(Relaxed) != 0 {
            let len = self.head + self.args_size + rec::dynamic_size(&self.progs, env);
            // SAFETY: the probe's event is registered while its probes are, and we hold
            // preemption disabled.
            unsafe {
                perf.write(env.regs, ret_addr, len, |r| {
                    head(r);
                    rec::store(&self.progs, env, r, self.head, self.args_size);
                })
            };
        }
        let list = self.files.load(Acquire);
        if list.is_null() {
            return;
        }
        // SAFETY: a published list is freed only after a grace period, and we hold preemption
        // disabled (see `reg`).
        let list = unsafe { &*list };
        for file in list.live() {
            let dsize = rec::dynamic_size(&self.progs, env);
            let len = self.head + self.args_size + dsize;
            // SAFETY: `file` is in the published list: the kernel keeps it at least until
            // `reg(.., false)` removed it and waited for a grace period.
            let ok = unsafe {
                file.write(len, |r| {
                    head(r);
                    rec::store(&self.progs, env, r, self.head, self.args_size);
                })
            };
            if !ok {
                self.dropped.fetch_add(1, Relaxed);
            }
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let list = self.files.swap(core::ptr::null_mut(), AcqRel);
        if !list.is_null() {
            // SAFETY: the event is unregistered and its probes too (owners drop it only then):
            // no reader is left.
            drop(unsafe { KBox::from_raw(list) });
        }
    }
}

fn put_word(r: &mut [u8], at: usize, v: u64) {
    if let Some(d) = r.get_mut(at..at + 8) {
        crate::pure::slice::copy(d, &v.to_le_bytes());
    }
}

fn get_word(r: &[u8], at: usize) -> u64 {
    r.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

impl EventOps for Event {
    fn reg(&self, file: EventFile, on: bool) -> Result {
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
        // SAFETY: our own module, live (we run its code); balanced when disabled or below.
        if !unsafe { bindings::try_module_get(ev.module) } {
            return Err(ENODEV);
        }
        // Everything that can fail before the probes are registered, so that a failure leaves
        // nothing behind.
        let new = match Self::list_with(old_list, file) {
            Ok(n) => n,
            Err(e) => {
                // SAFETY: taken above.
                unsafe { bindings::module_put(ev.module) };
                return Err(e);
            }
        };
        // The first user registers the probes (register on enable).
        if !self.in_use() {
            if let Err(e) = ev.arm(self) {
                // SAFETY: never published.
                drop(unsafe { KBox::from_raw(new) });
                // SAFETY: taken above.
                unsafe { bindings::module_put(ev.module) };
                return Err(e);
            }
        }
        self.files.store(new, Release);
        // Hits that may still use the old list run with preemption disabled.
        synchronize_rcu();
        if !old.is_null() {
            // SAFETY: unpublished above, and no reader is left after the grace period.
            drop(unsafe { KBox::from_raw(old) });
        }
        Ok(())
    }

    fn perf(&self, on: bool) -> Result {
        let ev = events().ok_or(ENODEV)?;
        if on {
            // As for an instance's enable (see `reg`).
            // SAFETY: our own module, live; balanced when perf stops listening or below.
            if !unsafe { bindings::try_module_get(ev.module) } {
                return Err(ENODEV);
            }
            if !self.in_use() {
                if let Err(e) = ev.arm(self) {
                    // SAFETY: taken above.
                    unsafe { bindings::module_put(ev.module) };
                    return Err(e);
                }
            }
            self.perf_users.fetch_add(1, Relaxed);
        } else {
            self.perf_users.fetch_sub(1, Relaxed);
            // Hits that saw a listener finish before the reference goes.
            synchronize_rcu();
            if !self.in_use() {
                ev.disarm(self);
            }
            // SAFETY: balances the reference taken when perf started listening.
            unsafe { bindings::module_put(ev.module) };
        }
        Ok(())
    }

    fn define_fields(&self, fields: &mut Fields) -> Result {
        let head: &[(&[u8], usize)] = if self.is_return {
            &[(b"__probe_func\0", 8), (b"__probe_ret_ip\0", 16)]
        } else {
            &[(b"__probe_ip\0", 8)]
        };
        for &(name, off) in head {
            // SAFETY: static strings.
            unsafe { fields.define(b"unsigned long\0", name, off, 8, false)? };
        }
        for (i, p) in self.progs.iter().enumerate() {
            let (ty, name) = (&self.field_types[i], &self.field_names[i]);
            // SAFETY: the strings live in the event, which outlives its registration.
            unsafe {
                fields.define(
                    ty,
                    name,
                    p.field_offset(self.head),
                    p.field_size(),
                    p.is_signed(),
                )?
            };
        }
        Ok(())
    }

    fn print(&self, r: &[u8], out: &mut SeqOut) -> fmt::Result {
        write!(out, "{}: (", as_str(&self.name))?;
        if self.is_return {
            out.symbol(get_word(r, 16), true)?;
            out.write_str(" <- ")?;
            out.symbol(get_word(r, 8), false)?;
        } else {
            out.symbol(get_word(r, 8), true)?;
        }
        out.write_str(")")?;
        rec::render_args(&self.progs, r, self.head, &mut Render(out))
    }
}

/// `pure::event::Out` over a `trace_seq`.
struct Render<'a>(&'a mut SeqOut);

impl Write for Render<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_str(s)
    }
}

impl rec::Out for Render<'_> {
    fn symbol(&mut self, addr: u64) -> fmt::Result {
        self.0.symbol(addr, true)
    }

    fn bytes(&mut self, bytes: &[u8]) -> fmt::Result {
        self.0.bytes(bytes)
    }
}

fn probe_of<'a>(fp: *mut ufgraph_fprobe) -> &'a Probe {
    // SAFETY: the fprobe core calls our handlers only for our registered probes, whose `fp`
    // is the first field of a `Probe` (repr(C)) that outlives its registration.
    unsafe { &*fp.cast::<Probe>() }
}

/// fprobe entry handler of an event's probe.
///
/// # Safety
///
/// Called by the fprobe core only, for a registered `Probe`'s `fp`, with the hooked call's
/// registers and the probe's entry data.
unsafe extern "C" fn entry_handler(
    fp: *mut ufgraph_fprobe,
    ip: c_ulong,
    _ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) -> c_int {
    let p = probe_of(fp);
    // SAFETY: the event outlives its probes (they are unregistered before it is freed).
    let ev = unsafe { &*p.event };
    // SAFETY: the fprobe core passes the entry registers, valid during the call.
    let regs = unsafe { Regs::from_raw(fregs) };
    // A tracepoint's probestub is also called by others who attached it (the kernel's own
    // tracepoint probe events, with NULL): only our attachment's calls are ours.
    if ev.tracepoint && regs.arg(0) != stub_data() as usize {
        return 0;
    }
    if ev.is_return {
        // Save the arguments the exit probe reads: entry_data_size was sized for them.
        if !data.is_null() {
            for (i, &a) in ev.entry_args.iter().enumerate() {
                // SAFETY: `data` holds `entry_args.len()` words for this call.
                unsafe { data.cast::<u64>().add(i).write(regs.arg(a.into()) as u64) };
            }
        }
        return 0;
    }
    let env = env::HitEnv {
        regs,
        data: &[],
        thread_size: events().map_or(0, |e| e.thread_words),
    };
    ev.record(&env, p.perf, None, |r| put_word(r, 8, ip as u64));
    0
}

/// fprobe exit handler of an event's probe.
///
/// # Safety
///
/// As for [`entry_handler`], at the hooked call's return.
unsafe extern "C" fn exit_handler(
    fp: *mut ufgraph_fprobe,
    ip: c_ulong,
    ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    let p = probe_of(fp);
    // SAFETY: as in `entry_handler`.
    let ev = unsafe { &*p.event };
    // SAFETY: the exit registers, valid during the call.
    let regs = unsafe { Regs::from_raw(fregs) };
    let words = ev.entry_args.len();
    let saved: &[u64] = if data.is_null() || words == 0 {
        &[]
    } else {
        // SAFETY: the entry data the entry handler filled, `words` words, for this call.
        unsafe { core::slice::from_raw_parts(data.cast::<u64>(), words) }
    };
    let env = env::HitEnv {
        regs,
        data: saved,
        thread_size: events().map_or(0, |e| e.thread_words),
    };
    ev.record(&env, p.perf, Some(ret_ip), |r| {
        put_word(r, 8, ip as u64);
        put_word(r, 16, ret_ip as u64);
    });
}

/// A command's outcome: the errno, and what to log.
struct Failure {
    errno: Error,
    log: Option<probedef::ProbeError>,
}

impl From<Error> for Failure {
    fn from(errno: Error) -> Self {
        Failure { errno, log: None }
    }
}

impl Events {
    /// The events core. `EventMutex::resolve` must have succeeded.
    pub fn new(module: &'static ThisModule) -> impl PinInit<Self> {
        let module: *mut bindings::module = module.as_ptr().cast();
        // SAFETY: constants from the glue.
        let (thread_words, dn, fd) = unsafe {
            (
                bindings::ufg_stack_index_max() as u64,
                bindings::ufg_dentry_name_offset(),
                bindings::ufg_file_dentry_offset(),
            )
        };
        let cfg = Config {
            max_stack_index: thread_words.min(u16::MAX as u64) as u16,
            dentry_name_offset: dn,
            file_dentry_offset: fd,
        };
        pin_init!(Self {
            reg <- new_mutex!(Registry {
                entries: KVec::new(),
                errors: KVec::new(),
                stubs: KVec::new(),
            }),
            cfg,
            thread_words,
            module,
        })
    }

    /// Makes the events reachable from the control files.
    pub fn publish(self: Pin<&Self>) {
        EVENTS.store((&*self as *const Self).cast_mut(), Release);
    }

    #[inline(never)]
    fn log_error(&self, cmd: &str, err: &probedef::ProbeError) {
        // SAFETY: no preconditions.
        let ts = unsafe { bindings::trace_clock_local() };
        let Ok(text) = format(|w| write!(w, "{}", err.log(cmd, &self.cfg, ts))) else {
            return;
        };
        let mut reg = self.reg.lock();
        if reg.errors.len() >= ERROR_LOG_MAX {
            drop(kvec::remove(&mut reg.errors, 0));
        }
        let _ = reg.errors.push(ErrEntry { text }, GFP_KERNEL);
    }

    /// Runs what was written to `dynamic_events`: one command per line.
    pub fn write(&self, text: &str) -> Result {
        for line in probedef::commands(text) {
            if let Err(f) = self.run(line) {
                if let Some(e) = f.log {
                    self.log_error(line, &e);
                }
                return Err(f.errno);
            }
        }
        Ok(())
    }

    #[inline(never)]
    fn run(&self, line: &str) -> core::result::Result<(), Failure> {
        // A `t` definition's tracepoint is looked up while parsing, where upstream does.
        let mut tp = None;
        let mut lookup = |name: &str| {
            tp = Tracepoint::find(name.as_bytes());
            tp.is_some()
        };
        let cmd = match probedef::parse_with(line, &self.cfg, &mut lookup) {
            Ok(c) => c,
            Err(e) => {
                return Err(Failure {
                    errno: Error::from_errno(e.errno().to_kernel()),
                    log: e.probe().copied(),
                });
            }
        };
        match cmd {
            Command::Empty => Ok(()),
            Command::Add(def) => self.add(&def, tp),
            Command::Remove(rd) => self.remove(&rd).map_err(Failure::from),
        }
    }

    #[inline(never)]
    fn add(
        &self,
        def: &ProbeDef<'_>,
        tp: Option<(Tracepoint, Option<ModuleRef>)>,
    ) -> core::result::Result<(), Failure> {
        // The parser looked the tracepoint up (and refused an unknown one).
        let (tp, tp_module) = match def.kind() {
            ProbeKind::Tracepoint => {
                let (t, m) = tp.ok_or(Failure::from(EINVAL))?;
                (Some(t), m)
            }
            ProbeKind::Fprobe => (None, None),
        };
        let fail = |errno: i32| Failure {
            errno: Error::from_errno(errno),
            log: def.registration_error(errno),
        };
        let (group, name) = (def.group().as_bytes(), def.event().as_bytes());
        // The kernel's own events of that name (checked before event_mutex, which it takes).
        let ours = {
            let reg = self.reg.lock();
            reg.entries
                .iter()
                .any(|e| e.group == group && e.name == name)
        };
        if !ours && trace_event::event_exists(group, name).map_err(|e| fail(e.to_errno()))? {
            return Err(fail(EEXIST.to_errno()));
        }
        let ev = Event::new(def).map_err(|e| fail(e.to_errno()))?;
        // The functions, matched before any lock (the fast path, without event_mutex) but
        // reported after the checks of an append, as upstream verifies the target last.
        // Nothing is hooked until the event has a user (register on enable).
        let sym = cvec(def.symbol().as_bytes()).map_err(Failure::from)?;
        let resolved = Self::resolve(&sym, tp);
        let cmd = bytes(def.command().as_bytes()).map_err(Failure::from)?;
        let g = EventMutex::lock().map_err(Failure::from)?;
        let mut reg = self.reg.lock();
        // Room first: nothing may fail after the event is registered.
        reg.entries
            .reserve(1, GFP_KERNEL)
            .map_err(|_| Failure::from(ENOMEM))?;
        let Registry { entries, stubs, .. } = &mut *reg;
        if let Some(entry) = entries
            .iter_mut()
            .find(|e| e.group == group && e.name == name)
        {
            // Another probe for an existing event: same kind, same arguments, not a duplicate.
            self.check_append(def, entry)?;
            let r = resolved.map_err(|e| fail(e.to_errno()))?;
            let evp: *const Event = entry.event.ops();
            let perf = entry.event.perf_call();
            entry
                .probes
                .reserve(1, GFP_KERNEL)
                .map_err(|_| Failure::from(ENOMEM))?;
            let mut slot = Self::new_slot(def, evp, perf, cmd, sym, r, tp, tp_module)
                .map_err(|e| fail(e.to_errno()))?;
            // An event in use gets its new probe registered now. (Upstream from 6.17 leaves a
            // probe appended to an enabled event unregistered until the event is next
            // enabled: it would miss every call meanwhile.)
            if entry.event.ops().in_use() {
                Self::arm_slot(stubs, &mut slot).map_err(|e| fail(e.to_errno()))?;
            }
            // Cannot fail: room was reserved.
            let _ = entry.probes.push(slot, GFP_KERNEL);
            drop(g);
            return Ok(());
        }
        let r = resolved.map_err(|e| fail(e.to_errno()))?;
        let print_fmt = ev.print_fmt().map_err(Failure::from)?;
        let mut call = EventCall::new(group, name, &print_fmt, ev).map_err(Failure::from)?;
        let evp: *const Event = call.ops();
        let perf = call.perf_call();
        let slot = Self::new_slot(def, evp, perf, cmd, sym, r, tp, tp_module)
            .map_err(|e| fail(e.to_errno()))?;
        let mut probes = KVec::new();
        let (Ok(()), Ok(gname), Ok(ename)) =
            (probes.push(slot, GFP_KERNEL), bytes(group), bytes(name))
        else {
            return Err(ENOMEM.into());
        };
        // The kernel adds the event under its `trace_types_lock`, which it also holds when it
        // disables events removing an instance (calling our `reg`, which takes the registry
        // lock): the registry lock is not held across it. Under `event_mutex`, which we hold,
        // nobody else changes the entries meanwhile.
        drop(reg);
        call.as_mut().register(&g).map_err(|e| fail(e.to_errno()))?;
        // Cannot fail: room was reserved.
        let _ = self.reg.lock().entries.push(
            Entry {
                group: gname,
                name: ename,
                kind: def.kind(),
                event: call,
                probes,
            },
            GFP_KERNEL,
        );
        Ok(())
    }

    /// Whether `def` may be added to `entry`'s event: upstream's checks, with its errors.
    #[inline(never)]
    fn check_append(&self, def: &ProbeDef<'_>, entry: &Entry) -> core::result::Result<(), Failure> {
        if let Some(e) = def.diff_probe_type(entry.event.ops().is_return, entry.kind) {
            return Err(Failure {
                errno: EEXIST,
                log: Some(e),
            });
        }
        if let Some(first) = entry.probes.first() {
            if let Some(e) = self.diff_args(def, &first.probe.cmd) {
                return Err(Failure {
                    errno: EEXIST,
                    log: Some(e),
                });
            }
        }
        for p in entry.probes.iter() {
            if let Some(e) = self.same_probe(def, &p.probe.cmd)? {
                return Err(Failure {
                    errno: EEXIST,
                    log: Some(e),
                });
            }
        }
        Ok(())
    }

    #[inline(never)]
    fn diff_args(&self, def: &ProbeDef<'_>, cmd: &[u8]) -> Option<probedef::ProbeError> {
        let Ok(Command::Add(fdef)) = probedef::parse(as_str(cmd), &self.cfg) else {
            return None;
        };
        def.diff_arg_types(fdef.args().map(|a| a.sig()))
    }

    #[inline(never)]
    fn same_probe(
        &self,
        def: &ProbeDef<'_>,
        cmd: &[u8],
    ) -> core::result::Result<Option<probedef::ProbeError>, Failure> {
        let Ok(Command::Add(pdef)) = probedef::parse(as_str(cmd), &self.cfg) else {
            return Ok(None);
        };
        let mut texts: KVec<KVec<u8>> = KVec::new();
        for a in pdef.args() {
            let t = format(|w| write!(w, "{}", a.comm))?;
            texts
                .push(t, GFP_KERNEL)
                .map_err(|_| Failure::from(ENOMEM))?;
        }
        Ok(def.same_probe(pdef.symbol(), texts.iter().map(|t| as_str(t))))
    }

    /// The functions the definition's symbol (`sym`, NUL-terminated) selects. Upstream hands
    /// the symbol to `register_fprobe()` as a filter, whether or not it has wildcards: a glob
    /// (the kernel's `glob_match()`: `*`, `?`, `[...]`, `\\`) over every traceable function,
    /// the kernel's and the modules', so a plain name selects every function of that name.
    /// `ENOENT` when none matches (logged as `BAD_PROBE_ADDR`, see
    /// `ProbeDef::registration_error`).
    fn resolve_symbol(sym: &[u8]) -> Result<fprobe::Resolved> {
        let pattern = CStr::from_bytes_with_nul(sym).map_err(|_| EINVAL)?;
        fprobe::Fprobes::resolve_gen(&Target::Filter(pattern, None))
    }

    /// What a probe hooks: the functions `sym` selects, or, for a tracepoint probe, the
    /// tracepoint's probestub (by address, as upstream's `register_fprobe_ips()`).
    fn resolve(sym: &[u8], tp: Option<Tracepoint>) -> Result<fprobe::Resolved> {
        match tp {
            Some(tp) => fprobe::Fprobes::resolve_gen(&Target::Ips(&[tp.probestub()])),
            None => Self::resolve_symbol(sym),
        }
    }

    /// A probe for `def`'s event, not registered yet, on the functions `r`.
    // Each argument is one field of the probe, gathered from different places by the callers.
    #[allow(clippy::too_many_arguments)]
    fn new_slot(
        def: &ProbeDef<'_>,
        ev: *const Event,
        perf: PerfCall,
        cmd: KVec<u8>,
        sym: KVec<u8>,
        r: fprobe::Resolved,
        tp: Option<Tracepoint>,
        tp_module: Option<ModuleRef>,
    ) -> Result<Slot> {
        let mut fp = ufgraph_fprobe::default();
        if def.is_return() {
            fp.exit_handler = Some(exit_handler);
            if !def.entry_args().is_empty() {
                fp.entry_handler = Some(entry_handler);
                fp.entry_data_size = def.entry_data_size();
            }
        } else {
            fp.entry_handler = Some(entry_handler);
        }
        // What registration would refuse of the probe itself (too much entry data), refused now.
        fprobe::Fprobes::check_probe(&fp)?;
        let probe = KBox::pin(
            Probe {
                fp,
                event: ev,
                perf,
                cmd,
            },
            GFP_KERNEL,
        )?;
        Ok(Slot {
            probe,
            sym,
            ips: r.ips,
            gen: r.gen,
            armed: false,
            tp,
            _tp_module: tp_module,
        })
    }

    /// Registers a probe with the fprobe core on the functions its symbol matches now: the
    /// ones matched last if no module came or went since, else its glob is matched again
    /// (reading ftrace's function list, under event_mutex: see `ufg_file_open` for lockdep).
    /// `ENOENT` if nothing matches any more (the functions' module went away). On failure
    /// nothing is registered.
    fn arm_slot(stubs: &mut KVec<StubUse>, slot: &mut Slot) -> Result {
        let core = fprobe::fprobes().ok_or(ENODEV)?;
        // A tracepoint probe needs the probestub on its tracepoint: attached first, as
        // upstream does (a hit in between calls the stub, which does nothing).
        if let Some(tp) = slot.tp {
            Self::stub_get(stubs, tp)?;
        }
        let r = Self::register_slot(core, slot);
        if let (Err(_), Some(tp)) = (&r, slot.tp) {
            Self::stub_put(stubs, tp);
        }
        r
    }

    /// [`Events::arm_slot`]'s registration with the fprobe core.
    fn register_slot(core: &fprobe::Fprobes, slot: &mut Slot) -> Result {
        // SAFETY: the probe is pinned in its box, which the registry keeps until it is
        // unregistered; `fp` is its first field.
        let fpp = unsafe { core::ptr::addr_of_mut!(slot.probe.as_mut().get_unchecked_mut().fp) };
        let mut tries = 0;
        loop {
            if slot.gen != core.modules_gen() {
                let r = Self::resolve(&slot.sym, slot.tp)?;
                slot.ips = r.ips;
                slot.gen = r.gen;
            }
            let mut ips = KVec::with_capacity(slot.ips.len(), GFP_KERNEL)?;
            ips.extend_from_slice(&slot.ips, GFP_KERNEL)?;
            // SAFETY: as above; the ips come from `Fprobes::resolve_gen`.
            match unsafe { core.register_checked(fpp, fprobe::Resolved { ips, gen: slot.gen }) } {
                Ok(()) => {
                    slot.armed = true;
                    return Ok(());
                }
                // A module came or went since: match again (a few rounds are plenty).
                Err(e) if e == EAGAIN && tries < 8 => tries += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn disarm_slot(stubs: &mut KVec<StubUse>, slot: &mut Slot) {
        if !slot.armed {
            return;
        }
        if let Some(core) = fprobe::fprobes() {
            let fpp = core::ptr::addr_of!(slot.probe.fp).cast_mut();
            let _ = core.unregister(fpp);
        }
        slot.armed = false;
        if let Some(tp) = slot.tp {
            Self::stub_put(stubs, tp);
        }
    }

    /// One more armed probe on `tp`: the first attaches its probestub (see [`StubUse`]).
    fn stub_get(stubs: &mut KVec<StubUse>, tp: Tracepoint) -> Result {
        if let Some(u) = stubs.iter_mut().find(|u| u.tp == tp) {
            // Bounded by the number of probes.
            u.users = u.users.saturating_add(1);
            return Ok(());
        }
        // Room first, so that an attached stub is always accounted for.
        stubs.reserve(1, GFP_KERNEL)?;
        // SAFETY: `stub_data()` is a static: valid for as long as the module, which detaches
        // the stub (`stub_put`) and waits for its callers before it goes.
        unsafe { tp.attach_stub(stub_data())? };
        // Cannot fail: room was reserved.
        let _ = stubs.push(StubUse { tp, users: 1 }, GFP_KERNEL);
        Ok(())
    }

    /// One armed probe less on `tp`: the last detaches its probestub, and waits until no CPU
    /// is in it any more (`tracepoint_synchronize_unregister()`), as the kernel requires
    /// before what a probe uses goes away.
    fn stub_put(stubs: &mut KVec<StubUse>, tp: Tracepoint) {
        let Some(at) = stubs.iter().position(|u| u.tp == tp) else {
            return;
        };
        let Some(u) = stubs.get_mut(at) else {
            return;
        };
        u.users = u.users.saturating_sub(1);
        if u.users == 0 {
            let _ = kvec::remove(stubs, at);
            tp.detach_stub(stub_data());
            tracepoint::synchronize_unregister();
        }
    }

    /// The event's first user came (under event_mutex): registers its probes, all or none. A
    /// probe whose functions are gone fails the enable with `ENOENT`, logged in `error_log`
    /// against its definition (upstream logs nothing there; the kernel's own log says "Could
    /// not enable event").
    fn arm(&self, ev: &Event) -> Result {
        let mut reg = self.reg.lock();
        let Registry { entries, stubs, .. } = &mut *reg;
        let entry = entries
            .iter_mut()
            .find(|e| core::ptr::eq(e.event.ops(), ev))
            .ok_or(ENODEV)?;
        for i in 0..entry.probes.len() {
            if let Err(e) = Self::arm_slot(stubs, &mut entry.probes[i]) {
                for s in entry.probes.iter_mut() {
                    Self::disarm_slot(stubs, s);
                }
                let cmd = bytes(&entry.probes[i].probe.cmd);
                drop(reg);
                if let Ok(cmd) = cmd {
                    if let Ok(Command::Add(def)) = probedef::parse(as_str(&cmd), &self.cfg) {
                        if let Some(err) = def.registration_error(e.to_errno()) {
                            self.log_error(as_str(&cmd), &err);
                        }
                    }
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// The event's last user left (under event_mutex): unregisters its probes. When this
    /// returns, no handler of theirs runs.
    fn disarm(&self, ev: &Event) {
        let mut reg = self.reg.lock();
        let Registry { entries, stubs, .. } = &mut *reg;
        if let Some(entry) = entries
            .iter_mut()
            .find(|e| core::ptr::eq(e.event.ops(), ev))
        {
            for s in entry.probes.iter_mut() {
                Self::disarm_slot(stubs, s);
            }
        }
    }

    /// Takes an entry down: the event first (fails while enabled), then its probes (none is
    /// registered once nothing uses the event).
    fn teardown(&self, g: &trace_event::EventMutexGuard, entry: &mut Entry) -> Result {
        entry.event.as_mut().unregister(g)?;
        // The event is out of the kernel's hands: the registry lock may be taken now.
        let mut reg = self.reg.lock();
        for s in entry.probes.iter_mut() {
            Self::disarm_slot(&mut reg.stubs, s);
        }
        Ok(())
    }

    /// [`Events::teardown`] of an entry taken out of the registry, without its lock: the kernel
    /// removes the event under its `trace_types_lock`, which it also holds when it disables
    /// events removing an instance (calling our `reg`, which takes the registry lock). Under
    /// `event_mutex` nobody else changes the entries meanwhile. On failure the entry goes back
    /// where it was (`at`), and is leaked if it cannot (never freed while the kernel has it).
    fn take_down(&self, g: &trace_event::EventMutexGuard, mut e: Entry, at: usize) -> Result {
        let Err(err) = self.teardown(g, &mut e) else {
            return Ok(());
        };
        // Room: it was taken out just before.
        if let Err(e) = kvec::insert(&mut self.reg.lock().entries, at, e) {
            core::mem::forget(e);
        }
        Err(err)
    }

    #[inline(never)]
    fn remove(&self, rd: &RemoveDef<'_>) -> Result {
        let g = EventMutex::lock()?;
        let matches = |e: &Entry| {
            e.probes.iter().any(|p| {
                let Ok(Command::Add(d)) = probedef::parse(as_str(&p.probe.cmd), &self.cfg) else {
                    return false;
                };
                rd.matches(
                    as_str(&e.group),
                    as_str(&e.name),
                    d.symbol(),
                    d.args().map(|a| (a.name, a.comm)),
                )
            })
        };
        let mut found = false;
        loop {
            // The next match (those before it were taken down already, or do not match).
            let taken = {
                let mut reg = self.reg.lock();
                reg.entries
                    .iter()
                    .position(&matches)
                    .and_then(|i| kvec::remove(&mut reg.entries, i).map(|e| (e, i)))
            };
            let Some((e, at)) = taken else { break };
            found = true;
            self.take_down(&g, e, at)?;
        }
        if found {
            Ok(())
        } else {
            Err(ENOENT)
        }
    }

    /// Removes every event (`O_TRUNC`): `EBUSY`, and nothing removed, if one is enabled.
    pub fn clear(&self) -> Result {
        let g = EventMutex::lock()?;
        if self.reg.lock().entries.iter().any(|e| {
            !e.event.ops().files.load(Acquire).is_null()
                || e.event.ops().perf_users.load(Relaxed) != 0
        }) {
            return Err(EBUSY);
        }
        loop {
            let (taken, at) = {
                let mut reg = self.reg.lock();
                let at = reg.entries.len().saturating_sub(1);
                (kvec::pop(&mut reg.entries), at)
            };
            let Some(e) = taken else { return Ok(()) };
            self.take_down(&g, e, at)?;
        }
    }

    /// `dynamic_events`: one line per probe, as upstream shows them.
    pub fn show(&self, m: &mut SeqFile) -> fmt::Result {
        let reg = self.reg.lock();
        for e in reg.entries.iter() {
            for p in e.probes.iter() {
                if let Ok(Command::Add(d)) = probedef::parse(as_str(&p.probe.cmd), &self.cfg) {
                    writeln!(m, "{}", d)?;
                }
            }
        }
        Ok(())
    }

    /// `error_log`.
    pub fn show_errors(&self, m: &mut SeqFile) -> fmt::Result {
        let reg = self.reg.lock();
        for e in reg.errors.iter() {
            m.write_str(as_str(&e.text))?;
        }
        Ok(())
    }

    /// Clears `error_log`.
    pub fn clear_errors(&self) {
        kvec::clear(&mut self.reg.lock().errors);
    }

    /// The number of events, of probes, of probes registered (those of events in use), and
    /// of records dropped.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let reg = self.reg.lock();
        let probes = reg.entries.iter().map(|e| e.probes.len()).sum();
        let armed = reg
            .entries
            .iter()
            .map(|e| e.probes.iter().filter(|s| s.armed).count())
            .sum();
        let dropped = reg
            .entries
            .iter()
            .map(|e| e.event.ops().dropped.load(Relaxed))
            .sum();
        (reg.entries.len(), probes, armed, dropped)
    }
}

#[pinned_drop]
impl PinnedDrop for Events {
    fn drop(self: Pin<&mut Self>) {
        EVENTS.store(core::ptr::null_mut(), Release);
        let Ok(g) = EventMutex::lock() else { return };
        // Not under the registry lock: see `take_down`.
        loop {
            let Some(mut e) = kvec::pop(&mut self.reg.lock().entries) else {
                break;
            };
            if let Err(err) = self.teardown(&g, &mut e) {
                // Only possible if an event is enabled while the module goes, which the module
                // reference taken on enable prevents. Never free what the kernel points to.
                pr_err!(
                    "event {}/{} still in use at unload ({:?}): leaking it\n",
                    as_str(&e.group),
                    as_str(&e.name),
                    err
                );
                core::mem::forget(e);
            }
        }
    }
}

/// The `README` file: upstream's tracefs README lines (kernel/trace/trace.c, `readme_msg`) for
/// what ufgraph's `dynamic_events` takes, word for word, and none for what it does not (no
/// BTF `<argname>`, no `e:`, `p:` or `r:`): tools, ftracetest's `requires:`
/// among them, grep it to decide what to try. Test 61 checks both ways.
pub const README: &str = "\
ufgraph fprobe events: upstream's dynamic_events syntax for fprobes, on ufgraph.

  error_log\t- error log for failed commands (that support it)
  dynamic_events\t\t- Create/append/remove/show the generic dynamic events
\t\t\t  Write into this file to define/undefine new trace events.
\t  accepts: event-definitions (one definition per line)
\t   Format: f[:[<group>/][<event>]] <func-name>[%return] [<args>]
\t           t[:[<group>/][<event>]] <tracepoint> [<args>]
\t           -:[<group>/][<event>]
\t     args: <name>=fetcharg[:type]
\t fetcharg: @<address>, @<symbol>[+|-<offset>],
\t           $stack<index>, $stack, $retval, $comm, $arg<N>,
\t           +|-[u]<offset>(<fetcharg>), \\imm-value, \\\"imm-string\"
\t     kernel return probes support: $retval, $arg<N>, $comm
\t     type: s8/16/32/64, u8/16/32/64, x8/16/32/64, char, string, symbol,
\t           b<bit-width>@<bit-offset>/<container-size>, ustring,
\t           symstr, %pd/%pD, <type>\\[<array-size>\\]
  events/<system>/<event>/\t- Directory containing control files for
\t\t\t  <event>:
      enable\t\t- Write 0/1 to enable/disable tracing of <event>
      filter\t\t- If set, only events passing filter are traced
      trigger\t\t- If set, a command to perform when event is hit
";

/// Events, probes, probes registered, and records ring buffers refused, for the `stats` file.
pub fn counts() -> Option<(usize, usize, usize, usize)> {
    events().map(|e| e.counts())
}

/// The tracepoints whose probestub is attached (by armed `t:` probes), for the `stats` file.
pub fn stubs_attached() -> Option<usize> {
    events().map(|e| e.reg.lock().stubs.len())
}

/// The control files (debugfs, see `ufgraph_main.rs`): thin wrappers that find the events.
pub mod files {
    use super::*;

    /// `dynamic_events`, read.
    pub fn show(m: &mut SeqFile) -> fmt::Result {
        events().map_or(Ok(()), |e| e.show(m))
    }

    /// `dynamic_events`, written.
    pub fn write(text: &str) -> Result {
        events().ok_or(ENODEV)?.write(text)
    }

    /// `dynamic_events`, opened with `O_TRUNC`.
    pub fn truncate() -> Result {
        events().ok_or(ENODEV)?.clear()
    }

    /// `error_log`, read.
    pub fn show_errors(m: &mut SeqFile) -> fmt::Result {
        events().map_or(Ok(()), |e| e.show_errors(m))
    }

    /// `error_log`, written: upstream ignores what is written.
    pub fn write_errors(_text: &str) -> Result {
        Ok(())
    }

    /// `error_log`, opened with `O_TRUNC`: cleared.
    pub fn truncate_errors() -> Result {
        if let Some(e) = events() {
            e.clear_errors();
        }
        Ok(())
    }

    /// `README`.
    pub fn show_readme(m: &mut SeqFile) -> fmt::Result {
        m.write_str(README)
    }
}
