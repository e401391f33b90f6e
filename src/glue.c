// SPDX-License-Identifier: GPL-2.0
/*
 * C glue for ufgraph; see glue.h. Compiled twice: once into ufgraph.ko, once
 * (through glue_kunit.c, with UFG_KUNIT defined) into ufgraph_kunit.ko, which
 * must not export anything so that both modules can coexist.
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

#include "glue.h"

static char *func;
module_param(func, charp, 0444);
MODULE_PARM_DESC(func, "function (or glob) whose calls the counter hooks, e.g. vfs_read or 'vfs_*'");

const char *ufg_param_func(void)
{
	return func;
}

static char *graph;
module_param(graph, charp, 0444);
MODULE_PARM_DESC(graph, "function (or glob) whose entries and returns the fgraph core counts, e.g. 'vfs_*'");

const char *ufg_param_graph(void)
{
	return graph;
}

unsigned long ufg_fregs_arg(const struct ftrace_regs *fregs, unsigned int n)
{
	return ftrace_regs_get_argument((struct ftrace_regs *)fregs, n);
}

void ufg_kunit_fail(struct kunit *test, const char *msg)
{
	kunit_set_failure(test);
	kunit_err(test, "%s", msg);
}

void ufg_kunit_info(struct kunit *test, const char *msg)
{
	kunit_info(test, "%s", msg);
}

void ufg_kunit_skip(struct kunit *test, const char *msg)
{
	kunit_mark_skipped(test, "%s", msg);
}

struct task_struct *ufg_current(void)
{
	return current;
}

bool ufg_is_idle_task(const struct task_struct *t)
{
	return is_idle_task(t);
}

unsigned int ufg_task_cpu(const struct task_struct *t)
{
	return task_cpu(t);
}

void ufg_for_each_thread(void (*fn)(struct task_struct *t, void *data), void *data)
{
	struct task_struct *g, *t;

	rcu_read_lock();
	for_each_process_thread(g, t)
		fn(t, data);
	rcu_read_unlock();
}

unsigned int ufg_cpu(void)
{
	return raw_smp_processor_id();
}

unsigned int ufg_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

void ufg_synchronize_rcu_tasks(void)
{
	synchronize_rcu_tasks();
}

void ufg_kfree_rcu(struct rcu_head *head, void *ptr)
{
	kvfree_call_rcu(head, ptr);
}

int ufg_recursion_trylock(unsigned long ip, unsigned long parent_ip)
{
	return ftrace_test_recursion_trylock(ip, parent_ip);
}

void ufg_recursion_unlock(int bit)
{
	ftrace_test_recursion_unlock(bit);
}

unsigned int ufg_preempt_count(void)
{
	return preempt_count();
}

void ufg_preempt_schedule_notrace(void)
{
#ifdef CONFIG_PREEMPTION
	__preempt_schedule_notrace();
#endif
}

void ufg_raw_spin_lock_init(raw_spinlock_t *lock)
{
	raw_spin_lock_init(lock);
}

unsigned long ufg_raw_spin_lock_irqsave(raw_spinlock_t *lock)
{
	unsigned long flags;

	raw_spin_lock_irqsave(lock, flags);
	return flags;
}

void ufg_raw_spin_unlock_irqrestore(raw_spinlock_t *lock, unsigned long flags)
{
	raw_spin_unlock_irqrestore(lock, flags);
}

void ufg_init_work(struct work_struct *work, void (*fn)(struct work_struct *work))
{
	INIT_WORK(work, fn);
}

bool ufg_schedule_work(struct work_struct *work)
{
	return schedule_work(work);
}

const char *ufg_tracepoint_name(const struct tracepoint *tp)
{
	return tp->name;
}

void *ufg_tracepoint_probestub(const struct tracepoint *tp)
{
	return tp->probestub;
}

/*
 * A module's tracepoints (6.12 exports no walk over them): how many, the i-th, and the module of
 * a `struct tp_module` a tracepoint module notifier gets.
 */
unsigned int ufg_module_num_tracepoints(const struct module *mod)
{
	return mod->num_tracepoints;
}

struct tracepoint *ufg_module_tracepoint(const struct module *mod, unsigned int i)
{
	return tracepoint_ptr_deref(&mod->tracepoints_ptrs[i]);
}

struct module *ufg_tp_module_mod(const void *tp_mod)
{
	return ((const struct tp_module *)tp_mod)->mod;
}

void ufg_tracepoint_synchronize_unregister(void)
{
	tracepoint_synchronize_unregister();
}

