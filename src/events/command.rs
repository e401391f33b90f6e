// SPDX-License-Identifier: GPL-2.0

//! What is written to `dynamic_events`: one command per line, parsed and run (adding an event,
//! or a probe to one; removing is in `teardown`), failures logged in `error_log`; and what
//! reading `dynamic_events` and `error_log` shows.

use super::event::{Event, ProbeArgs};
use super::probe::{Slot, StubUse};
use super::{as_str, btf_ref, bytes, cvec, format, Entry, ErrEntry, Events, Registry};
use crate::events::probedef::{self, Command, ProbeDef, ProbeKind};
use crate::fprobe;
use crate::sys::btf::KernelBtf;
use crate::sys::debugfs::SeqFile;
use crate::sys::kvec;
use crate::sys::trace_event::{self, EventCall, EventMutex, EventMutexGuard};
use crate::sys::tracepoint::{ModuleRef, Tracepoint};
use core::fmt::{self, Write};
use kernel::alloc::KVec;
use kernel::prelude::*;
use kernel::sync::lock::{mutex::MutexBackend, Guard};
use kernel::sync::Arc;

/// How many `error_log` entries are kept (upstream's `TRACING_LOG_ERRS_MAX`).
const ERROR_LOG_MAX: usize = 8;

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

/// A failure to add `def`: `errno`, logged if upstream logs it for a registration.
fn fail(def: &ProbeDef<'_>, errno: Error) -> Failure {
    Failure {
        errno,
        log: def.registration_error(errno.to_errno()),
    }
}

/// A probe being added: what [`Events::add`] gathered before it took the locks.
struct NewProbe {
    /// Its fetch programs: its own, whether it makes a new event or joins one.
    args: ProbeArgs,
    cmd: KVec<u8>,
    /// The module's BTF `cmd` was parsed with, if any.
    btf: Option<Arc<KernelBtf>>,
    sym: KVec<u8>,
    tp: Option<Tracepoint>,
    tp_module: Option<ModuleRef>,
}

impl NewProbe {
    /// The probe, for `call`'s event, on the functions `r`; not registered yet.
    fn into_slot(
        self,
        def: &ProbeDef<'_>,
        call: &EventCall<Event>,
        r: fprobe::Resolved,
    ) -> core::result::Result<Slot, Failure> {
        let evp: *const Event = call.ops();
        let perf = call.perf_call();
        Events::new_slot(
            def,
            evp,
            self.args,
            perf,
            self.cmd,
            self.btf,
            self.sym,
            r,
            self.tp,
            self.tp_module,
        )
        .map_err(|e| fail(def, e))
    }
}

impl Events {
    #[inline(never)]
    pub(super) fn log_error(&self, cmd: &str, err: &probedef::ProbeError) {
        let ts = crate::sys::ftrace::clock_local();
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
        // BTF arguments need vmlinux's BTF (read once), and room to rewrite `$arg*`.
        // A module's function: its module's BTF, read when the parser asks for it.
        self.btf.load();
        let src = self.new_source();
        let mut scratch = KVec::new();
        scratch
            .extend_with(line.len() + probedef::EXPAND_ROOM, 0u8, GFP_KERNEL)
            .map_err(|_| Failure::from(ENOMEM))?;
        let cmd =
            match probedef::parse_btf(line, &self.cfg, &mut lookup, btf_ref(&src), &mut scratch) {
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
            Command::Add(def) => self.add(&def, tp, src.as_ref().and_then(|s| s.module())),
            Command::Remove(rd) => self.remove(&rd).map_err(Failure::from),
        }
    }

