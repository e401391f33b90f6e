// SPDX-License-Identifier: GPL-2.0

//! ufgraph: unified function-graph return hooking for a running kernel.
//!
//! One per-task shadow stack serves function-graph users, fprobes and kretprobe-style users, as
//! upstream Linux does from v6.14 on, brought to 6.12 as a loadable module. See
//! Documentation/ for the design.
//!
//! This file is the crate root of two modules: `ufgraph.ko` and, built with
//! `--cfg ufgraph_kunit` through the `ufgraph_kunit.rs` symlink, `ufgraph_kunit.ko`, which adds
//! the KUnit suites under `tests/`.

#![allow(unexpected_cfgs)]
// The kernel's .clippy.toml sets the MSRV of 6.12 (1.78); ufgraph needs a newer rustc (Debian's
// rustc-web, 1.96; README.md) and uses what it has (`is_multiple_of`, `is_none_or`...).
#![allow(clippy::incompatible_msrv)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

pub mod bindings;
pub mod demo;
pub mod events;
pub mod fgraph;
pub mod fprobe;
pub mod kretprobe;
pub mod sys;
#[cfg(ufgraph_kunit)]
mod tests;

use core::fmt::{self, Write};
use core::sync::atomic::Ordering::Relaxed;
use demo::counter::{Counter, Hits};
use demo::retcount::{self, RetCounter, RetHits};
use fgraph::graph::Graph;
use fgraph::GraphOps;
use fprobe::capi::ModuleWatch;
use fprobe::Fprobes;
use sys::debugfs::{Dir, SeqFile};

#[cfg(not(ufgraph_kunit))]
module! {
    type: UfGraph,
    name: "ufgraph",
    author: "ufgraph developers",
    description: "Unified return hooking: fgraph, fprobe and kretprobe users on one shadow stack",
    license: "GPL",
}

#[cfg(ufgraph_kunit)]
module! {
    type: UfGraph,
    name: "ufgraph_kunit",
    author: "ufgraph developers",
    description: "ufgraph with its KUnit suites",
    license: "GPL",
}

/// The return trampoline's handler: the graph core's return path, instantiated here, where every
/// subsystem's handler types are known. fprobe (with the kretprobe shim on it) is the core's main
/// user: its handler's return callback is inlined, not called through the slot, and so are the C
/// API's ops'; fprobe's single exit probe has a way of its own, tried first, in which the
/// kretprobe shim's exit handler (`Fprobe<Shim>`, which carries every kretprobe and rethook user)
/// is a direct call.
///
/// # Safety
///
/// Only from the trampoline (see [`fgraph::graph::return_handler`]).
#[no_mangle]
pub unsafe extern "C" fn ufgraph_return_handler(fregs: *mut sys::ftrace::RawFregs) -> usize {
    // SAFETY: the caller's contract.
    unsafe {
        fgraph::graph::return_handler::<
            fprobe::GraphSide,
            fgraph::capi::COps,
            fprobe::SingleExit<kretprobe::Shim>,
        >(fregs)
    }
}

/// What the debugfs files show.
pub struct State {
    /// Entry counts of the `func=` counter.
    pub hits: Hits,
    /// Entry and return counts of the `graph=` counter.
    pub ret: RetHits,
}

impl State {
    /// A zeroed state, built in place: it is several KiB (per-function counters), far too big to
    /// pass through a kernel stack (16 KiB in all, shared with everything our init calls).
    pub fn new_arc() -> Result<Arc<Self>> {
        let mut u = kernel::sync::UniqueArc::<Self>::new_uninit(GFP_KERNEL)?;
        // SAFETY: all-zero is a valid `State`: its counters are arrays of zeroed atomics.
        unsafe { core::ptr::write_bytes(u.as_mut_ptr(), 0, 1) };
        // SAFETY: initialised just above.
        Ok(unsafe { u.assume_init() }.into())
    }
}

struct UfGraph {
    // Dropped in this order: the module's own users, then the files showing their counts, then
    // the graph core (which they registered with).
    _counter: Option<Counter>,
    _retcount: Option<GraphOps<RetCounter>>,
    _debugfs: Dir<State>,
    _events: Option<Pin<KBox<events::Events>>>,
    _modwatch: Pin<KBox<ModuleWatch>>,
    _rethooks: kretprobe::Rethooks,
    _fprobes: Pin<KBox<Fprobes>>,
    _graph: Pin<KBox<Graph>>,
}