#ifdef CONFIG_X86_64
unsigned long ufg_unwind_state_size(void)
{
	return sizeof(struct unwind_state);
}

void ufg_unwind_start(void *state, struct task_struct *task)
{
	unwind_start(state, task, NULL, NULL);
}

bool ufg_unwind_done(void *state)
{
	return unwind_done(state);
}

unsigned long ufg_unwind_ip(void *state)
{
	return unwind_get_return_address(state);
}

unsigned long ufg_unwind_sp(void *state)
{
	return ((struct unwind_state *)state)->sp;
}

void ufg_unwind_set_ip(void *state, unsigned long ip)
{
	((struct unwind_state *)state)->ip = ip;
}

bool ufg_unwind_next(void *state)
{
	return unwind_next_frame(state);
}
#endif

/*
 * The C API (include/ufgraph/), implemented in Rust (capi.rs). ufgraph_kunit.ko carries
 * the same code but exports nothing, so that both modules can be loaded together.
 */
#ifndef UFG_KUNIT
#include <ufgraph/fgraph.h>
EXPORT_SYMBOL_GPL(ufgraph_register);
EXPORT_SYMBOL_GPL(ufgraph_unregister);
EXPORT_SYMBOL_GPL(ufgraph_set_filter_ips);
EXPORT_SYMBOL_GPL(ufgraph_set_filter);
EXPORT_SYMBOL_GPL(ufgraph_free_filter);
EXPORT_SYMBOL_GPL(ufgraph_reserve_data);
EXPORT_SYMBOL_GPL(ufgraph_retrieve_data);
EXPORT_SYMBOL_GPL(ufgraph_retrieve_parent_data);
EXPORT_SYMBOL_GPL(ufgraph_get_task_var);
EXPORT_SYMBOL_GPL(ufgraph_ret_addr);
EXPORT_SYMBOL_GPL(ufgraph_stack_trace_save);
EXPORT_SYMBOL_GPL(ufgraph_trampoline_addr);

#define UFGRAPH_NO_UPSTREAM_NAMES
#include <ufgraph/fprobe.h>
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe);
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe_ips);
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe_syms);
EXPORT_SYMBOL_GPL(ufgraph_unregister_fprobe);
EXPORT_SYMBOL_GPL(ufgraph_fprobe_is_registered);
EXPORT_SYMBOL_GPL(ufgraph_fprobe_count_ips_from_filter);

#include <ufgraph/kretprobe.h>
EXPORT_SYMBOL_GPL(ufgraph_register_kretprobe);
EXPORT_SYMBOL_GPL(ufgraph_unregister_kretprobe);
EXPORT_SYMBOL_GPL(ufgraph_register_kretprobes);
EXPORT_SYMBOL_GPL(ufgraph_unregister_kretprobes);

#include <ufgraph/rethook.h>
EXPORT_SYMBOL_GPL(ufgraph_rethook_register);
EXPORT_SYMBOL_GPL(ufgraph_rethook_unregister);
EXPORT_SYMBOL_GPL(ufgraph_rethook_hook);
#endif

bool ufg_task_dead(const struct task_struct *t)
{
	return READ_ONCE(t->__state) == TASK_DEAD;
}

bool ufg_task_stack_view(const struct task_struct *t, unsigned long *lo, unsigned long *hi,
			 unsigned long *saved_sp, bool *running)
{
	unsigned long base = (unsigned long)task_stack_page(t);

	*lo = base;
	*hi = base ? base + THREAD_SIZE : 0;
	*running = t == current || READ_ONCE(t->on_cpu);
#ifdef CONFIG_X86_64
	*saved_sp = t->thread.sp;
#else
	*saved_sp = thread_saved_sp(t);
#endif
	return base != 0;
}

void ufg_get_task(struct task_struct *t)
{
	get_task_struct(t);
}

void ufg_put_task(struct task_struct *t)
{
	put_task_struct(t);
}

bool ufg_cpu_online(unsigned int cpu)
{
	return cpu_online(cpu);
}

unsigned long *ufg_task_fgraph_stack(struct task_struct *t, int *top)
{
#ifdef CONFIG_FUNCTION_GRAPH_TRACER
	*top = READ_ONCE(t->curr_ret_stack);
	return READ_ONCE(t->ret_stack);
#else
	*top = 0;
	return NULL;
#endif
}

