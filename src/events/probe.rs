// SPDX-License-Identifier: GPL-2.0

//! An event's probes: their registration with the fprobe core (on enable, see `enable`), the
//! functions they hook (a symbol's glob, or a tracepoint's probestub), and the probestubs
//! attached to tracepoints for `t:` probes.

use super::as_str;
use super::event::{Event, ProbeArgs};
use super::record::{EntryProbe, ExitProbe};
use super::{bytes, Events, Registry};
use crate::events::probedef::ProbeDef;
use crate::fprobe::api::Fprobe;
use crate::fprobe::{self, Target};
use crate::sys::btf::KernelBtf;
use crate::sys::kvec;
use crate::sys::trace_event::PerfCall;
use crate::sys::tracepoint::{self, ModuleRef, Tracepoint};
use core::ffi::c_void;
use core::pin::Pin;
use kernel::alloc::{KBox, KVec};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// One probe of an event: a Rust fprobe (`fprobe::api`) with the handler of its kind. Dropped
/// registered, it unregisters itself.
pub(super) enum Probe {
    /// An entry (or tracepoint) probe: records at the call.
    Entry(Pin<KBox<Fprobe<EntryProbe>>>),
    /// An exit probe: saves arguments at the call if its fields read any, records at the return.
    Exit(Pin<KBox<Fprobe<ExitProbe>>>),
}

impl Probe {
    /// A probe of the event `ev` (`is_return`: an exit probe's) filling its fields with
    /// `args`, not registered.
    fn new(is_return: bool, ev: *const Event, args: ProbeArgs, perf: PerfCall) -> Result<Self> {
        // `Fprobe::new` refuses what registration would refuse of the probe itself (too much
        // entry data): refused now.
        Ok(if is_return {
            Probe::Exit(Fprobe::new(ExitProbe::new(ev, args, perf))?)
        } else {
            Probe::Entry(Fprobe::new(EntryProbe::new(ev, args, perf))?)
        })
    }

    /// Registers the probe on functions from `Fprobes::resolve_gen` (`EAGAIN` if stale).
    fn register(&mut self, r: fprobe::Resolved) -> Result {
        match self {
            Probe::Entry(p) => p.as_mut().register_resolved(r),
            Probe::Exit(p) => p.as_mut().register_resolved(r),
        }
    }

    /// Unregisters the probe: when this returns, no handler of it runs any more.
    fn unregister(&mut self) -> Result {
        match self {
            Probe::Entry(p) => p.as_mut().unregister(),
            Probe::Exit(p) => p.as_mut().unregister(),
        }
    }
}

/// One probe of an event, as the registry keeps it.
pub(super) struct Slot {
    pub(super) probe: Probe,
    /// The definition, as written (parsed again to show it).
    pub(super) cmd: KVec<u8>,
    /// The module's BTF `cmd` was parsed with (its function is a module's): `cmd` is parsed
    /// again with it, never another definition (`sys::btf::Source`).
    pub(super) btf: Option<Arc<KernelBtf>>,
    /// The symbol (a glob), NUL-terminated: matched again when `ips` are stale.
    pub(super) sym: KVec<u8>,
    /// The functions `sym` matched last, and the module generation then
    /// (`fprobe::Resolved`): a module that came or went since makes them stale.
    pub(super) ips: KVec<usize>,
    pub(super) gen: u64,
    /// Registered with the fprobe core: while the event has a user (register on enable).
    pub(super) armed: bool,
    /// A tracepoint probe's tracepoint: its probestub is the one function in `ips`, and is
    /// attached to the tracepoint while the probe is armed (see [`StubUse`]).
    pub(super) tp: Option<Tracepoint>,
    /// The module of `tp`, if a module's: held while the probe is defined, so that the
    /// tracepoint and its probestub stay (its `rmmod` fails with `EBUSY` meanwhile).
    pub(super) _tp_module: Option<ModuleRef>,
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
pub(super) struct StubUse {
    tp: Tracepoint,
    users: usize,
}

/// The `data` ufgraph attaches probestubs with: the address of a static of its own.
pub(super) fn stub_data() -> *mut c_void {
    static STUB_DATA: u8 = 0;
    core::ptr::addr_of!(STUB_DATA).cast_mut().cast()
}

impl Events {
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
    pub(super) fn resolve(sym: &[u8], tp: Option<Tracepoint>) -> Result<fprobe::Resolved> {
        match tp {
            Some(tp) => fprobe::Fprobes::resolve_gen(&Target::Ips(&[tp.probestub()])),
            None => Self::resolve_symbol(sym),
        }
    }

    /// A probe for `def`'s event, not registered yet, on the functions `r`, recording what
    /// `args` (`def`'s, compiled) fetch.
    // Each argument is one field of the probe, gathered from different places by the callers.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new_slot(
        def: &ProbeDef<'_>,
        ev: *const Event,
        args: ProbeArgs,
        perf: PerfCall,
        cmd: KVec<u8>,
        btf: Option<Arc<KernelBtf>>,
        sym: KVec<u8>,
        r: fprobe::Resolved,
        tp: Option<Tracepoint>,
        tp_module: Option<ModuleRef>,
    ) -> Result<Slot> {
        Ok(Slot {
            probe: Probe::new(def.is_return(), ev, args, perf)?,
            cmd,
            btf,
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
    pub(super) fn arm_slot(stubs: &mut KVec<StubUse>, slot: &mut Slot) -> Result {
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
        let mut tries = 0;
        loop {
            if slot.gen != core.modules_gen() {
                let r = Self::resolve(&slot.sym, slot.tp)?;
                slot.ips = r.ips;
                slot.gen = r.gen;
            }
            let mut ips = KVec::with_capacity(slot.ips.len(), GFP_KERNEL)?;
            ips.extend_from_slice(&slot.ips, GFP_KERNEL)?;
            // The ips come from `Fprobes::resolve_gen`.
            match slot.probe.register(fprobe::Resolved { ips, gen: slot.gen }) {
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

    pub(super) fn disarm_slot(stubs: &mut KVec<StubUse>, slot: &mut Slot) {
        if !slot.armed {
            return;
        }
        // Fails only if the fprobe core is gone (events go first at unload): no new call reaches
        // the probe then, and dropping it waits for the handlers still running.
        let _ = slot.probe.unregister();
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
    pub(super) fn arm(&self, ev: &Event) -> Result {
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
                let cmd = bytes(&entry.probes[i].cmd);
                let btf = entry.probes[i].btf.clone();
                drop(reg);
                if let Ok(cmd) = cmd {
                    let src = self.stored_source(btf.as_ref());
                    if let Some(def) = self.reparse(&cmd, &src) {
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
    pub(super) fn disarm(&self, ev: &Event) {
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
}
