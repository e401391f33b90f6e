/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ufgraph: rethook, for code that hooks a function's return from its own entry hook
 * (a kprobe pre-handler, an ftrace_ops callback), on the shared shadow stack.
 *
 *	static void my_ret(struct ufgraph_rethook *rh, void *data, unsigned long ret_addr,
 *			   struct ftrace_regs *fregs) { ... }
 *	static struct ufgraph_rethook my_rh = { .handler = my_ret, .data_size = 16 };
 *
 *	ufgraph_rethook_register(&my_rh);
 *	// in an ftrace_ops callback, at a function's entry:
 *	void *data = ufgraph_rethook_hook(&my_rh, fregs);	// NULL: missed (nmissed++)
 *	// ...my_ret() runs when that function returns, with the same data.
 *	ufgraph_rethook_unregister(&my_rh);	// pending returns then skip my_ret()
 *
 * There is no node pool: each hooked return takes a few words of the task's shadow stack.
 */
#ifndef _UFGRAPH_RETHOOK_H
#define _UFGRAPH_RETHOOK_H

#include <linux/ftrace.h>
#include <linux/ptrace.h>

struct ufgraph_rethook;

typedef void (*ufgraph_rethook_handler_t)(struct ufgraph_rethook *rh, void *data,
					  unsigned long ret_addr, struct ftrace_regs *fregs);

struct ufgraph_rethook {
	ufgraph_rethook_handler_t	handler;
	size_t				data_size;	/* 0..240 bytes */
	unsigned long			nmissed;
	void				*ufgraph_private; /* ufgraph's, set while registered */
};

int ufgraph_rethook_register(struct ufgraph_rethook *rh);
void ufgraph_rethook_unregister(struct ufgraph_rethook *rh);
/*
 * From an entry hook, with the entry's registers: hook the return of the function being
 * entered. Returns the data_size bytes of data for this call, or NULL (not hooked, nmissed
 * counts it). @rh must be registered. Not from one of ufgraph's own entry callbacks for the
 * same call (an fprobe's entry handler, say): that is refused, as a recursion.
 */
void *ufgraph_rethook_hook(struct ufgraph_rethook *rh, struct ftrace_regs *fregs);

#ifdef CONFIG_X86_64
/* From a kprobe pre-handler at a function's entry (x86_64: pt_regs is ftrace_regs' layout). */
static inline void *ufgraph_rethook_hook_regs(struct ufgraph_rethook *rh, struct pt_regs *regs)
{
	return ufgraph_rethook_hook(rh, (struct ftrace_regs *)regs);
}
#endif

#endif /* _UFGRAPH_RETHOOK_H */