void *ufg_task_rethook_first(struct task_struct *t)
{
#ifdef CONFIG_RETHOOK
	return READ_ONCE(t->rethooks.first);
#else
	return NULL;
#endif
}

void *ufg_rethook_next(void *node)
{
#ifdef CONFIG_RETHOOK
	return READ_ONCE(((struct llist_node *)node)->next);
#else
	return NULL;
#endif
}

unsigned long *ufg_rethook_ret(void *node, unsigned long *frame)
{
#ifdef CONFIG_RETHOOK
	struct rethook_node *rh = container_of((struct llist_node *)node, struct rethook_node, llist);

	*frame = rh->frame;
	return &rh->ret_addr;
#else
	*frame = 0;
	return NULL;
#endif
}

int ufg_cpuhp_add(int (*prepare)(unsigned int cpu))
{
	return cpuhp_setup_state_nocalls(CPUHP_BP_PREPARE_DYN, "ufgraph:idle-stack", prepare, NULL);
}

void ufg_cpuhp_remove(int state)
{
	cpuhp_remove_state_nocalls(state);
}

int ufg_task_pid(struct task_struct *t)
{
	return task_pid_nr(t);
}

void ufg_task_comm(const struct task_struct *t, char *buf)
{
	strscpy(buf, t->comm, TASK_COMM_LEN);
}

bool ufg_glob_match(const char *pat, const char *str)
{
	return glob_match(pat, str);
}

bool ufg_within_module(unsigned long addr, const struct module *mod)
{
	return within_module(addr, mod);
}

const char *ufg_module_name(const struct module *mod)
{
	return mod->name;
}

/*
 * The seq_files ufgraph opens for itself (ftrace's function list, /proc/kallsyms) get a lock
 * class of their own. Every seq_file's m->lock is one lockdep class, and tracefs readers take
 * event_mutex under theirs (events/.../format, set_event): reading our own private file under
 * event_mutex, as enabling an fprobe event does when it matches its glob again, would look to
 * lockdep like the reverse order. Nothing else ever takes the lock of a file we opened, and
 * under it ftrace's list takes only ftrace_lock, which the kernel itself takes under
 * event_mutex.
 */
static struct lock_class_key ufg_own_seq_key;

struct file *ufg_file_open(const char *path)
{
	struct file *f = filp_open(path, O_RDONLY, 0);

	if (!IS_ERR(f) && f->f_op->read == seq_read && f->private_data)
		lockdep_set_class(&((struct seq_file *)f->private_data)->lock, &ufg_own_seq_key);
	return f;
}

/* seq_read_iter() into a kernel buffer: what seq_read() does for a user one. */
static long seq_read_kernel(struct file *f, void *buf, unsigned long len, long long *pos)
{
	struct kvec kv = { .iov_base = buf, .iov_len = len };
	struct iov_iter iter;
	struct kiocb kiocb;
	ssize_t n;

	init_sync_kiocb(&kiocb, f);
	kiocb.ki_pos = *pos;
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, len);
	n = seq_read_iter(&kiocb, &iter);
	*pos = kiocb.ki_pos;
	return n;
}

long ufg_file_read(struct file *f, void *buf, unsigned long len, long long *pos)
{
	/*
	 * tracefs lists are seq_files with only ->read (seq_read), which kernel_read()
	 * refuses; seq_read_iter() on a kernel buffer is what it would have done.
	 */
	if (f->f_op->read != seq_read)
		return -EINVAL;
	return seq_read_kernel(f, buf, len, pos);
}

void ufg_mutex_lock(struct mutex *m)
{
	mutex_lock(m);
}

void ufg_mutex_unlock(struct mutex *m)
{
	mutex_unlock(m);
}

bool ufg_event_soft_disabled(struct trace_event_file *file)
{
	return trace_trigger_soft_disabled(file);
}

void *ufg_event_reserve(struct trace_event_buffer *fb, struct trace_event_file *file,
			unsigned long len)
{
	void *entry = trace_event_buffer_reserve(fb, file, len);

	if (entry)
		fb->regs = NULL;
	return entry;
}

void ufg_event_commit(struct trace_event_buffer *fb)
{
	trace_event_buffer_commit(fb);
}

bool ufg_seq_symbol(struct trace_seq *s, unsigned long addr, bool offset)
{
	if (offset)
		trace_seq_printf(s, "%pS", (void *)addr);
	else
		trace_seq_printf(s, "%ps", (void *)addr);
	return !trace_seq_has_overflowed(s);
}

bool ufg_seq_overflowed(struct trace_seq *s)
{
	return trace_seq_has_overflowed(s);
}