pub(crate) fn param_func() -> Option<&'static CStr> {
    sys::params::func()
}

pub(crate) fn param_graph() -> Option<&'static CStr> {
    sys::params::graph()
}

/// Starts one of the module's own users from its parameter, if given, saying what happened.
fn start_user<T>(
    param: &str,
    what: &str,
    glob: Option<&'static CStr>,
    start: impl FnOnce(&CStr) -> Result<T>,
) -> Result<Option<T>> {
    let Some(glob) = glob else { return Ok(None) };
    match start(glob) {
        Ok(u) => {
            pr_info!("{} {}\n", what, glob);
            Ok(Some(u))
        }
        Err(e) => {
            pr_err!("{}={}: cannot hook it ({:?}){}\n", param, glob, e, hint(e));
            Err(e)
        }
    }
}

/// What to add to a "cannot hook it" message.
fn hint(e: Error) -> &'static str {
    if e == EINVAL || e == ENOENT {
        "; is it a traceable function?"
    } else {
        ""
    }
}

/// The `frames` file: every task with hooked frames on its shadow stack, innermost first.
fn show_frames(m: &mut SeqFile) -> fmt::Result {
    let Some(g) = fgraph::graph::graph() else {
        return Ok(());
    };
    let mut r = Ok(());
    sys::task::for_each_thread(|t| {
        if r.is_err() {
            return;
        }
        let np = sys::sync::NoPreempt::new();
        let Some(stack) = g.tasks().of_task(t, &np) else {
            return;
        };
        if stack.depth() == 0 {
            return;
        }
        r = (|| {
            // SAFETY: the walk runs under rcu_read_lock(): `t` is a live task.
            let (pid, comm) = unsafe { (t.pid(), t.comm()) };
            let len = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
            let comm = core::str::from_utf8(&comm[..len]).unwrap_or("?");
            write!(m, "{} {} depth {}:", pid, comm, stack.depth())?;
            write_frames(m, stack)
        })();
    });
    r?;
    // Idle tasks are not on the task list: one line per CPU whose idle task has frames.
    let mut r = Ok(());
    g.tasks().for_each_idle_stack(|cpu, stack| {
        if r.is_ok() && stack.depth() > 0 {
            r = write!(m, "0 idle/{} depth {}:", cpu, stack.depth())
                .and_then(|()| write_frames(m, stack));
        }
    });
    r
}

fn write_frames(m: &mut SeqFile, stack: &fgraph::tasks::Stack) -> fmt::Result {
    for f in stack.frames() {
        m.write_str(" ")?;
        m.symbol(f.func)?;
    }
    m.write_str("\n")
}

/// The `stats` file: the fgraph core's state and counters.
fn show_stats(m: &mut SeqFile) -> fmt::Result {
    let Some(g) = fgraph::graph::graph() else {
        return Ok(());
    };
    let t = g.tasks();
    writeln!(m, "registered_ops {}", g.registered())?;
    if let Some(f) = fprobe::fprobes() {
        let (ips, probes) = f.counts();
        writeln!(m, "fprobes {}", probes)?;
        writeln!(m, "fprobe_functions {}", ips)?;
    }
    if let Some((events, probes, armed, dropped)) = events::counts() {
        writeln!(m, "events {}", events)?;
        writeln!(m, "event_probes {}", probes)?;
        writeln!(m, "event_probes_registered {}", armed)?;
        writeln!(m, "event_records_refused {}", dropped)?;
    }
    if let Some(n) = events::stubs_attached() {
        writeln!(m, "event_tracepoint_stubs {}", n)?;
    }
    writeln!(m, "live_frames {}", t.frames_now())?;
    writeln!(m, "return_slots {}", fgraph::arch::return_slots())?;
    if let Some(f) = fprobe::fprobes() {
        writeln!(m, "fprobe_missed {}", f.missed())?;
    }
    // One reading for both lines: a fork between two readings would make them disagree.
    let stacks = t.count();
    writeln!(m, "tasks_with_stack {}", stacks)?;
    writeln!(
        m,
        "shadow_stack_bytes {}",
        stacks * core::mem::size_of::<fgraph::tasks::TaskStack>()
    )?;
    writeln!(m, "hub_functions {}", g.hub_functions())?;
    writeln!(m, "skipped_frames {}", g.stats.skipped_frames.load(Relaxed))?;
    writeln!(m, "reserve_failed {}", g.stats.reserve_failed.load(Relaxed))?;
    writeln!(m, "fork_no_stack {}", t.stats.fork_failed.load(Relaxed))?;
    writeln!(m, "fork_deferred {}", t.stats.fork_deferred.load(Relaxed))?;
    writeln!(m, "dead_frames {}", t.stats.dead_frames.load(Relaxed))?;
    writeln!(m, "table_rebuilds {}", t.stats.rebuilds.load(Relaxed))?;
    // One line per registered graph user: its index and what it missed.
    g.for_each_slot(|idx, s| {
        writeln!(
            m,
            "ops {} missed_nostack {} missed_overrun {} missed_recursion {}",
            idx,
            s.missed_nostack.load(Relaxed),
            s.missed_overrun.load(Relaxed),
            s.missed_recursion.load(Relaxed)
        )
    })
}

