// SPDX-License-Identifier: GPL-2.0

//! One event: what its probes record (the fetch programs, the record's layout), and the
//! kernel's calls into it ([`EventOps`]), which the other files of `events` carry out.

use super::enable::FileList;
use super::{bytes, cvec, format};
use crate::pure::event::{self as rec, Program};
use crate::pure::probedef::{ProbeDef, ProbeKind};
use crate::sys::ksym;
use crate::sys::trace_event::{EventFile, EventOps, Fields, SeqOut};
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};
use kernel::alloc::{KBox, KVec};
use kernel::prelude::*;

/// One event: what its probes record, and where.
pub(super) struct Event {
    pub(super) is_return: bool,
    /// A tracepoint probe (`t:`): its probes are on a tracepoint's probestub, and record only
    /// the calls whose first argument is [`stub_data`] (see [`StubUse`]).
    ///
    /// [`stub_data`]: super::probe::stub_data
    /// [`StubUse`]: super::probe::StubUse
    pub(super) tracepoint: bool,
    pub(super) head: usize,
    pub(super) args_size: usize,
    pub(super) progs: KVec<Program>,
    /// The function arguments an exit probe saves at entry, in entry-data order.
    pub(super) entry_args: KVec<u16>,
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
    #[inline(never)]
    pub(super) fn new(def: &ProbeDef<'_>) -> Result<Self> {
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

    pub(super) fn print_fmt(&self) -> Result<KVec<u8>> {
        format(|w| rec::write_print_fmt(&self.progs, self.is_return, w))
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
