// SPDX-License-Identifier: GPL-2.0

//! Every callback that joins one frame on the hub: keeping, declining with and without a
//! reservation, hooking with the rethook API from inside the entry.

use super::*;

/// What a [`Joiner`] does at an entry: set once its place in the hub's call order (lowest index
/// first) is known.
const J_KEEP: usize = 0;
/// Reserves 24 bytes of junk, then declines: the reservation must go with it.
const J_RESERVE_DECLINE: usize = 1;
/// Hooks the call being entered with the rethook API (which must be refused: the frame is
/// being built), then keeps it with data.
const J_HOOK: usize = 2;
/// Declines without reserving.
const J_DECLINE: usize = 3;

/// A hub (or own-ops) ops whose entry does what `mode` says, on `ufg_test_add`: keeping
/// callbacks store the expected return value (tagged) and check it at the return; entry and
/// return depths are recorded, and the data `peek` (an ops index) reserved in this frame must
/// be gone by the time this entry runs.
struct Joiner {
    mode: AtomicUsize,
    peek: AtomicUsize,
    tag: usize,
    entries: AtomicUsize,
    returns: AtomicUsize,
    bad: AtomicUsize,
    depth: AtomicUsize,
    ret_depth: AtomicUsize,
    hooked: AtomicUsize,
    /// When its last entry ran, in [`JOIN_SEQ`]'s order.
    seq: AtomicUsize,
}

/// The order entries ran in, across every [`Joiner`].
static JOIN_SEQ: AtomicUsize = AtomicUsize::new(0);

impl Joiner {
    fn new(tag: usize) -> Self {
        Self {
            mode: AtomicUsize::new(J_KEEP),
            peek: AtomicUsize::new(usize::MAX),
            tag,
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            bad: AtomicUsize::new(0),
            depth: AtomicUsize::new(0),
            ret_depth: AtomicUsize::new(0),
            hooked: AtomicUsize::new(0),
            seq: AtomicUsize::new(0),
        }
    }
}

/// Counts the returns of [`JRH`] (none expected: every hook is refused).
static JRH_RETURNS: AtomicUsize = AtomicUsize::new(0);

/// A callback C calls.
///
/// # Safety
///
/// Called by the rethook shim only, for [`JRH`].
unsafe extern "C" fn jrh_ret(
    _rh: *mut bindings::ufgraph_rethook,
    _data: *mut core::ffi::c_void,
    _ret_addr: kernel::ffi::c_ulong,
    _fregs: *mut bindings::ftrace_regs,
) {
    JRH_RETURNS.fetch_add(1, Relaxed);
}

static mut JRH: bindings::ufgraph_rethook = bindings::ufgraph_rethook {
    handler: Some(jrh_ret),
    data_size: 8,
    nmissed: 0,
    ufgraph_private: core::ptr::null_mut(),
};

fn jrh() -> *mut bindings::ufgraph_rethook {
    core::ptr::addr_of_mut!(JRH)
}

impl GraphHandler for Joiner {
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        self.entries.fetch_add(1, Relaxed);
        self.seq.store(JOIN_SEQ.fetch_add(1, Relaxed), Relaxed);
        self.depth.store(e.depth(), Relaxed);
        let peek = self.peek.load(Relaxed);
        if peek != usize::MAX {
            if let Some(g) = graph() {
                if g.retrieve_data(peek, 0).is_some() {
                    self.bad.fetch_add(1, Relaxed);
                }
            }
        }
        let sum = e.regs.arg(0).wrapping_add(e.regs.arg(1)) as u32 as usize;
        match self.mode.load(Relaxed) {
            J_RESERVE_DECLINE => {
                if let Some(w) = e.reserve(24) {
                    w.fill(usize::MAX);
                }
                false
            }
            J_DECLINE => false,
            m => {
                if m == J_HOOK {
                    // SAFETY: the entry registers of the call being entered, preemption
                    // disabled; JRH is registered while this mode is set.
                    let d = unsafe { crate::kretprobe::rethook_hook(jrh(), e.regs.as_ptr()) };
                    if !d.is_null() {
                        self.hooked.fetch_add(1, Relaxed);
                    }
                }
                match e.reserve(16) {
                    Some(w) => {
                        w[0] = sum ^ self.tag;
                        w[1] = !self.tag;
                    }
                    None => {
                        self.bad.fetch_add(1, Relaxed);
                    }
                }
                true
            }
        }
    }

    fn ret(&self, r: &mut Return<'_>) {
        self.returns.fetch_add(1, Relaxed);
        self.ret_depth.store(r.depth(), Relaxed);
        let ok = matches!(r.data(), Some(w) if w.len() == 2
            && w[0] ^ self.tag == r.retval() as u32 as usize
            && w[1] == !self.tag);
        if !ok {
            self.bad.fetch_add(1, Relaxed);
        }
    }
}