struct trace_seq *ufg_iter_seq(struct trace_iterator *iter)
{
	return &iter->seq;
}

const void *ufg_iter_ent(struct trace_iterator *iter, unsigned long *size)
{
	*size = iter->ent_size;
	return iter->ent;
}

#ifdef CONFIG_PERF_EVENTS
void *ufg_perf_begin(struct trace_event_call *call, struct ftrace_regs *fregs, unsigned long ret_addr,
		     unsigned long len, unsigned long *size, int *rctx, struct pt_regs **regs)
{
	struct hlist_head *head = this_cpu_ptr(call->perf_events);
	struct pt_regs *r;
	void *entry;

	if (hlist_empty(head))
		return NULL;
	/* perf adds a u32 size before the record and keeps the whole u64-aligned. */
	*size = ALIGN(len + sizeof(u32), sizeof(u64)) - sizeof(u32);
	entry = perf_trace_buf_alloc(*size, &r, rctx);
	if (!entry)
		return NULL;
	/* The caller fills *regs (arch::fill_pt_regs): what perf samples. */
	*regs = r;
	return entry;
}

void ufg_perf_end(struct trace_event_call *call, void *entry, unsigned long size, int rctx,
		  struct pt_regs *regs)
{
	perf_trace_buf_submit(entry, size, rctx, call->event.type, 1, regs,
			      this_cpu_ptr(call->perf_events), NULL);
}
#else
void *ufg_perf_begin(struct trace_event_call *call, struct ftrace_regs *fregs, unsigned long ret_addr,
		     unsigned long len, unsigned long *size, int *rctx, struct pt_regs **regs)
{
	return NULL;
}

void ufg_perf_end(struct trace_event_call *call, void *entry, unsigned long size, int rctx,
		  struct pt_regs *regs)
{
}
#endif

const char *ufg_current_comm(void)
{
	return current->comm;
}

unsigned long ufg_trace_entry_size(void)
{
	return sizeof(struct trace_entry);
}

unsigned int ufg_dentry_name_offset(void)
{
	return offsetof(struct dentry, d_name.name);
}

unsigned int ufg_file_dentry_offset(void)
{
	return offsetof(struct file, f_path.dentry);
}

long ufg_proc_seq_read(struct file *f, void *buf, unsigned long len, long long *pos)
{
	/*
	 * /proc/kallsyms is a seq_file (kallsyms_open() puts it in ->private_data) behind
	 * procfs's proc_reg_read(), which kernel_read() refuses. seq_read_iter() is what
	 * seq_read() would do. Only for procfs files whose ->private_data is a seq_file:
	 * the caller opens /proc/kallsyms and nothing else.
	 */
	if (file_inode(f)->i_sb->s_magic != PROC_SUPER_MAGIC || !f->private_data)
		return -EINVAL;
	return seq_read_kernel(f, buf, len, pos);
}

bool ufg_capable_admin(void)
{
	return capable(CAP_SYS_ADMIN);
}

bool ufg_file_truncating(const struct file *f)
{
	return (f->f_mode & FMODE_WRITE) && (f->f_flags & O_TRUNC);
}

bool ufg_file_reading(const struct file *f)
{
	return f->f_mode & FMODE_READ;
}

void *ufg_file_private(const struct file *f)
{
	return f->private_data;
}

unsigned long ufg_user_space_end(void)
{
#ifdef CONFIG_ARCH_HAS_NON_OVERLAPPING_ADDRESS_SPACE
	return TASK_SIZE;
#else
	return 0;
#endif
}

unsigned long ufg_stack_index_max(void)
{
	return THREAD_SIZE / sizeof(unsigned long);
}

void ufg_file_close(struct file *f)
{
	filp_close(f, NULL);
}

/*
 * kernel_read() of a file that has ->read_iter: sysfs files such as /sys/kernel/btf/vmlinux
 * (kernfs), which the seq_file readers above do not take.
 */
long ufg_file_read_plain(struct file *f, void *buf, unsigned long len, long long *pos)
{
	return kernel_read(f, buf, len, pos);
}

/* The size the inode gives: a sysfs binary attribute's (the BTF blob's) size. */
long long ufg_file_size(struct file *f)
{
	return i_size_read(file_inode(f));
}

unsigned long ufg_regs_return_value(struct pt_regs *regs)
{
	return regs_return_value(regs);
}

unsigned long ufg_regs_arg(struct pt_regs *regs, unsigned int n)
{
	return regs_get_kernel_argument(regs, n);
}

