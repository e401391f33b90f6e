// SPDX-License-Identifier: GPL-2.0

//! KUnit suites, built into `ufgraph_kunit.ko` only. KUnit runs them when that module is loaded;
//! the in-VM runner collects their KTAP results.

mod btf;
mod counter;
mod fgraph;
mod fprobe;
mod hot;
mod kretprobe;
mod typed;

/// Whether ftrace may call ufgraph's ftrace_ops through its list function, whose own recursion
/// guard then refuses a nested call before ufgraph's guard can count it: on arm64 without
/// `DYNAMIC_FTRACE_WITH_CALL_OPS` (kCFI turns it off in 6.12), every call site goes through
/// `ftrace_caller` and, whenever more than one ftrace_ops is registered anywhere, through
/// `ftrace_ops_list_func`. (x86_64 gives each ftrace_ops call site its own trampoline.)
const LIST_FUNC_GUARDS: bool = cfg!(all(CONFIG_ARM64, not(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS)));