    #[inline(never)]
    fn add(
        &self,
        def: &ProbeDef<'_>,
        tp: Option<(Tracepoint, Option<ModuleRef>)>,
        btf: Option<Arc<KernelBtf>>,
    ) -> core::result::Result<(), Failure> {
        // The parser looked the tracepoint up (and refused an unknown one).
        let (tp, tp_module) = match def.kind() {
            ProbeKind::Tracepoint => {
                let (t, m) = tp.ok_or(Failure::from(EINVAL))?;
                (Some(t), m)
            }
            ProbeKind::Fprobe => (None, None),
        };
        let (group, name) = (def.group().as_bytes(), def.event().as_bytes());
        // The kernel's own events of that name (checked before event_mutex, which it takes).
        let ours = {
            let reg = self.reg.lock();
            reg.entries
                .iter()
                .any(|e| e.group == group && e.name == name)
        };
        if !ours && trace_event::event_exists(group, name).map_err(|e| fail(def, e))? {
            return Err(fail(def, EEXIST));
        }
        // The probe's own programs, whether it makes an event or joins one (where they fill
        // the fields the event's first definition laid out: `check_append`).
        let args = ProbeArgs::new(def).map_err(|e| fail(def, e))?;
        // The functions, matched before any lock (the fast path, without event_mutex) but
        // reported after the checks of an append, as upstream verifies the target last.
        // Nothing is hooked until the event has a user (register on enable).
        let sym = cvec(def.symbol().as_bytes()).map_err(Failure::from)?;
        let resolved = Self::resolve(&sym, tp);
        // Kept with `$arg*`/`$argN` rewritten, to parse again without rewriting.
        let cmd = format(|w| def.write_rewritten(w)).map_err(Failure::from)?;
        let p = NewProbe {
            args,
            cmd,
            btf,
            sym,
            tp,
            tp_module,
        };
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
            return self.append(def, entry, stubs, p, resolved);
        }
        self.add_event(def, &g, reg, p, resolved)
    }

    /// [`Events::add`] of a probe to an existing event (`entry`'s), under both locks.
    fn append(
        &self,
        def: &ProbeDef<'_>,
        entry: &mut Entry,
        stubs: &mut KVec<StubUse>,
        p: NewProbe,
        resolved: Result<fprobe::Resolved>,
    ) -> core::result::Result<(), Failure> {
        // Another probe for an existing event: same kind, same arguments, not a duplicate.
        self.check_append(def, entry)?;
        let r = resolved.map_err(|e| fail(def, e))?;
        entry
            .probes
            .reserve(1, GFP_KERNEL)
            .map_err(|_| Failure::from(ENOMEM))?;
        let mut slot = p.into_slot(def, &entry.event, r)?;
        // An event in use gets its new probe registered now. (Upstream from 6.17 leaves a
        // probe appended to an enabled event unregistered until the event is next
        // enabled: it would miss every call meanwhile.)
        if entry.event.ops().in_use() {
            Self::arm_slot(stubs, &mut slot).map_err(|e| fail(def, e))?;
        }
        // Cannot fail: room was reserved.
        let _ = entry.probes.push(slot, GFP_KERNEL);
        Ok(())
    }

    /// [`Events::add`] of a new event, defined by `def`, with its first probe `p`, under
    /// `event_mutex` (`g`) and the registry lock (`reg`, room reserved for the entry), which it
    /// drops before the kernel adds the event.
    fn add_event(
        &self,
        def: &ProbeDef<'_>,
        g: &EventMutexGuard,
        reg: Guard<'_, Registry, MutexBackend>,
        p: NewProbe,
        resolved: Result<fprobe::Resolved>,
    ) -> core::result::Result<(), Failure> {
        let (group, name) = (def.group().as_bytes(), def.event().as_bytes());
        let r = resolved.map_err(|e| fail(def, e))?;
        let ev = Event::new(def, &p.args).map_err(|e| fail(def, e))?;
        let print_fmt = ev.print_fmt().map_err(Failure::from)?;
        let mut call = EventCall::new(group, name, &print_fmt, ev).map_err(Failure::from)?;
        let slot = p.into_slot(def, &call, r)?;
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
        call.as_mut().register(g).map_err(|e| fail(def, e))?;
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
            if let Some(e) = self.diff_args(def, first) {
                return Err(Failure {
                    errno: EEXIST,
                    log: Some(e),
                });
            }
        }
        for p in entry.probes.iter() {
            if let Some(e) = self.same_probe(def, p)? {
                return Err(Failure {
                    errno: EEXIST,
                    log: Some(e),
                });
            }
        }
        Ok(())
    }

    #[inline(never)]
    fn diff_args(&self, def: &ProbeDef<'_>, first: &Slot) -> Option<probedef::ProbeError> {
        let src = self.stored_source(first.btf.as_ref());
        let fdef = self.reparse(&first.cmd, &src)?;
        def.diff_arg_types(fdef.args().map(|a| a.sig()))
    }

    #[inline(never)]
    fn same_probe(
        &self,
        def: &ProbeDef<'_>,
        p: &Slot,
    ) -> core::result::Result<Option<probedef::ProbeError>, Failure> {
        let src = self.stored_source(p.btf.as_ref());
        let Some(pdef) = self.reparse(&p.cmd, &src) else {
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

    /// `dynamic_events`: one line per probe, as upstream shows them.
    pub fn show(&self, m: &mut SeqFile) -> fmt::Result {
        let reg = self.reg.lock();
        for e in reg.entries.iter() {
            for p in e.probes.iter() {
                let src = self.stored_source(p.btf.as_ref());
                if let Some(d) = self.reparse(&p.cmd, &src) {
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
}
