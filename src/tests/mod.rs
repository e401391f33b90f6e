// SPDX-License-Identifier: GPL-2.0

//! KUnit suites, built into `ufgraph_kunit.ko` only. KUnit runs them when that module is loaded;
//! the in-VM runner collects their KTAP results.

mod btf;
mod counter;
mod fgraph;
mod fprobe;
mod hot;
mod kretprobe;
