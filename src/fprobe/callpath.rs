// SPDX-License-Identifier: GPL-2.0

//! The hot path of fprobe: the shared graph ops' handler ([`GraphSide`]), run at every probed
//! call's entry and return, and the return path's own way for the single exit probe
//! ([`SingleExit`]).

use super::*;

/// Tests only: the calls the single exit probe's own ways took, entries pushed by
/// `GraphSide::entry_first` and returns handled by `SingleExit::ret_first` (the rest went the
/// general way), so that a test can tell which way its calls went.
#[cfg(ufgraph_kunit)]
pub static FIRST_WAYS: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];

impl GraphHandler for GraphSide {
    // Upstream's fprobe, rethook and kretprobe handlers get no call times: no clock reads.
    const WANTS_TIMES: bool = false;
    // Both entry paths reserve before they call a probe's entry handler.
    const RESERVES_FIRST: bool = true;
    const OWN_FTRACE_OPS: bool = true;
    // Entry-only probes never push a frame: stacks come with the first exit probe.
    const STACKS_ON_DEMAND: bool = true;

    #[inline(always)]
    fn pre_entry(
        &self,
        ip: usize,
        parent_ip: usize,
        regs: &Regs,
        np: &NoPreempt,
        enter: impl FnOnce(usize, &Regs, &NoPreempt, usize),
    ) {
        let d = DISPATCH.load(Acquire);
        if d <= IDLE {
            // Not rarer than the single probe, but laid out after it: the single probe's path
            // then runs straight into the guard's release, with no jump back to it.
            core::hint::cold_path();
            if d == 0 {
                // Entry-only probes went since `route` looked.
                return enter(ip, regs, np, 0);
            }
            if d == IDLE {
                // No probe any more (or not yet) since `route` looked.
                return;
            }
            let Some(core) = core_ref() else { return };
            return entry_side_lookup(core, ip, parent_ip, regs, np, enter);
        }
        {
            // Published while its probe is the only one, entry-only (the filter then holds only
            // its functions), and freed a grace period after it is unpublished.
            // SAFETY: a live `Live`: this callback runs with preemption disabled, which holds
            // that grace period off.
            let fp = unsafe { (*(d as *const Live)).fp };
            // SAFETY: `fp` is the registered probe found above.
            unsafe { run_entry_only(fp, ip, parent_ip, regs) };
        }
    }

    #[inline(always)]
    fn route(direct: impl FnOnce(), pre: impl FnOnce()) {
        let d = DISPATCH.load(Relaxed);
        if d == 0 {
            return direct();
        }
        if d == IDLE {
            // Registration time only: tested after the hot ways' own test.
            core::hint::cold_path();
            return;
        }
        pre()
    }

