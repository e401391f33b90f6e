// SPDX-License-Identifier: GPL-2.0

//! One event: the record's layout, which all its probes share, and the kernel's calls into it
//! ([`EventOps`]), which the other files of `events` carry out; and what one probe fetches
//! into that layout ([`ProbeArgs`]).

use super::enable::FileList;
use super::{bytes, cvec, format};
use crate::events::probedef::{ProbeDef, ProbeKind};
use crate::events::program::{self as rec, Program};
use crate::sys::ksym;
use crate::sys::trace_event::{EventFile, EventOps, Fields, SeqOut};
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};
use kernel::alloc::{KBox, KVec};
use kernel::prelude::*;

/// What one probe of an event fetches: its own fetch programs, which fill the event's fields.
///
/// As upstream, where each `trace_fprobe` has its own `tp.args` and the `trace_probe_event`
/// they share holds only the event call: a probe appended to an event must give its fields
/// the same names, types and array sizes as the event's first definition (`DIFF_ARG_TYPE`
/// otherwise, see `check_append`), but may fetch them from anywhere. `f:g/e f1 v=$arg1:s32`
/// then `f:g/e f2 v=+0($arg2):s32` make one event whose records from `f2` hold what `f2`'s
/// own program read.
pub(super) struct ProbeArgs {
    /// One program per field, in the event's field order. The field offsets in them are the
    /// event's (same types in the same order give the same offsets).
    pub(super) progs: KVec<Program>,
    /// The function arguments an exit probe saves at entry, in entry-data order: the slots its
    /// own `$argN` programs read (`Origin::EntryArg`). Empty for an entry probe, or an exit
    /// probe that reads no `$argN`.
    pub(super) entry_args: KVec<u16>,
}

impl ProbeArgs {
    /// Compiles `def`'s fetch arguments (`@SYM` resolved through kallsyms).
    #[inline(never)]
    pub(super) fn new(def: &ProbeDef<'_>) -> Result<Self> {
        let mut progs = KVec::with_capacity(def.nargs(), GFP_KERNEL)?;
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
            progs.push(p.map_err(|e| Error::from_errno(e.errno()))?, GFP_KERNEL)?;
        }
        let mut entry_args = KVec::new();
        entry_args.extend_from_slice(def.entry_args(), GFP_KERNEL)?;
        Ok(ProbeArgs { progs, entry_args })
    }
}

/// One event: the layout of its records, and the instances and listeners it writes them to.
pub(super) struct Event {
    pub(super) is_return: bool,
    /// A tracepoint probe (`t:`): its probes are on a tracepoint's probestub, and record only
    /// the calls whose first argument is [`stub_data`] (see [`StubUse`]).
    ///
    /// [`stub_data`]: super::probe::stub_data
    /// [`StubUse`]: super::probe::StubUse
    pub(super) tracepoint: bool,
    pub(super) head: usize,
    /// Bytes of the fixed argument fields (the same for every probe of the event).
    pub(super) args_size: usize,
    /// The first definition's programs, for the fields' layout only (name, type, array size,
    /// offset: what `define_fields`, `print` and the print format read), which every probe of
    /// the event shares. What a hit records comes from the probe's own [`ProbeArgs`].
    pub(super) layout: KVec<Program>,
    /// NUL-terminated field types and names, borrowed by the kernel while registered.
    pub(super) field_types: KVec<KVec<u8>>,
    pub(super) field_names: KVec<KVec<u8>>,
    pub(super) name: KVec<u8>,
    /// The instances that enabled the event (null: none). RCU: read with preemption off.
    pub(super) files: AtomicPtr<FileList>,
    /// Records a ring buffer refused (full, too big, or tracing off in that instance).
    pub(super) dropped: AtomicUsize,
    /// perf events listening (any CPU).
    pub(super) perf_users: AtomicUsize,
}

impl Event {
    /// The event `def` defines, its fields laid out as `args` (`def`'s, compiled) fill them.
    #[inline(never)]
    pub(super) fn new(def: &ProbeDef<'_>, args: &ProbeArgs) -> Result<Self> {
        let n = args.progs.len();
        let mut layout = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut field_types = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut field_names = KVec::with_capacity(n, GFP_KERNEL)?;
        for p in args.progs.iter() {
            field_types.push(
                format(|w| {
                    p.write_field_type(w)?;
                    w.write_str("\0")
                })?,
                GFP_KERNEL,
            )?;
            field_names.push(cvec(p.name().as_bytes())?, GFP_KERNEL)?;
            layout.push(*p, GFP_KERNEL)?;
        }
        Ok(Event {
            is_return: def.is_return(),
            tracepoint: def.kind() == ProbeKind::Tracepoint,
            head: if def.is_return() {
                rec::EXIT_HEAD
            } else {
                rec::ENTRY_HEAD
            },
            args_size: def.args_size(),
            layout,
            field_types,
            field_names,
            name: bytes(def.event().as_bytes())?,
            files: AtomicPtr::new(core::ptr::null_mut()),
            dropped: AtomicUsize::new(0),
            perf_users: AtomicUsize::new(0),
        })
    }

    pub(super) fn print_fmt(&self) -> Result<KVec<u8>> {
        format(|w| rec::write_print_fmt(&self.layout, self.is_return, w))
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

impl EventOps for Event {
    fn reg(&self, file: EventFile, on: bool) -> Result {
        self.enable(file, on)
    }

    fn perf(&self, on: bool) -> Result {
        self.set_perf(on)
    }

    fn define_fields(&self, fields: &mut Fields) -> Result {
        self.fields(fields)
    }

    fn print(&self, r: &[u8], out: &mut SeqOut) -> fmt::Result {
        self.render(r, out)
    }
}