/// The fprobe events, if the kernel lets us make them (they need `event_mutex` from kallsyms).
/// Without them the rest of ufgraph works; `dynamic_events` then fails with `ENODEV`.
fn start_events(module: &'static ThisModule) -> Option<Pin<KBox<events::Events>>> {
    let r = (|| -> Result<Pin<KBox<events::Events>>> {
        sys::trace_event::check_layout()?;
        sys::trace_event::EventMutex::resolve()?;
        let ev = KBox::pin_init(events::Events::new(module), GFP_KERNEL)?;
        ev.as_ref().publish()?;
        Ok(ev)
    })();
    match r {
        Ok(ev) => Some(ev),
        Err(e) => {
            pr_err!(
                "fprobe events unavailable ({:?}); everything else works\n",
                e
            );
            None
        }
    }
}

impl kernel::Module for UfGraph {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // Whatever failed has been undone by the drops on the way out: say so, with the error
        // (test 51 counts these lines).
        Self::init_parts(module)
            .inspect_err(|e| pr_err!("init failed ({:?}); nothing is left behind\n", e))
    }
}

impl UfGraph {
    fn init_parts(module: &'static ThisModule) -> Result<Self> {
        let graph = KBox::pin_init(Graph::new(module), GFP_KERNEL)?;
        graph.as_ref().publish()?;
        let fprobes = KBox::pin_init(Fprobes::new(), GFP_KERNEL)?;
        fprobes.as_ref().publish()?;
        let modwatch = ModuleWatch::new()?;
        let rethooks = kretprobe::Rethooks::new()?;
        rethooks.publish()?;

        // Everything that can fail, and everything the files reach (the events through
        // `dynamic_events`, `error_log`, `README`, `stats`), before the files. The files come
        // last: a file opened during init and still open when init fails is released after the
        // module is gone (no module reference holds a failing init back), and its removal must
        // come before what its operations reach (init's locals drop in reverse order).
        let events = start_events(module);
        let state = State::new_arc()?;
        let counter = start_user("func", "counting calls of", param_func(), |glob| {
            Counter::start(glob, state.clone())
        })?;
        let retcount = start_user(
            "graph",
            "counting entries and returns of",
            param_graph(),
            |glob| retcount::start(glob, state.clone()),
        )?;
        let name = if cfg!(ufgraph_kunit) {
            c_str!("ufgraph_kunit")
        } else {
            c_str!("ufgraph")
        };
        let mut debugfs = Dir::new(name, state)?;
        debugfs.add_file(c_str!("counts"), module, |s, m| s.hits.show(m))?;
        debugfs.add_file(c_str!("graph"), module, |s, m| s.ret.show(m))?;
        debugfs.add_file(c_str!("stats"), module, |_, m| show_stats(m))?;
        debugfs.add_file(c_str!("frames"), module, |_, m| show_frames(m))?;
        debugfs.add_rw_file(
            c_str!("dynamic_events"),
            module,
            |_, m| events::files::show(m),
            |_, t| events::files::write(t),
            |_| events::files::truncate(),
        )?;
        debugfs.add_rw_file(
            c_str!("error_log"),
            module,
            |_, m| events::files::show_errors(m),
            |_, t| events::files::write_errors(t),
            |_| events::files::truncate_errors(),
        )?;
        debugfs.add_file(c_str!("README"), module, |_, m| {
            events::files::show_readme(m)
        })?;

        Ok(Self {
            _counter: counter,
            _retcount: retcount,
            _debugfs: debugfs,
            _events: events,
            _modwatch: modwatch,
            _rethooks: rethooks,
            _fprobes: fprobes,
            _graph: graph,
        })
    }
}