    // The cookie is the function's entry if `pre_entry` found it, else 0.
    #[inline(always)]
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        if e.cookie != 0 {
            // SAFETY: `pre_entry` found this entry under the recursion guard still held: it
            // stays valid until a grace period after it is replaced.
            let ent = unsafe { &*(e.cookie as *const IpEntry) };
            return graph_side_probes(e, ent);
        }
        let single = SINGLE_EXIT.load(Acquire);
        if !single.is_null() {
            // Published while its probe is the only exit probe (and, while no entry-only probe
            // is registered, the filter holds only its functions).
            // SAFETY: freed a grace period after it is cleared, which this preemption-disabled
            // callback holds off.
            return only_exit_probe(e, unsafe { &*single });
        }
        let Some(core) = core_ref() else { return false };
        graph_side_lookup(core, e)
    }

    #[inline(always)]
    fn ret(&self, r: &mut Return<'_>) {
        graph_side_ret(r)
    }

    const ENTRY_FIRST: bool = true;

    // The common case, with no lookup and nothing of the general path: the only exit probe
    // (and no entry-only probe: the route was direct), one frame pushed with its header and
    // data in one step, its entry handler run, the call kept unless it declines. What
    // `only_exit_probe` does through the general path.
    #[inline(always)]
    fn entry_first(&self, e: &FirstEntry<'_>) -> bool {
        let single = SINGLE_EXIT.load(Acquire);
        if single.is_null() {
            return false;
        }
        // SAFETY: see `GraphSide::entry`: freed a grace period after it is cleared, which this
        // preemption-disabled callback holds off.
        let live = unsafe { &*single };
        let fp = live.fp;
        if disabled(fp) {
            return true;
        }
        // The header and the probe's entry data (`live.size`: 1 + its words).
        let Some((p, data)) = e.push_one_step(live.size) else {
            missed(fp);
            return true;
        };
        #[cfg(ufgraph_kunit)]
        FIRST_WAYS[0].fetch_add(1, Relaxed);
        let Some((head, rest)) = data.split_first_mut() else {
            e.decline(p);
            return true;
        };
        // Before the handler: if it declines, the frame goes whole.
        *head = live.hdr;
        // SAFETY: a registered probe (`live` is published), `rest` its data for this call.
        if unsafe { single_entry(fp, e.func, e.ret_ip, e.regs, rest) } {
            e.keep(p);
        } else {
            e.decline(p);
        }
        true
    }

    // No stack, or a full one: the entry-only probes ran (in `pre_entry`).
    fn missed(&self, func: usize) {
        missed_at(func, Some(true));
    }

    fn missed_recursion(&self, func: usize) {
        missed_at(func, None);
    }
}

/// The return path's own way ([`crate::fgraph::graph::OwnReturn`]) for fprobe's single exit
/// probe: its frames, as its entry pushes them (`GraphSide::entry_first`, `only_exit_probe`),
/// matched with two compares, and its exit handler called; if that is the head of an
/// `Fprobe<K>` (the crate root names the kretprobe shim), `K`'s exit is called directly, not
/// through the head's pointer (`api::exit_known`).
pub struct SingleExit<K>(core::marker::PhantomData<K>);

impl<K: api::FprobeHandler> crate::fgraph::graph::OwnReturn for SingleExit<K> {
    // A frame of the only exit probe whose header still names its registration.
    #[inline(always)]
    fn ret_first(r: &FirstReturn<'_>) -> Option<usize> {
        let single = SINGLE_EXIT.load(Acquire);
        if single.is_null() {
            return None;
        }
        // SAFETY: see `GraphSide::entry`; the return path runs with preemption disabled.
        let live = unsafe { &*single };
        r.one_step(&live.one_step(), |c| {
            if c.data.first() != Some(&live.hdr) {
                // Another registration's (the header changed since): `graph_side_ret_all`
                // knows whether that one still exists.
                return false;
            }
            #[cfg(ufgraph_kunit)]
            FIRST_WAYS[1].fetch_add(1, Relaxed);
            let dptr = data_ptr(c.data.get(1..).unwrap_or(&[])).cast_mut();
            let fp = live.fp;
            if disabled(fp) {
                return true;
            }
            // SAFETY: `fp` is registered (`live` is published) and enabled, this is its call's
            // return with the trampoline's registers (`FirstReturn`) and its entry data.
            if !unsafe { api::exit_known::<K>(fp, c.func, c.ret_ip, c.regs, dptr) } {
                // SAFETY: as above.
                if let Some(h) = unsafe { (*fp).exit_handler } {
                    // SAFETY: the caller's exit handler with the documented arguments.
                    unsafe { h(fp, c.func as _, c.ret_ip as _, c.regs.as_ptr(), dptr) };
                }
            }
            true
        })
    }
}

/// [`GraphSide::entry`] with several exit probes: find those on the function. Inline: an
/// out-of-line call taking the `Entry` by reference would make the compiler build the whole
/// `Entry` in memory on every path, the single-probe one included (40 instructions a call).
#[inline(always)]
pub(super) fn graph_side_lookup(core: &Fprobes, e: &mut Entry<'_>) -> bool {
    let Some(ent) = core.ips.lookup(e.func, e.no_preempt()) else {
        return false;
    };
    graph_side_probes(e, ent)
}

