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
#include <linux/context_tracking_state.h>
#include <linux/cpumask.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/trace_recursion.h>
#include <kunit/test.h>

#include "helpers/helpers.h"

/* Constants bindgen cannot evaluate from their macros. */
const size_t UFG_KSYM_SYMBOL_LEN = KSYM_SYMBOL_LEN;
/* The size of the kernel's per-CPU arrays (__per_cpu_offset, __cpu_online_mask's bits). */
const size_t UFG_NR_CPUS = NR_CPUS;
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

/*
 * The hot path's primitives, inlined in Rust (src/fgraph/arch/): where the current task, the CPU
 * number and the preempt count live, the task's ftrace recursion bits, and what says whether
 * RCU watches this CPU.
 */
const unsigned long UFG_TASK_TRACE_RECURSION = offsetof(struct task_struct, trace_recursion);
const unsigned long UFG_TRACE_FTRACE_START = TRACE_FTRACE_START;
const unsigned long UFG_TRACE_CTX_NORMAL = TRACE_CTX_NORMAL;
const unsigned long UFG_TRACE_CTX_TRANSITION = TRACE_CTX_TRANSITION;
const unsigned long UFG_NMI_MASK = NMI_MASK;
const unsigned long UFG_HARDIRQ_MASK = HARDIRQ_MASK;
const unsigned long UFG_SOFTIRQ_OFFSET = SOFTIRQ_OFFSET;
#ifdef CONFIG_CONTEXT_TRACKING_IDLE
const unsigned long UFG_CT_STATE = offsetof(struct context_tracking, state);
const unsigned long UFG_CT_RCU_WATCHING = CT_RCU_WATCHING;
#endif
#ifdef CONFIG_X86_64
#define UFG_FREGS(f) offsetof(struct __arch_ftrace_regs, regs.f)
const unsigned long UFG_FREGS_IP = UFG_FREGS(ip), UFG_FREGS_SP = UFG_FREGS(sp), UFG_FREGS_AX = UFG_FREGS(ax),
	UFG_FREGS_DI = UFG_FREGS(di), UFG_FREGS_SI = UFG_FREGS(si), UFG_FREGS_DX = UFG_FREGS(dx),
	UFG_FREGS_CX = UFG_FREGS(cx), UFG_FREGS_R8 = UFG_FREGS(r8), UFG_FREGS_R9 = UFG_FREGS(r9),
	UFG_FREGS_BP = UFG_FREGS(bp);
/* ftrace_regs is a pt_regs at offset 0 (sys::regs::exit_pt_regs_in_place checks it). */
const unsigned long UFG_FREGS_PT_REGS = offsetof(struct __arch_ftrace_regs, regs),
	UFG_FREGS_SIZE = sizeof(struct __arch_ftrace_regs);
const unsigned long UFG_KERNEL_CS = __KERNEL_CS, UFG_EFLAGS_FIXED = X86_EFLAGS_FIXED;
const unsigned long UFG_PCPU_CURRENT = offsetof(struct pcpu_hot, current_task);
const unsigned long UFG_PCPU_PREEMPT = offsetof(struct pcpu_hot, preempt_count);
const unsigned long UFG_PCPU_CPU = offsetof(struct pcpu_hot, cpu_number);
const unsigned long UFG_PREEMPT_NEED_RESCHED = PREEMPT_NEED_RESCHED;
#endif
#ifdef CONFIG_ARM64
const unsigned long UFG_FREGS_X0 = offsetof(struct __arch_ftrace_regs, regs),
	UFG_FREGS_SP = offsetof(struct __arch_ftrace_regs, sp),
	UFG_FREGS_PC = offsetof(struct __arch_ftrace_regs, pc),
	UFG_FREGS_LR = offsetof(struct __arch_ftrace_regs, lr);
/*
 * Teardown's view of stacks (src/fgraph/arch/arm64.rs): ftrace_caller puts a traced function's entry
 * ftrace_regs this far below the stack pointer it was entered with (the registers and two
 * frame records, arch/arm64/kernel/entry-ftrace.S), and the frame record an exception builds
 * inside its pt_regs.
 */
const unsigned long UFG_ARM64_FTRACE_FRAME = sizeof(struct __arch_ftrace_regs) + 32;
const unsigned long UFG_PT_REGS_STACKFRAME = offsetof(struct pt_regs, stackframe),
	UFG_PT_REGS_PC = offsetof(struct pt_regs, pc), UFG_PT_REGS_SP = offsetof(struct pt_regs, sp);
const unsigned long UFG_TASK_TI_PREEMPT = offsetof(struct task_struct, thread_info.preempt_count);
const unsigned long UFG_TASK_TI_CPU = offsetof(struct task_struct, thread_info.cpu);
#endif