/// Several hub ops on one call, on one frame pushed or joined once for them all (`hub_enter`,
/// `join_all`), with
/// an own-ftrace_ops ops on the same call: a callback that reserves and declines loses its data
/// before the next one runs, one that declines without data changes nothing, a rethook made
/// from inside a joining callback for the same call is refused (the frame is being built from
/// the first joiner to the last), every keeper gets its own data back, every callback sees the
/// same depth at entry and return, and the own ops joins the same frame (same depth); then
/// again with the hub's first ops declining the frame the own ops pushed.
pub(super) fn hub_join_all_callbacks(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    JRH_RETURNS.store(0, Relaxed);
    // SAFETY: JRH is a static, valid for ever; unregistered below (also on failure).
    let r = unsafe { crate::kretprobe::rethook_register(jrh()) };
    t.check_ok(r, "rethook_register")?;
    let _undo = kernel::types::ScopeGuard::new(|| crate::kretprobe::rethook_unregister(jrh()));
    let mut hub = KVec::new();
    for tag in 1..=5 {
        let mut o = t.check_ok(GraphOps::new(Joiner::new(tag)), "GraphOps::new")?;
        t.check_ok(o.set_filter_ips(&[add_ip], false, false), "set_filter_ips")?;
        t.check_ok(hub.push(o, GFP_KERNEL).map_err(Into::into), "push")?;
    }
    let mut own = t.check_ok(GraphOps::new(Joiner::new(6)), "GraphOps::new")?;
    t.check_ok(own.set_filter(c_str!("ufg_test_add")), "set_filter")?;
    for o in hub.iter_mut() {
        t.check_ok(o.register(), "register")?;
    }
    t.check_ok(own.register(), "register own")?;
    // The hub calls its ops lowest index first (indexes come in LRU order).
    let mut order = [0usize, 1, 2, 3, 4];
    order.sort_unstable_by_key(|&i| hub[i].idx());
    // Round 2: the hub's first ops joins the own ops' frame and declines; the next one must
    // still keep the call on that frame: the hub marks its whole mask seen on the frame it
    // joins before any callback, and those marks say nothing of another call. Taken for a
    // tail call's, the frame would be left for a second one (depth 2).
    let rounds = [
        ([J_KEEP, J_RESERVE_DECLINE, J_HOOK, J_DECLINE, J_KEEP], 1, 4),
        ([J_DECLINE, J_KEEP, J_RESERVE_DECLINE, J_KEEP, J_KEEP], 2, 3),
    ];
    const N: usize = 20;
    for (round, (modes, decliner_at, peeker_at)) in rounds.iter().enumerate() {
        for (&i, &m) in order.iter().zip(modes.iter()) {
            let h = hub[i].handler();
            h.mode.store(m, Relaxed);
            h.peek.store(usize::MAX, Relaxed);
        }
        for o in Iterator::chain(hub.iter(), core::iter::once(&own)) {
            let h = o.handler();
            for c in [
                &h.entries,
                &h.returns,
                &h.bad,
                &h.depth,
                &h.ret_depth,
                &h.hooked,
            ] {
                c.store(0, Relaxed);
            }
        }
        // A keeper after the reserving decliner looks for the data it left.
        let decliner = hub[order[*decliner_at]].idx().unwrap_or(usize::MAX);
        hub[order[*peeker_at]]
            .handler()
            .peek
            .store(decliner, Relaxed);
        // SAFETY: JRH is a static, valid for ever.
        let missed_before = unsafe { (*jrh()).nmissed };
        for i in 0..N as i32 {
            kcheck_eq!(t, add(i, 2 * i), 3 * i);
        }
        // SAFETY: JRH is registered.
        let jrh_missed = unsafe { (*jrh()).nmissed }.wrapping_sub(missed_before);
        let depth = own.handler().depth.load(Relaxed);
        for (n, o) in Iterator::chain(hub.iter(), core::iter::once(&own)).enumerate() {
            let h = o.handler();
            let keeps = !matches!(h.mode.load(Relaxed), J_RESERVE_DECLINE | J_DECLINE);
            let want_ret = if keeps { N } else { 0 };
            kcheck!(
                t,
                h.entries.load(Relaxed) == N
                    && h.returns.load(Relaxed) == want_ret
                    && h.bad.load(Relaxed) == 0
                    && h.hooked.load(Relaxed) == 0
                    && h.depth.load(Relaxed) == depth
                    && (!keeps || h.ret_depth.load(Relaxed) == depth),
                "round {} ops {} (mode {}): {} entries {} returns {} bad {} hooked, depth {} ret depth {}; want {} {} 0 0, depth {}",
                round,
                n,
                h.mode.load(Relaxed),
                h.entries.load(Relaxed),
                h.returns.load(Relaxed),
                h.bad.load(Relaxed),
                h.hooked.load(Relaxed),
                h.depth.load(Relaxed),
                h.ret_depth.load(Relaxed),
                N,
                want_ret,
                depth
            );
        }
        kcheck_eq!(t, depth, 1);
        // The own ops (registered after the hub's ftrace_ops: ftrace calls the newest first)
        // pushed the frame the hub's ops joined: what round 2 is about.
        let own_seq = own.handler().seq.load(Relaxed);
        kcheck!(
            t,
            hub.iter().all(|o| o.handler().seq.load(Relaxed) > own_seq)
        );
        // Every hook from inside the joining callback was refused and counted, none returned.
        let hooks = if modes.contains(&J_HOOK) { N } else { 0 };
        kcheck_eq!(t, (jrh_missed, JRH_RETURNS.load(Relaxed)), (hooks, 0));
    }
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    kcheck_eq!(t, g.tasks().frames_now(), 0);
    for o in hub.iter_mut() {
        t.check_ok(o.unregister(), "unregister")?;
    }
    t.check_ok(own.unregister(), "unregister own")?;
    drop(_undo);
    core_is_idle(t)
}