/// The exit probes of `ent` (the called function's entry) at a call's entry.
#[inline(always)]
pub(super) fn graph_side_probes(e: &mut Entry<'_>, ent: &IpEntry) -> bool {
    {
        // One reservation for all exit probes here: header + data words each, up to 32 words.
        let mut words = 0;
        for p in ent.probes.iter() {
            let fp = p.fp.load(Acquire);
            // SAFETY: a non-null probe in a published entry is registered (see `missed`).
            if fp.is_null() || unsafe { (*fp).exit_handler.is_none() } || disabled(fp) {
                continue;
            }
            // SAFETY: as above.
            words += 1 + unsafe { (*fp).entry_data_size }.div_ceil(8);
        }
        if words == 0 {
            return false;
        }
        let Some(data) = e.reserve(words.min(32) * 8) else {
            // The probes this call would have run: entry-only probes ran (from the other
            // shared ops), disabled ones would not have.
            for p in ent.probes.iter() {
                let fp = p.fp.load(Acquire);
                // SAFETY: as above.
                if !fp.is_null() && unsafe { (*fp).exit_handler.is_some() } && !disabled(fp) {
                    missed(fp);
                }
            }
            return false;
        };
        let mut off = 0;
        let mut any = false;
        for p in ent.probes.iter() {
            let fp = p.fp.load(Acquire);
            // SAFETY: as above.
            if fp.is_null() || unsafe { (*fp).exit_handler.is_none() } || disabled(fp) {
                continue;
            }
            // SAFETY: as above.
            let w = unsafe { (*fp).entry_data_size }.div_ceil(8);
            if off + 1 + w > data.len() {
                missed(fp);
                continue;
            }
            let dptr = if w > 0 {
                data[off + 1..].as_mut_ptr().cast::<c_void>()
            } else {
                core::ptr::null_mut()
            };
            // SAFETY: as above.
            let handler = unsafe { (*fp).entry_handler };
            let skip = match handler {
                Some(h) => {
                    // SAFETY: the C caller's handler, for its registered probe, with the
                    // documented arguments; `dptr` points to `w` words reserved for this call.
                    (unsafe { h(fp, e.func as _, e.ret_ip as _, e.regs.as_ptr(), dptr) }) != 0
                }
                None => {
                    // Entry data and no entry handler to fill it: the exit handler gets zeros,
                    // not what an earlier call left in these words.
                    zero(data.get_mut(off + 1..off + 1 + w));
                    false
                }
            };
            data[off] = if skip {
                hdr::encode(0, w)
            } else {
                hdr::encode(p.id, w)
            };
            any |= !skip;
            off += 1 + w;
        }
        // Words reserved beyond `off` (probes that turned out disabled) stay zero: a skip marker
        // of size 0 each.
        for w in data[off..].iter_mut() {
            *w = 0;
        }
        any
    }
}

/// Zeroes entry data words (none for an exit-only probe without data, the common case: no
/// call, no slice check out of line).
#[inline(always)]
fn zero(words: Option<&mut [usize]>) {
    if let Some(d) = words.filter(|d| !d.is_empty()) {
        d.fill(0);
    }
}

/// [`GraphSide::ret`].
#[inline(always)]
pub(super) fn graph_side_ret(r: &mut Return<'_>) {
    // The common case first: the only exit probe, its data all the frame holds (the one-step
    // push of `only_exit_probe`): one compare finds it, one more checks the header, which
    // names the registration and the data's size.
    let single = SINGLE_EXIT.load(Acquire);
    if !single.is_null() {
        // SAFETY: see `GraphSide::entry`.
        let live = unsafe { &*single };
        if let Some(data) = r.data_exact(live.size) {
            if data.first() == Some(&live.hdr) {
                let dptr = data_ptr(data.get(1..).unwrap_or(&[])).cast_mut();
                call_exit(live.fp, r.func, r.ret_ip, r.regs, dptr);
                return;
            }
        }
    }
    let Some(core) = core_ref() else { return };
    let Some(data) = r.data() else { return };
    graph_side_ret_all(core, r.func, r.ret_ip, r.regs, r.no_preempt(), data);
}

