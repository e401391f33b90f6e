/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ufgraph: kretprobe-compatible return probes on the shared shadow stack.
 *
 * A kretprobe here keeps the kernel's API (a struct kprobe naming the function, an
 * entry_handler and a handler getting struct pt_regs, per-instance data) but owns no
 * instance pool: each instance lives on the task's ufgraph shadow stack, next to every
 * other ufgraph user's frames. maxactive is accepted and never limits anything, so
 * returns are never missed because a pool ran dry.
 *
 * pt_regs: filled from ftrace_regs; on x86_64 valid are, in entry_handler, the argument
 * registers di, si, dx, cx, r8, r9 and ax, bp, sp, ip (the probed function); in handler,
 * ax and dx (the return value), bp, sp (as the function left it) and ip (the address it
 * returns to). Every other register reads zero; cs is the kernel's, so user_mode() is
 * false.
 *
 * Names carry a ufgraph_ prefix (the kernel has its own register_kretprobe()); unless
 * UFGRAPH_NO_UPSTREAM_NAMES is defined the upstream names map onto them, so code written
 * for <linux/kprobes.h> kretprobes builds by adding this include after it.
 */
#ifndef _UFGRAPH_KRETPROBE_H
#define _UFGRAPH_KRETPROBE_H

#include <linux/kprobes.h>	/* struct kprobe; the kernel's kretprobe stays untouched */
#include <linux/ptrace.h>

struct ufgraph_kretprobe;

struct ufgraph_kretprobe_instance {
	struct ufgraph_kretprobe	*rp;
	unsigned long			ret_addr;	/* where the probed function returns to */
	char				data[];		/* data_size bytes */
};

typedef int (*ufgraph_kretprobe_handler_t)(struct ufgraph_kretprobe_instance *ri,
					   struct pt_regs *regs);

struct ufgraph_kretprobe {
	struct kprobe			kp;		/* symbol_name (+ offset 0) or addr */
	ufgraph_kretprobe_handler_t	handler;	/* at the return */
	ufgraph_kretprobe_handler_t	entry_handler;	/* at the entry: non-zero skips handler */
	int				maxactive;	/* accepted, never limiting */
	int				nmissed;	/* calls that could not be hooked */
	size_t				data_size;	/* at most UFGRAPH_KRETPROBE_MAX_DATA */
	void				*ufgraph_private;
};

/* Per-instance data lives in the shadow stack's per-call data slot. */
#define UFGRAPH_KRETPROBE_MAX_DATA	104

/*
 * -EINVAL (no handler, bad symbol_name/addr combination, offset != 0), -ENOENT (unknown
 * or untraceable function), -E2BIG (data_size), -EBUSY (registered already), -ENOMEM.
 * kp.addr is set to the probed address on success.
 */
int ufgraph_register_kretprobe(struct ufgraph_kretprobe *rp);
void ufgraph_unregister_kretprobe(struct ufgraph_kretprobe *rp);
int ufgraph_register_kretprobes(struct ufgraph_kretprobe **rps, int num);
void ufgraph_unregister_kretprobes(struct ufgraph_kretprobe **rps, int num);

static inline struct ufgraph_kretprobe *ufgraph_get_kretprobe(struct ufgraph_kretprobe_instance *ri)
{
	return ri->rp;
}

static inline unsigned long ufgraph_get_kretprobe_retaddr(struct ufgraph_kretprobe_instance *ri)
{
	return ri->ret_addr;
}

#ifndef UFGRAPH_NO_UPSTREAM_NAMES
#define kretprobe			ufgraph_kretprobe
#define kretprobe_instance		ufgraph_kretprobe_instance
#define kretprobe_handler_t		ufgraph_kretprobe_handler_t
#define register_kretprobe		ufgraph_register_kretprobe
#define unregister_kretprobe		ufgraph_unregister_kretprobe
#define register_kretprobes		ufgraph_register_kretprobes
#define unregister_kretprobes		ufgraph_unregister_kretprobes
#define get_kretprobe			ufgraph_get_kretprobe
#define get_kretprobe_retaddr		ufgraph_get_kretprobe_retaddr
#endif

#endif /* _UFGRAPH_KRETPROBE_H */
