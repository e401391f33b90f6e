/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C helpers (one translation unit, src/helpers/helpers.c, which includes one .c file per
 * job, each beside the Rust that uses it): only what Rust cannot express in 6.12 -- static
 * inline helpers the kernel crate does not wrap, struct fields and offsets, module parameters,
 * and EXPORT_SYMBOL_GPL of our Rust functions to C modules. bindgen reads this header
 * (src/bindings_helper.h).
 */
#ifndef UFGRAPH_HELPERS_H
#define UFGRAPH_HELPERS_H

#include <linux/types.h>

struct ftrace_regs;
struct kunit;
struct module;
struct task_struct;
struct tracepoint;
struct rcu_head;
struct work_struct;
typedef struct spinlock spinlock_t;
typedef struct raw_spinlock raw_spinlock_t;

/* Module parameters (module_param cannot be declared from Rust in 6.12). */
const char *ufg_param_func(void);
const char *ufg_param_graph(void);

/* Stack arguments from struct ftrace_regs (the register ones are read inline: arch::hot::fregs). */
unsigned long ufg_fregs_arg(const struct ftrace_regs *fregs, unsigned int n);

/* KUnit: kunit_set_failure() and kunit_err() are inline/macros. */
void ufg_kunit_fail(struct kunit *test, const char *msg);
void ufg_kunit_info(struct kunit *test, const char *msg);
void ufg_kunit_skip(struct kunit *test, const char *msg);

/* Tasks and CPUs: `current`, for_each_process_thread() and friends are macros. */
struct task_struct *ufg_current(void);
bool ufg_is_idle_task(const struct task_struct *t);
unsigned int ufg_task_cpu(const struct task_struct *t);
void ufg_for_each_thread(void (*fn)(struct task_struct *t, void *data), void *data);
unsigned int ufg_cpu(void);
unsigned int ufg_nr_cpu_ids(void);
/* alloc_percpu() is a macro (allocation profiling's alloc_hooks()). */
void __percpu *ufg_alloc_percpu(size_t size, size_t align);
int ufg_task_pid(struct task_struct *t);
void ufg_task_comm(const struct task_struct *t, char *buf);

/* Preemption, RCU, recursion protection: inline in the kernel. */
void ufg_synchronize_rcu_tasks(void);
void ufg_kfree_rcu(struct rcu_head *head, void *ptr);
/*
 * ftrace's own recursion guard (also disables preemption): the bit to unlock, or -1. The hot
 * path's guard is sys::sync::Recursion, inline; the KUnit suite checks it against this one.
 */
int ufg_recursion_trylock(unsigned long ip, unsigned long parent_ip);
void ufg_recursion_unlock(int bit);
/* The rare end of preempt_enable_notrace(): the count is zero with a reschedule pending. */
void ufg_preempt_schedule_notrace(void);
/* preempt_count(), for the KUnit check of the inline one. */
unsigned int ufg_preempt_count(void);

/*
 * An irq-safe raw spinlock (the kernel crate of 6.12 has none): raw, because it is taken in
 * tracepoint probes, which run with preemption disabled, where PREEMPT_RT's spinlock_t (a
 * sleeping lock) must not be taken.
 */
void ufg_raw_spin_lock_init(raw_spinlock_t *lock);
unsigned long ufg_raw_spin_lock_irqsave(raw_spinlock_t *lock);
void ufg_raw_spin_unlock_irqrestore(raw_spinlock_t *lock, unsigned long flags);

/* Work items: INIT_WORK and schedule_work are macros/inline. */
void ufg_init_work(struct work_struct *work, void (*fn)(struct work_struct *work));
bool ufg_schedule_work(struct work_struct *work);

/* Tracepoints. */
const char *ufg_tracepoint_name(const struct tracepoint *tp);
void *ufg_tracepoint_probestub(const struct tracepoint *tp);
unsigned int ufg_module_num_tracepoints(const struct module *mod);
struct tracepoint *ufg_module_tracepoint(const struct module *mod, unsigned int i);
struct module *ufg_tp_module_mod(const void *tp_mod);
void ufg_tracepoint_synchronize_unregister(void);

