// SPDX-License-Identifier: GPL-2.0

//! A hit: the fprobe handlers of an event's probes, what they fetch at entry and at exit, and
//! the records they write; the records' fields and how `trace` shows them.

use super::env;
use super::event::{Event, ProbeArgs};
use super::probe::stub_data;
use super::{as_str, events};
use crate::events::program as rec;
use crate::fprobe::api::FprobeHandler;
use crate::sys::ftrace::Regs;
use crate::sys::sync::NoPreempt;
use crate::sys::trace_event::{Fields, PerfCall, SeqOut};
use core::fmt::{self, Write};
use core::sync::atomic::Ordering::*;
use kernel::prelude::*;

impl Event {
    /// Writes one record per enabled instance, and one for perf if it listens: the event's
    /// layout, filled by `args`, the programs of the probe that hit. `head` fills the head
    /// fields; `ret_addr` is the return address at a return (perf then samples the exit
    /// registers, ip = that address).
    fn record(
        &self,
        args: &ProbeArgs,
        env: &env::HitEnv<'_>,
        perf: PerfCall,
        ret_addr: Option<usize>,
        head: impl Fn(&mut [u8]),
    ) {
        let _np = NoPreempt::new();
        if self.perf_users.load(Relaxed) != 0 {
            let len = self.head + self.args_size + rec::dynamic_size(&args.progs, env);
            // SAFETY: the probe's event is registered while its probes are, and we hold
            // preemption disabled.
            unsafe {
                perf.write(env.regs, ret_addr, len, |r| {
                    head(r);
                    rec::store(&args.progs, env, r, self.head, self.args_size);
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
            let dsize = rec::dynamic_size(&args.progs, env);
            let len = self.head + self.args_size + dsize;
            // SAFETY: `file` is in the published list: the kernel keeps it at least until
            // `reg(.., false)` removed it and waited for a grace period.
            let ok = unsafe {
                file.write(len, |r| {
                    head(r);
                    rec::store(&args.progs, env, r, self.head, self.args_size);
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
        crate::sys::slice::copy(d, &v.to_le_bytes());
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
        for (i, p) in self.layout.iter().enumerate() {
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
        rec::render_args(&self.layout, r, self.head, &mut Render(out))
    }
}

/// `events::program::Out` over a `trace_seq`.
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

/// The fprobe handler of an event's probe (`Fprobe<EventProbe<EXIT>>`, the Rust fprobe API):
/// an exit probe's (`EXIT`: `%return`, or reading `$retval`) records at the return, an entry
/// probe's (or a tracepoint probe's) at the call.
pub(super) struct EventProbe<const EXIT: bool> {
    /// The event the probe feeds.
    event: *const Event,
    /// What the probe fetches into the event's fields (its own, not the event's first
    /// definition's), and, for an exit probe, the arguments it saves at entry.
    args: ProbeArgs,
    /// The event's perf side, for its listeners.
    perf: PerfCall,
}

/// An entry probe's handler (and a tracepoint probe's).
pub(super) type EntryProbe = EventProbe<false>;
/// An exit probe's handler.
pub(super) type ExitProbe = EventProbe<true>;

// SAFETY: `event` points into the pinned `EventCall` of the probe's entry, freed only once the
// probe is unregistered (taking an entry down disarms its probes first, and an `Entry` drops
// its probes before its event); the handlers only read it, from any CPU. `args` is owned, and
// only read after the probe is made.
unsafe impl<const EXIT: bool> Send for EventProbe<EXIT> {}
// SAFETY: as above.
unsafe impl<const EXIT: bool> Sync for EventProbe<EXIT> {}

impl<const EXIT: bool> EventProbe<EXIT> {
    /// The handler of a probe of `event` (a pinned `EventCall`'s, which outlives the probe),
    /// filling the event's fields with `args`.
    pub(super) fn new(event: *const Event, args: ProbeArgs, perf: PerfCall) -> Self {
        EventProbe { event, args, perf }
    }

    fn event(&self) -> &Event {
        // SAFETY: the event outlives its probes' registration (see `Send` above).
        unsafe { &*self.event }
    }

    /// What both handlers end with: the hit's environment (`saved`: the words an exit probe's
    /// entry saved), and the records.
    fn record(
        &self,
        regs: &Regs,
        saved: &[u64],
        ret_addr: Option<usize>,
        head: impl Fn(&mut [u8]),
    ) {
        let env = env::HitEnv {
            regs,
            data: saved,
            thread_size: events().map_or(0, |e| e.thread_words),
        };
        self.event()
            .record(&self.args, &env, self.perf, ret_addr, head);
    }
}

/// An exit probe's entry data as words: the arguments saved at entry, one word per slot.
fn saved_words(data: &mut [u8]) -> &mut [u64] {
    // SAFETY: any 8 bytes are a valid `u64`; `align_to_mut` hands out only whole, aligned words.
    let (head, words, _) = unsafe { data.align_to_mut::<u64>() };
    // The entry data is shadow-stack words, so aligned: `head` is empty.
    if head.is_empty() {
        words
    } else {
        &mut []
    }
}

impl FprobeHandler for EntryProbe {
    const EXIT: bool = false;

    fn entry(&self, ip: usize, _ret_ip: usize, regs: &Regs, _data: &mut [u8]) -> bool {
        // A tracepoint's probestub is also called by others who attached it (the kernel's own
        // tracepoint probe events, with NULL): only our attachment's calls are ours.
        if self.event().tracepoint && regs.arg(0) != stub_data() as usize {
            return false;
        }
        self.record(regs, &[], None, |r| put_word(r, 8, ip as u64));
        false
    }
}

impl FprobeHandler for ExitProbe {
    const EXIT: bool = true;

    /// An exit probe whose fields read no function argument has nothing to do at entry: no
    /// entry handler then (the core's hot path skips it).
    fn has_entry(&self) -> bool {
        !self.args.entry_args.is_empty()
    }

    /// One word per argument saved at entry: the probe's own list, which its entry handler
    /// fills and its own programs read (each probe of an event may read other arguments).
    fn entry_data_size(&self) -> usize {
        self.args.entry_args.len() * core::mem::size_of::<u64>()
    }

    fn entry(&self, _ip: usize, _ret_ip: usize, regs: &Regs, data: &mut [u8]) -> bool {
        // Save the arguments the exit probe reads: entry_data_size was sized for them.
        let saved = saved_words(data);
        for (w, &a) in saved.iter_mut().zip(self.args.entry_args.iter()) {
            *w = regs.arg(a.into()) as u64;
        }
        true
    }

    fn exit(&self, ip: usize, ret_ip: usize, regs: &Regs, data: &mut [u8]) {
        self.record(regs, saved_words(data), Some(ret_ip), |r| {
            put_word(r, 8, ip as u64);
            put_word(r, 16, ret_ip as u64);
        });
    }
}
