// SPDX-License-Identifier: GPL-2.0

//! ufgraph's host-testable files, built on the host for `cargo test` and the fuzzers.
//!
//! The module's tree is one folder per subsystem (`src/sys`, `src/fgraph`, `src/fprobe`,
//! `src/events`, `src/demo`); the files listed here are those of its files that have no kernel
//! dependency (only `core`; their tests may use `std`). Each is included by path, at the same
//! place in the module tree as in the module (`crate::events::probedef` here and there), so that
//! their `crate::` paths resolve in both builds and what `cargo test` checks is exactly what runs
//! in the kernel. A file listed here says so in its first comment ("Host-tested"); it must not
//! use `kernel::`, `bindings::` or another module file not listed here, or this crate stops
//! building.
//!
//! ```text
//!   src/sys/btf/reader/              the BTF reader
//!   src/sys/slice.rs                 slice helpers without panic paths objtool does not know
//!   src/sys/ksym/{funclist,name}.rs  lines of available_filter_functions_addrs and kallsyms
//!   src/sys/rcutable/table.rs        the open-addressing table under the RCU task table
//!   src/sys/hookers/stacks.rs        function_graph's and rethook's saved return addresses
//!   src/fgraph/shadow/               the per-task shadow stack's words and frames
//!   src/fgraph/lru.rs                the graph ops' index allocator
//!   src/fgraph/graph/handback.rs     teardown's hand-back plan for a return slot
//!   src/fprobe/hdr.rs                the header word before each fprobe's entry data
//!   src/events/probedef/             the dynamic_events definition parser and fetch compiler
//!   src/events/program/              the fetch programs: running them at a hit, rendering records
//!   src/demo/ipcount.rs              lock-free hit counts per ip (the demo counters)
//! ```

#[path = "../../src/sys"]
pub mod sys {
    pub mod btf {
        pub mod reader;
    }
    pub mod hookers {
        pub mod stacks;
    }
    pub mod ksym {
        pub mod funclist;
        pub mod name;
    }
    pub mod rcutable {
        pub mod table;
    }
    pub mod slice;
}

#[path = "../../src/fgraph"]
pub mod fgraph {
    pub mod graph {
        pub mod handback;
    }
    pub mod lru;
    pub mod shadow;
}

#[path = "../../src/fprobe"]
pub mod fprobe {
    pub mod hdr;
}

#[path = "../../src/events"]
pub mod events {
    pub mod probedef;
    pub mod program;
}

#[path = "../../src/demo"]
pub mod demo {
    pub mod ipcount;
}