/* Unwinding (x86_64 ORC/frame pointer unwinder state). */
unsigned long ufg_unwind_state_size(void);
void ufg_unwind_start(void *state, struct task_struct *task);
bool ufg_unwind_done(void *state);
unsigned long ufg_unwind_ip(void *state);
unsigned long ufg_unwind_sp(void *state);
void ufg_unwind_set_ip(void *state, unsigned long ip);
bool ufg_unwind_next(void *state);

struct file;
struct file *ufg_file_open(const char *path);
long ufg_file_read(struct file *f, void *buf, unsigned long len, long long *pos);
void ufg_file_close(struct file *f);
long ufg_file_read_plain(struct file *f, void *buf, unsigned long len, long long *pos);
long long ufg_file_size(struct file *f);
bool ufg_glob_match(const char *pat, const char *str);
bool ufg_within_module(unsigned long addr, const struct module *mod);
bool ufg_within_module_init(unsigned long addr, const struct module *mod);
unsigned long *ufg_module_callsites(const struct module *mod, unsigned int *n);
const char *ufg_module_name(const struct module *mod);

struct pt_regs;
#ifdef CONFIG_ARM64
/* arch::fill_pt_regs on arm64 (x86_64's is Rust). */
void ufg_regs_from_entry(struct ftrace_regs *fregs, struct pt_regs *out);
void ufg_regs_from_exit(struct ftrace_regs *fregs, struct pt_regs *out, unsigned long ret_addr);
#endif
unsigned long ufg_regs_return_value(struct pt_regs *regs);
unsigned long ufg_regs_arg(struct pt_regs *regs, unsigned int n);

/*
 * Trace events (src/sys/trace_event.rs). The ring-buffer reserve/commit pair and
 * trace_trigger_soft_disabled() are inline or need struct layouts kept in C.
 */
struct mutex;
struct trace_event_file;
struct trace_event_buffer;
struct trace_iterator;
struct trace_seq;
void ufg_mutex_lock(struct mutex *m);
void ufg_mutex_unlock(struct mutex *m);
bool ufg_event_soft_disabled(struct trace_event_file *file);
void *ufg_event_reserve(struct trace_event_buffer *fb, struct trace_event_file *file,
			unsigned long len);
void ufg_event_commit(struct trace_event_buffer *fb);
/* %pS (with offset) or %ps of addr into s; false once s overflowed. */
bool ufg_seq_symbol(struct trace_seq *s, unsigned long addr, bool offset);
bool ufg_seq_overflowed(struct trace_seq *s);
/* The record being printed: trace_iterator's seq, ent and ent_size. */
struct trace_seq *ufg_iter_seq(struct trace_iterator *iter);
const void *ufg_iter_ent(struct trace_iterator *iter, unsigned long *size);
/*
 * perf: upstream's f{entry,exit}_perf_func split in two so that Rust fills the record in
 * between. begin returns a buffer of size bytes and this CPU's pt_regs for the sample, or NULL
 * when no perf event of this CPU listens (or no buffer).
 */
struct trace_event_call;
void *ufg_perf_begin(struct trace_event_call *call, unsigned long size, int *rctx,
		     struct pt_regs **regs);
void ufg_perf_end(struct trace_event_call *call, void *entry, unsigned long size, int rctx,
		  struct pt_regs *regs);
/* current->comm, and the task's stack bounds for $stackN reads. */
const char *ufg_current_comm(void);
/* The first bytes of a trace event record: its common type, for sanity checks. */
unsigned long ufg_trace_entry_size(void);
/* offsetof(struct dentry, d_name.name), offsetof(struct file, f_path.dentry). */
unsigned int ufg_dentry_name_offset(void);
unsigned int ufg_file_dentry_offset(void);
/* /proc/kallsyms: a seq_file behind procfs's file operations (see fs.c). */
long ufg_proc_seq_read(struct file *f, void *buf, unsigned long len, long long *pos);
/* Write access to our control files: what upstream's tracefs files require. */
bool ufg_capable_admin(void);
bool ufg_file_truncating(const struct file *f);
void *ufg_file_private(const struct file *f);
unsigned long ufg_stack_index_max(void);
/* Kernel reads below this go to user memory (ARCH_HAS_NON_OVERLAPPING_ADDRESS_SPACE). */
unsigned long ufg_user_space_end(void);

