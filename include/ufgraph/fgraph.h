/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ufgraph: the multi-user function-graph core, for other kernel modules.
 *
 * The model is upstream's fgraph of v6.14 (include/linux/ftrace.h): a graph ops has an
 * entry callback, called at the entry of every function its filter selects, which
 * returns non-zero to have the return callback called at that function's return. Both
 * get struct ftrace_regs: the arguments at entry, the return value at return. Up to 16
 * ops are registered at once; they share one shadow stack per task.
 *
 * Names carry a ufgraph_ prefix so that they never clash with the kernel's own fgraph:
 * a 6.12 kernel has register_ftrace_graph() too, with a different ops layout.
 *
 *	static int my_entry(struct ufgraph_ent *trace, struct ufgraph_ops *gops,
 *			    struct ftrace_regs *fregs)
 *	{
 *		u64 *t = ufgraph_reserve_data(gops->idx, sizeof(*t));
 *		if (t)
 *			*t = ftrace_regs_get_argument(fregs, 0);
 *		return 1;	// call my_return() when it returns
 *	}
 *
 *	static struct ufgraph_ops my_ops = {
 *		.entryfunc = my_entry,
 *		.retfunc   = my_return,
 *	};
 *
 *	ftrace_set_filter(&my_ops.ops, "vfs_read", strlen("vfs_read"), 0);
 *	ufgraph_register(&my_ops);
 *	...
 *	ufgraph_unregister(&my_ops);
 *	ftrace_free_filter(&my_ops.ops);
 *
 * Callbacks run with preemption disabled, possibly in NMI context: they must not sleep.
 */
#ifndef _UFGRAPH_FGRAPH_H
#define _UFGRAPH_FGRAPH_H

#include <linux/ftrace.h>
#include <linux/types.h>

struct task_struct;
struct ufgraph_ops;

/*
 * What an entry callback is told (upstream: struct ftrace_graph_ent). Treat it as read-only:
 * when several ops hook one call, they may be handed the same one in turn (upstream hands all
 * its fgraph_ops on a call one ftrace_graph_ent), and so may the return callbacks of one
 * frame their struct ufgraph_ret.
 */
struct ufgraph_ent {
	unsigned long func;	/* the hooked function */
	int depth;		/* hooked frames of this task, this one included */
};

/*
 * What a return callback is told (upstream: struct ftrace_graph_ret). No call and return
 * times, as upstream since v6.14: the core reads no clock for C ops. An ops that wants a
 * call's duration reads trace_clock_local() in its entry callback into the data it reserves,
 * and again in its return callback (upstream's function_graph tracer does the same).
 */
struct ufgraph_ret {
	unsigned long func;
	unsigned long retval;
	int depth;
	unsigned int overrun;		/* calls of this task not hooked for a full shadow stack, so far */
};

typedef int (*ufgraph_entry_t)(struct ufgraph_ent *trace, struct ufgraph_ops *gops,
			       struct ftrace_regs *fregs);
typedef void (*ufgraph_ret_t)(struct ufgraph_ret *trace, struct ufgraph_ops *gops,
			      struct ftrace_regs *fregs);

struct ufgraph_ops {
	/*
	 * Read by ufgraph_register(): set them before it, and leave them alone until
	 * ufgraph_unregister() (a change in between is not seen, or seen by some calls only).
	 */
	ufgraph_entry_t		entryfunc;
	ufgraph_ret_t		retfunc;
	/*
	 * The filter, one of two ways:
	 * - ufgraph_set_filter_ips()/ufgraph_set_filter() (free it with ufgraph_free_filter()
	 *   after unregistering): the ops goes on ufgraph's shared ftrace_ops, one for every
	 *   graph ops, which finds the task's stack once per call for all the ops hooking it;
	 * - ftrace_set_filter()/ftrace_set_filter_ips() on &ops before registering (free it with
	 *   ftrace_free_filter() after unregistering): the ops gets its own ftrace callback, which
	 *   costs more per call when several ops hook a function, but takes any ftrace filter
	 *   (and an empty one: every function).
	 * ufgraph owns ops.func and ops.private while registered.
	 */
	struct ftrace_ops	ops;
	void			*private;	/* yours */
	/*
	 * Set by ufgraph_register() to 0..15 before either callback can run, and to -1 by
	 * ufgraph_unregister(). Read only.
	 */
	int			idx;
	/* private to ufgraph */
	void			*ufgraph_slot;
	void			*ufgraph_filter;
};

/*
 * Register @gops: -ENOSPC when 16 ops are registered, -EBUSY if it already is, -EINVAL if
 * its shared filter was set but is empty now (an empty filter on &ops would mean every
 * function), or the error of the ftrace registration. On error nothing is left registered.
 */
int ufgraph_register(struct ufgraph_ops *gops);
/*
 * Unregister: when this returns, neither callback runs any more. The shared filter then
 * holds the functions the ops hooked at the end, for the next registration: the changes
 * made while registered, less the functions of modules that went away meanwhile (they leave
 * a registered ops when their module goes).
 */
void ufgraph_unregister(struct ufgraph_ops *gops);

/*
 * The shared filter (see struct ufgraph_ops): add (or with @remove, remove) the functions at
 * @ips (start addresses or ftrace locations: either names a function), @reset clearing it
 * first; -EINVAL for an address that is no traceable function. While registered, changes
 * apply at once; @reset and removing the last function are refused (-EINVAL) then. -EBUSY
 * for an ops registered with a filter on its own ftrace_ops.
 */
int ufgraph_set_filter_ips(struct ufgraph_ops *gops, unsigned long *ips, unsigned int cnt,
			   int remove, int reset);
/* The same for the functions matching @glob now (-ENOENT if none). */
int ufgraph_set_filter(struct ufgraph_ops *gops, const char *glob, int remove, int reset);
/* Frees the shared filter of an unregistered ops. */
void ufgraph_free_filter(struct ufgraph_ops *gops);

/*
 * From an entry callback: reserve @size_bytes (1..256) on the shadow stack for the return
 * callback, once per entry. NULL if out of range, already reserved, or the stack is full.
 */
void *ufgraph_reserve_data(int idx, int size_bytes);
/* From a return callback: what the matching entry reserved, and its size (in bytes). */
void *ufgraph_retrieve_data(int idx, int *size_bytes);
/* ...or what this ops reserved @depth hooked frames up the call chain (0: this frame). */
void *ufgraph_retrieve_parent_data(int idx, int *size_bytes, int depth);
/* @gops' variable in the current task: one unsigned long, zero initially. */
unsigned long *ufgraph_get_task_var(struct ufgraph_ops *gops);

/*
 * Unwinding: if @ret (found at @retp on @task's stack) is ufgraph's trampoline, the real
 * return address; otherwise @ret. Start with *@idx = 0 and keep passing it while walking
 * outwards. @task must be current or pinned.
 */
unsigned long ufgraph_ret_addr(struct task_struct *task, int *idx, unsigned long ret,
			       unsigned long *retp);
/* stack_trace_save() for the current task with the real return addresses in place. */
unsigned int ufgraph_stack_trace_save(unsigned long *store, unsigned int size,
				      unsigned int skipnr);
/* The trampoline's address, to recognise it. */
unsigned long ufgraph_trampoline_addr(void);

#endif /* _UFGRAPH_FGRAPH_H */