#ifdef CONFIG_ARM64
/*
 * arm64: what src/arch/arm64.rs needs to hand return addresses back at unload, and the
 * pt_regs views of ftrace_regs used by the kretprobe shim.
 */
#include <linux/sched/task_stack.h>
#include <linux/thread_info.h>
#include <linux/scs.h>
#include <asm/cpufeature.h>

/*
 * ftrace_caller (arch/arm64/kernel/entry-ftrace.S) puts a traced function's entry ftrace_regs
 * this far below the stack pointer the function was entered with: the registers and two frame
 * records. arch/arm64/ufgraph_tramp.S lays out its exit ftrace_regs the same way.
 */
#define UFG_ARM64_FTRACE_FRAME	(sizeof(struct __arch_ftrace_regs) + 32)

unsigned long ufg_arm64_entry_sp(unsigned long retp)
{
	return retp - offsetof(struct __arch_ftrace_regs, lr) + UFG_ARM64_FTRACE_FRAME;
}

unsigned long ufg_arm64_peek(unsigned long addr)
{
	/* Another task's stack, as the kernel's unwinder reads it: no KASAN check. */
	return READ_ONCE_NOCHECK(*(unsigned long *)addr);
}

bool ufg_arm64_exit_regs(unsigned long retp, unsigned long tramp)
{
	struct __arch_ftrace_regs *r = container_of((unsigned long *)retp,
						    struct __arch_ftrace_regs, lr);

	return READ_ONCE_NOCHECK(r->sp) == ufg_arm64_entry_sp(retp) &&
	       READ_ONCE_NOCHECK(r->pc) == tramp;
}

bool ufg_arm64_irq_at(unsigned long rec, unsigned long lo, unsigned long pc, unsigned long sp)
{
	/* The record an EL1 exception entry builds inside its pt_regs (entry.S, kernel_entry). */
	const struct pt_regs *regs;

	if (rec < lo + offsetof(struct pt_regs, stackframe))
		return false;
	regs = (const struct pt_regs *)(rec - offsetof(struct pt_regs, stackframe));
	return READ_ONCE_NOCHECK(regs->pc) == pc && READ_ONCE_NOCHECK(regs->sp) == sp;
}

int ufg_arm64_return_slots(void)
{
	/*
	 * The epilogue reloads x30 from the shadow call stack (pushed before PACIASP signs it, so
	 * plain there), not from the frame record. With CONFIG_DYNAMIC_SCS the kernel uses its
	 * shadow call stack only on a CPU without PAC (it patches PACIASP/AUTIASP into the pushes
	 * and pops at boot).
	 */
	if (scs_is_enabled())
		return UFG_ARM64_SLOTS_SCS;
	/* The frame record holds x30 signed with the task's key: only the task can re-sign it. */
	if (IS_ENABLED(CONFIG_ARM64_PTR_AUTH_KERNEL) && system_supports_address_auth())
		return UFG_ARM64_SLOTS_SIGNED;
	return UFG_ARM64_SLOTS_PLAIN;
}

bool ufg_arm64_scs(const struct task_struct *t, unsigned long *base, unsigned long *sp)
{
#ifdef CONFIG_SHADOW_CALL_STACK
	*base = (unsigned long)task_scs(t);
	*sp = (unsigned long)task_scs_sp(t);
	return *base && *sp >= *base && *sp - *base <= SCS_SIZE - sizeof(long);
#else
	return false;
#endif
}

unsigned long ufg_arm64_strip(unsigned long addr)
{
	/* A return address a frame record holds, with its PAC (if any) removed. */
	return ptrauth_strip_kernel_insn_pac(addr);
}

unsigned long ufg_arm64_saved_fp(const struct task_struct *t)
{
	return thread_saved_fp(t);
}

void ufg_regs_from_entry(struct ftrace_regs *fregs, struct pt_regs *out)
{
	memset(out, 0, sizeof(*out));
	ftrace_partial_regs(fregs, out);
	out->syscallno = NO_SYSCALL;
}

void ufg_regs_from_exit(struct ftrace_regs *fregs, struct pt_regs *out, unsigned long ret_addr)
{
	/* The trampoline's registers: x0..x8, fp, sp as the function left them, lr = x30. */
	memset(out, 0, sizeof(*out));
	ftrace_partial_regs(fregs, out);
	out->pc = ret_addr;
	out->syscallno = NO_SYSCALL;
}
#endif
