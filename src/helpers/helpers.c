// SPDX-License-Identifier: GPL-2.0
/*
 * ufgraph's C helpers: only what Rust cannot express against 6.12 (static inlines and macros
 * the kernel crate does not wrap, struct fields and offsets, module parameters, and the
 * EXPORT_SYMBOL_GPL of the C API). One file per job, as rust/helpers/ does, each beside the
 * Rust that uses it (the .c files in src/sys/; the exports in exports.c of src/fgraph/,
 * src/fprobe/ and src/kretprobe/) and saying which Rust files use it and why. They form one
 * translation unit, this one, compiled twice: into ufgraph.ko, and (through helpers_kunit.c,
 * with UFG_KUNIT defined) into ufgraph_kunit.ko, which must not export anything so that both
 * modules can coexist.
 * Declarations: helpers.h (what bindgen reads).
 */
#include <linux/fs.h>
#include <linux/seq_file.h>
#include <linux/uio.h>
#include <linux/ftrace.h>
#include <linux/glob.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/trace_recursion.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>
#include <linux/trace_events.h>
#include <linux/trace_seq.h>

/*
 * ufgraph's ftrace callbacks read arguments, the stack pointer and the return slot from
 * ftrace_regs, and take for granted that ftrace passes them (it does with WITH_ARGS; without,
 * it may pass NULL): no hooked call checks for NULL.
 */
#ifndef CONFIG_DYNAMIC_FTRACE_WITH_ARGS
#error "ufgraph needs CONFIG_DYNAMIC_FTRACE_WITH_ARGS"
#endif
/*
 * The other hard requirements, each a clear build error on a kernel without it (README.md,
 * "Building against your kernel", lists them): the return trampolines exist for these two
 * architectures; the interface files (dynamic_events, stats) live in debugfs; the f: events
 * are trace events, and per-task stacks follow the scheduler's tracepoints.
 */
#if !defined(CONFIG_X86_64) && !defined(CONFIG_ARM64)
#error "ufgraph has return trampolines for x86_64 and arm64 only"
#endif
#ifndef CONFIG_DEBUG_FS
#error "ufgraph needs CONFIG_DEBUG_FS (its dynamic_events and stats files)"
#endif
#if !defined(CONFIG_EVENT_TRACING) || !defined(CONFIG_TRACEPOINTS)
#error "ufgraph needs CONFIG_EVENT_TRACING and CONFIG_TRACEPOINTS"
#endif
#include <linux/dcache.h>
#include <linux/capability.h>
#include <linux/mutex.h>
#include <linux/magic.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/sched/task_stack.h>
#include <linux/rethook.h>
#ifdef CONFIG_X86_64
#include <asm/unwind.h>
#endif
#include <kunit/test.h>


#include "helpers.h"

/* Each subsystem's helpers, beside the Rust files that use them. */
#include "../sys/params.c"
#include "../sys/ktest.c"
#include "../sys/task.c"
#include "../sys/sync.c"
#include "../sys/ftrace.c"
#include "../sys/tracepoint.c"
#include "../sys/trace_event.c"
#include "../sys/fs.c"
#include "../sys/ksym.c"
#include "../sys/hookers.c"
#include "../sys/unwind.c"
#include "../sys/arm64.c"
/* The C API's exports, beside each subsystem's capi.rs. */
#include "../fgraph/exports.c"
#include "../fprobe/exports.c"
#include "../kretprobe/exports.c"