/// Runs `fp`'s exit handler (a registered probe, found live for this return) unless the probe
/// is disabled.
#[inline(always)]
pub(super) fn call_exit(
    fp: *mut ufgraph_fprobe,
    func: usize,
    ret_ip: usize,
    regs: &Regs,
    dptr: *mut c_void,
) {
    if disabled(fp) {
        return;
    }
    // SAFETY: registered (the caller found it live, and unregistration waits for us).
    if let Some(h) = unsafe { (*fp).exit_handler } {
        // SAFETY: the caller's exit handler with the documented arguments.
        unsafe { h(fp, func as _, ret_ip as _, regs.as_ptr(), dptr) };
    }
}

/// [`graph_side_ret`] for a call with data of several probes, or of a probe that is not the
/// only one. Takes the return's fields, not the `Return`: an out-of-line call given the
/// `Return` by reference would make the caller build it in memory on the fast path too.
#[inline(never)]
pub(super) fn graph_side_ret_all(
    core: &Fprobes,
    func: usize,
    ret_ip: usize,
    regs: &Regs,
    np: &NoPreempt,
    data: &[usize],
) {
    {
        let mut off = 0;
        while off < data.len() {
            let (id, w) = hdr::decode(data[off]);
            let dptr = if w > 0 && off + 1 < data.len() {
                data[off + 1..].as_ptr().cast_mut().cast::<c_void>()
            } else {
                core::ptr::null_mut()
            };
            if let Some(id) = id {
                // A registration that ended since the entry is gone from `regs`; its exit handler
                // must not run (the probe may be freed memory by now, or registered again: a
                // new registration has a new id and never sees this entry's data). The only
                // exit probe, if this is it, needs no lookup.
                let single = SINGLE_EXIT.load(Acquire);
                // SAFETY: see `entry`.
                let l = if !single.is_null() && unsafe { (*single).id } == id {
                    // SAFETY: as above.
                    Some(unsafe { &*single })
                } else {
                    core.regs.lookup(id, np)
                };
                if let Some(l) = l {
                    call_exit(l.fp, func, ret_ip, regs, dptr);
                }
            }
            off += 1 + w;
        }
    }
}

/// The entry of a call when exactly one probe with an exit handler is registered (`live`): no
/// lookup, one probe, its header word made at registration.
#[inline(always)]
pub(super) fn only_exit_probe(e: &mut Entry<'_>, live: &Live) -> bool {
    let fp = live.fp;
    if disabled(fp) {
        return false;
    }
    // The header word and the probe's entry data (`live.size`: 1 + `live.words` words).
    let Some((head, rest)) = e.reserve_sized(live.size).and_then(|d| d.split_first_mut()) else {
        missed(fp);
        return false;
    };
    // SAFETY: as above; `rest` is the probe's data for this call.
    let skip = !unsafe { single_entry(fp, e.func, e.ret_ip, e.regs, rest) };
    *head = if skip {
        hdr::encode(0, rest.len())
    } else {
        live.hdr
    };
    !skip
}

/// The entry handler of `fp`, a probe with an exit handler that has a call's data to itself
/// (`data`, the words after its header): returns whether the call is kept (the handler returned
/// 0, as upstream's convention has it). Without an entry handler the data is zeroed for the exit
/// handler, not left as an earlier call wrote it, and the call is kept.
///
/// # Safety
///
/// `fp` is a registered probe, kept alive by the caller's preemption-disabled section, and
/// `data` the words reserved for this call's entry data (`func` called from `ret_ip`, with
/// `regs`).
#[inline(always)]
unsafe fn single_entry(
    fp: *mut ufgraph_fprobe,
    func: usize,
    ret_ip: usize,
    regs: &Regs,
    data: &mut [usize],
) -> bool {
    // SAFETY: a registered probe (the caller's contract); its handler is read once.
    match unsafe { (*fp).entry_handler } {
        Some(h) => {
            let dptr = if data.is_empty() {
                core::ptr::null_mut()
            } else {
                data.as_mut_ptr().cast::<c_void>()
            };
            // SAFETY: the caller's handler, for its registered probe, with the documented
            // arguments; `dptr` points to the words reserved for this call's data (or is null).
            (unsafe { h(fp, func as _, ret_ip as _, regs.as_ptr(), dptr) }) == 0
        }
        None => {
            zero(Some(data));
            true
        }
    }
}

