// SPDX-License-Identifier: GPL-2.0

//! fprobe events: upstream's `f:` dynamic events (Documentation/trace/fprobetrace.rst), on
//! ufgraph's fprobe, as real trace events.
//!
//! ```text
//!   write "f:grp/ev vfs_read len=$arg3:u32"  to  /sys/kernel/debug/ufgraph/dynamic_events
//!      |  events::probedef::parse      (errors -> error_log, upstream's messages and carets)
//!      |  events::program::compile       (@SYM resolved through kallsyms)
//!      v
//!   Registry (under the kernel's event_mutex, then our mutex)
//!      Entry { event: EventCall<Event>, probes: [Slot] }      one event, 1..n probes
//!         Event:  record layout (field names, types, offsets: one per event), files (RCU
//!                 list of instances enabling it)
//!         Slot:   a Probe (an Fprobe<EntryProbe> or Fprobe<ExitProbe>, fprobe::api, whose
//!                 handler knows the event it feeds and holds the probe's own ProbeArgs:
//!                 fetch programs, arguments saved at entry) + its command + its functions
//!
//!   hit:  EventProbe's entry or exit (FprobeHandler) -> Event::record(probe's ProbeArgs)
//!            -> for each enabled file: dynamic_size, reserve, head + events::program::store, commit
//!   read: tracefs `trace` -> EventOps::print -> head + events::program::render_args
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
//!
//! Where things are: [`command`] runs what is written to `dynamic_events` (adding events and
//! probes, `error_log`), [`files`] holds the control files and `README`, [`event`] is one
//! event (its layout, what the kernel calls), [`enable`] its instances and perf listeners,
//! [`probe`] its probes' registration with the fprobe core and tracepoints' probestubs,
//! [`record`] what a hit records (the handlers, with [`env`] for what they read), and
//! [`teardown`] takes events down (`-:`, `O_TRUNC`, module exit).

mod btfsource;
mod command;
mod enable;
mod env;
mod event;
pub mod files;
mod probe;
pub mod probedef;
pub mod program;
mod record;
mod teardown;

use crate::events::probedef::{BtfRef, BtfSource, Command, Config, ProbeDef, ProbeKind};
use crate::sys::btf::{KernelBtf, LazyVmlinux, Source};
use crate::sys::global::Global;
use crate::sys::module::Module;
use crate::sys::trace_event::{self, EventCall};
use core::fmt::{self, Write};
use core::sync::atomic::Ordering::*;
use event::Event;
use kernel::alloc::{KBox, KVec};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use probe::{Slot, StubUse};

struct Entry {
    group: KVec<u8>,
    name: KVec<u8>,
    kind: ProbeKind,
    /// Before `event`, so dropped first: a probe still registered (never, once the entry is
    /// taken down) unregisters itself before the event its handler reads goes.
    probes: KVec<Slot>,
    event: Pin<KBox<EventCall<Event>>>,
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
    /// vmlinux's BTF, for BTF arguments (read on the first definition).
    btf: LazyVmlinux,
    thread_words: u64,
    module: Module,
}

static EVENTS: Global<Events> = Global::new();

fn events() -> Option<&'static Events> {
    EVENTS.get()
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

/// The parser's view of an optional source.
fn btf_ref<'a>(src: &'a Option<Source<'a>>) -> BtfRef<'a> {
    BtfRef(src.as_ref().map(|s| s as &dyn BtfSource))
}

fn as_str(v: &[u8]) -> &str {
    core::str::from_utf8(v).unwrap_or("?")
}

impl Events {
    /// Where a new definition finds BTF arguments: vmlinux's BTF once read (and the modules'),
    /// else nowhere.
    fn new_source(&self) -> Option<Source<'_>> {
        Source::new(self.btf.get()?)
    }

    /// Where a stored definition finds them again: vmlinux's BTF, and the module's BTF it
    /// was parsed with (`module`, which its slot keeps).
    fn stored_source(&self, module: Option<&Arc<KernelBtf>>) -> Option<Source<'_>> {
        Source::stored(self.btf.get()?, module)
    }

    /// Whether BTF arguments work: vmlinux's BTF was read (now, if not yet tried).
    pub fn has_btf(&self) -> bool {
        self.btf.load();
        self.btf.get().is_some()
    }

    /// A stored probe's definition, parsed again with `src` (from [`Events::stored_source`]
    /// for its slot): a stored command needs no `$arg*` rewrite.
    fn reparse<'a>(&'a self, cmd: &'a [u8], src: &'a Option<Source<'a>>) -> Option<ProbeDef<'a>> {
        match probedef::parse_btf(as_str(cmd), &self.cfg, &mut |_| true, btf_ref(src), &mut []) {
            Ok(Command::Add(d)) => Some(d),
            _ => None,
        }
    }

    /// The events core. `EventMutex::resolve` must have succeeded.
    pub fn new(module: &'static ThisModule) -> impl PinInit<Self> {
        let module = Module::this(module);
        let thread_words = trace_event::thread_words();
        let (dn, fd) = trace_event::dentry_offsets();
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
            btf: LazyVmlinux::new(),
            thread_words,
            module,
        })
    }

    /// Makes the events reachable from the control files. `EBUSY` if others are.
    pub fn publish(self: Pin<&Self>) -> Result {
        // Its drop withdraws it, then removes every event under `event_mutex`, which the kernel
        // holds when it enables or disables one (the only other callers); the control files
        // are removed before (module field order), and debugfs waits for their operations.
        // SAFETY: pinned, so it stays where it is until dropped, and (above) nothing that
        // loaded it from `EVENTS` still uses it once its drop has withdrawn it.
        unsafe { EVENTS.publish(self.get_ref()) }
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

/// Events, probes, probes registered, and records ring buffers refused, for the `stats` file.
pub fn counts() -> Option<(usize, usize, usize, usize)> {
    events().map(|e| e.counts())
}

/// The tracepoints whose probestub is attached (by armed `t:` probes), for the `stats` file.
pub fn stubs_attached() -> Option<usize> {
    events().map(|e| e.reg.lock().stubs.len())
}
