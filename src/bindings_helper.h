/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What bindgen sees when it generates src/bindings_generated.rs: the kernel
 * headers ufgraph calls into, and the prototypes of our C glue.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/stacktrace.h>
#include <linux/stop_machine.h>
#include <linux/trace_clock.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>
#include <linux/kallsyms.h>
#include <linux/seq_file.h>
#include <linux/trace_events.h>
#include <linux/trace_seq.h>
#include <linux/uaccess.h>
#include <kunit/test.h>

#include "glue.h"

/* Constants bindgen cannot evaluate from their macros. */
const size_t UFG_KSYM_SYMBOL_LEN = KSYM_SYMBOL_LEN;
const unsigned long UFG_TRACE_FUNCTION_TYPE = (unsigned long)TRACE_FUNCTION_TYPE;
const int UFG_FILTER_OTHER = FILTER_OTHER;
const int UFG_TRACE_EVENT_FL_FPROBE = TRACE_EVENT_FL_FPROBE;
/*
 * The function_graph tracer's frame (struct ftrace_ret_stack, whose size depends on the
 * configuration) in words, where its saved return address and its return slot are, and its
 * shadow stack's size in words (kernel/trace/fgraph.c: SHADOW_STACK_SIZE is PAGE_SIZE).
 */
#ifdef CONFIG_FUNCTION_GRAPH_TRACER
const unsigned long UFG_FGRAPH_FRAME_WORDS = DIV_ROUND_UP(sizeof(struct ftrace_ret_stack), sizeof(long));
const unsigned long UFG_FGRAPH_RET_WORD = offsetof(struct ftrace_ret_stack, ret) / sizeof(long);
const unsigned long UFG_FGRAPH_RETP_WORD = offsetof(struct ftrace_ret_stack, retp) / sizeof(long);
#else
const unsigned long UFG_FGRAPH_FRAME_WORDS = 0;
const unsigned long UFG_FGRAPH_RET_WORD = 0;
const unsigned long UFG_FGRAPH_RETP_WORD = 0;
#endif
const unsigned long UFG_FGRAPH_STACK_WORDS = PAGE_SIZE / sizeof(long);
/* enum trace_reg has its perf members only with CONFIG_PERF_EVENTS. */
#ifdef CONFIG_PERF_EVENTS
const long UFG_TRACE_REG_PERF_REGISTER = TRACE_REG_PERF_REGISTER;
const long UFG_TRACE_REG_PERF_UNREGISTER = TRACE_REG_PERF_UNREGISTER;
#else
const long UFG_TRACE_REG_PERF_REGISTER = -1;
const long UFG_TRACE_REG_PERF_UNREGISTER = -1;
#endif
#include <ufgraph/fgraph.h>
#define UFGRAPH_NO_UPSTREAM_NAMES
#include <ufgraph/fprobe.h>
#include <ufgraph/kretprobe.h>
#include <ufgraph/rethook.h>