/* The architecture's return trampoline (src/fgraph/arch/tramp_*.S). */
void ufgraph_return_trampoline(void);
/* Test fixtures (tests/testfns.c), linked into ufgraph_kunit.ko only. */
int ufg_test_add(int a, int b);
unsigned long ufg_test_init_text_addr(void);
int ufg_test_on_cpu(unsigned int cpu, void (*fn)(void *arg), void *arg);
int ufg_test_cpu_down(unsigned int cpu);
int ufg_test_cpu_up(unsigned int cpu);
int ufg_test_in_fake_context(unsigned int offset, int (*fn)(void *arg), void *arg);
long ufg_test_mul(long a, long b);
int ufg_test_recurse(int n);
int ufg_test_tail(int n);
long ufg_test_inner(long x);
long ufg_test_outer(long x);
int ufg_test_caller(int a);
unsigned long ufg_test_retaddr(void);
long ufg_test_call(long (*fn)(long), long x);

/*
 * Teardown (src/fgraph/graph.rs) looks at other tasks' kernel stacks under stop_machine and
 * waits for some of their frames: whether a task can still run, where its stack is, a
 * reference that keeps its task_struct, and CPU hotplug.
 */
/* The task has been switched out for the last time (TASK_DEAD): it never runs again. */
bool ufg_task_dead(const struct task_struct *t);
/*
 * t's kernel stack [*lo, *hi) (false: it has none left), the stack pointer it saved when it was
 * last switched out, and whether it is on a CPU now (the saved pointer is stale then).
 */
bool ufg_task_stack_view(const struct task_struct *t, unsigned long *lo, unsigned long *hi,
			 unsigned long *saved_sp, bool *running);
void ufg_get_task(struct task_struct *t);
void ufg_put_task(struct task_struct *t);
bool ufg_cpu_online(unsigned int cpu);
/*
 * Where the kernel's own return hookers keep the return addresses they saved, for teardown to
 * rewrite ufgraph's trampoline there (src/fgraph/graph.rs, stacked-over frames). Read and
 * written only under stop_machine, for tasks that are not running.
 *
 * The function_graph tracer's shadow stack: the array and the index of its top (0: empty).
 * NULL when the task has none (or CONFIG_FUNCTION_GRAPH_TRACER is off).
 */
unsigned long *ufg_task_fgraph_stack(struct task_struct *t, int *top);
/* rethook (kretprobes and fprobes on x86_64): the task's newest node, and the next older. */
void *ufg_task_rethook_first(struct task_struct *t);
void *ufg_rethook_next(void *node);
/* A rethook node's saved return address (the word), and the stack slot it was taken from. */
unsigned long *ufg_rethook_ret(void *node, unsigned long *frame);

/* A CPUHP_BP_PREPARE_DYN state whose startup runs before a CPU is brought up; >0 on success. */
int ufg_cpuhp_add(int (*prepare)(unsigned int cpu));
void ufg_cpuhp_remove(int state);

#ifdef CONFIG_ARM64
/* arm64 (src/fgraph/arch/arm64.rs): handing return addresses back at unload, under stop_machine. */
/* A word of another task's stack, read without KASAN checks (as the unwinder does). */
unsigned long ufg_arm64_peek(unsigned long addr);
/* scs_is_enabled(): the kernel returns through its shadow call stack (a static key). */
bool ufg_arm64_scs_enabled(void);
/* The kernel signs return addresses in frame records (PAC, on this CPU). */
bool ufg_arm64_kernel_pac(void);
/* The shadow call stack of switched-out t: [*base, *sp) holds its pushed return addresses. */
bool ufg_arm64_scs(const struct task_struct *t, unsigned long *base, unsigned long *sp);
/* A code address with its pointer authentication code stripped. */
unsigned long ufg_arm64_strip(unsigned long addr);
/* The frame pointer t saved when it was switched out. */
unsigned long ufg_arm64_saved_fp(const struct task_struct *t);
#endif

#endif
