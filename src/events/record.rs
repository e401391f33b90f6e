// SPDX-License-Identifier: GPL-2.0

//! A hit: the fprobe handlers of an event's probes, what they fetch at entry and at exit, and
//! the records they write; the records' fields and how `trace` shows them.

use super::env;
use super::event::Event;
use super::probe::{stub_data, Probe};
use super::{as_str, events};
use crate::bindings::{self, ufgraph_fprobe};
use crate::pure::event as rec;
use crate::sys::ftrace::Regs;
use crate::sys::sync::NoPreempt;
use crate::sys::trace_event::{Fields, PerfCall, SeqOut};
use core::ffi::c_void;
use core::fmt::{self, Write};
use core::sync::atomic::Ordering::*;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

impl Event {
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

impl Event {
    /// The record's fields, for the kernel (`define_fields`).
    pub(super) fn fields(&self, fields: &mut Fields) -> Result {
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

    /// A record as `trace` shows it (`print`).
    pub(super) fn render(&self, r: &[u8], out: &mut SeqOut) -> fmt::Result {
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

/// What both handlers start from: the probe, its event, and the hooked call's registers.
struct Hit<'a> {
    probe: &'a Probe,
    event: &'a Event,
    regs: &'a Regs,
}

impl<'a> Hit<'a> {
    /// The hit of the probe `fp` with the registers `fregs`.
    ///
    /// # Safety
    ///
    /// As for the handlers: `fp` is a registered `Probe`'s `fp`, `fregs` the registers the
    /// fprobe core passes, valid during the call.
    unsafe fn new(fp: *mut ufgraph_fprobe, fregs: *mut bindings::ftrace_regs) -> Self {
        // SAFETY: the fprobe core calls our handlers only for our registered probes, whose `fp`
        // is the first field of a `Probe` (repr(C)) that outlives its registration.
        let probe = unsafe { &*fp.cast::<Probe>() };
        Hit {
            probe,
            // SAFETY: the event outlives its probes (they are unregistered before it is freed).
            event: unsafe { &*probe.event },
            // SAFETY: the fprobe core passes the entry (or exit) registers, valid during the
            // call (caller).
            regs: unsafe { Regs::from_raw(fregs) },
        }
    }

    /// Records the hit, `saved` being the words the entry saved for an exit probe.
    fn record(&self, saved: &[u64], ret_addr: Option<usize>, head: impl Fn(&mut [u8])) {
        let env = env::HitEnv {
            regs: self.regs,
            data: saved,
            thread_size: events().map_or(0, |e| e.thread_words),
        };
        self.event.record(&env, self.probe.perf, ret_addr, head);
    }
}

/// fprobe entry handler of an event's probe.
///
/// # Safety
///
/// Called by the fprobe core only, for a registered `Probe`'s `fp`, with the hooked call's
/// registers and the probe's entry data.
pub(super) unsafe extern "C" fn entry_handler(
    fp: *mut ufgraph_fprobe,
    ip: c_ulong,
    _ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) -> c_int {
    // SAFETY: as for this function.
    let hit = unsafe { Hit::new(fp, fregs) };
    let (ev, regs) = (hit.event, hit.regs);
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
    hit.record(&[], None, |r| put_word(r, 8, ip as u64));
    0
}

/// fprobe exit handler of an event's probe.
///
/// # Safety
///
/// As for [`entry_handler`], at the hooked call's return.
pub(super) unsafe extern "C" fn exit_handler(
    fp: *mut ufgraph_fprobe,
    ip: c_ulong,
    ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    // SAFETY: as for this function; the registers are the exit registers.
    let hit = unsafe { Hit::new(fp, fregs) };
    let words = hit.event.entry_args.len();
    let saved: &[u64] = if data.is_null() || words == 0 {
        &[]
    } else {
        // SAFETY: the entry data the entry handler filled, `words` words, for this call.
        unsafe { core::slice::from_raw_parts(data.cast::<u64>(), words) }
    };
    hit.record(saved, Some(ret_ip), |r| {
        put_word(r, 8, ip as u64);
        put_word(r, 16, ret_ip as u64);
    });
}