/// What an exit handler is told of a call's entry data, the words after its header: null for
/// none.
#[inline(always)]
fn data_ptr(data: &[usize]) -> *const c_void {
    if data.is_empty() {
        core::ptr::null()
    } else {
        data.as_ptr().cast()
    }
}

/// Counts a missed call of `func` on its probes with (`Some(true)`) or without an exit handler,
/// or on all of them (`None`): the call found no shadow stack, or a full one (the entry-only
/// probes ran), or the recursion guard refused it (nothing ran). Calls nothing traceable (it
/// may run in a context the recursion guard turned away).
pub(super) fn missed_at(func: usize, exit: Option<bool>) {
    let Some(core) = core_ref() else { return };
    let np = NoPreempt::new();
    if let Some(ent) = core.ips.lookup(func, &np) {
        for p in ent.probes.iter() {
            let fp = p.fp.load(Acquire);
            if !fp.is_null()
                // SAFETY: as in `GraphSide::entry`.
                && exit.is_none_or(|x| unsafe { (*fp).exit_handler.is_some() } == x)
                && !disabled(fp)
            {
                missed(fp);
            }
        }
    }
}

/// [`GraphSide::pre_entry`] while entry-only probes are registered (and not alone): runs those
/// on `ip`, and goes on to the shadow stack with the function's entry (`GraphSide::entry` then
/// needs no second lookup) if a probe on it has an exit handler. Out of line, so that the
/// shortcut paths save no registers they do not use.
#[inline(never)]
pub(super) fn entry_side_lookup(
    core: &Fprobes,
    ip: usize,
    parent_ip: usize,
    regs: &Regs,
    np: &NoPreempt,
    enter: impl FnOnce(usize, &Regs, &NoPreempt, usize),
) {
    let Some(ent) = core.ips.lookup(ip, np) else {
        return;
    };
    let mut exit = false;
    for p in ent.probes.iter() {
        let fp = p.fp.load(Acquire);
        if fp.is_null() {
            continue;
        }
        // SAFETY: as in `GraphSide::entry`.
        if unsafe { (*fp).exit_handler.is_some() } {
            exit = true;
            continue;
        }
        // SAFETY: as above.
        unsafe { run_entry_only(fp, ip, parent_ip, regs) };
    }
    if exit {
        enter(ip, regs, np, ent as *const IpEntry as usize);
    }
}

/// Runs the entry handler of `fp`, an entry-only probe, unless the probe is disabled: no frame,
/// no entry data. Both entry-side paths (the one published probe, the table's list) call it.
///
/// # Safety
///
/// `fp` is a registered probe, kept alive by the caller's preemption-disabled section (probes
/// are freed a grace period after they leave the tables).
#[inline(always)]
unsafe fn run_entry_only(fp: *mut ufgraph_fprobe, ip: usize, parent_ip: usize, regs: &Regs) {
    if disabled(fp) {
        return;
    }
    // SAFETY: `fp` is registered (the caller's contract); its handler is read once.
    if let Some(h) = unsafe { (*fp).entry_handler } {
        // SAFETY: the caller's handler, for its registered probe, with the documented arguments
        // and no entry data.
        unsafe {
            h(
                fp,
                ip as _,
                parent_ip as _,
                regs.as_ptr(),
                core::ptr::null_mut(),
            )
        };
    }
}
