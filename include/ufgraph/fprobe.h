/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ufgraph: fprobe on the fgraph core, for other kernel modules.
 *
 * An fprobe calls an entry handler at the entry of every function it is registered on
 * and, if it has one, an exit handler at the return, both with struct ftrace_regs, as
 * upstream's fprobe from v6.14 on (include/linux/fprobe.h there). Probes with an exit
 * handler share one fgraph ops and so the per-task shadow stack: no rethook pool, no
 * maxactive. Entry-only probes never touch the shadow stack.
 *
 * Two sets of names:
 *
 *  - ufgraph_fprobe, ufgraph_register_fprobe(), ...: always there, never clash with the
 *    kernel's own fprobe (a 6.12 kernel has register_fprobe() too, on rethook, with
 *    pt_regs handlers);
 *  - the upstream names (struct fprobe, register_fprobe(), register_fprobe_ips(),
 *    register_fprobe_syms(), unregister_fprobe(), fprobe_is_registered(),
 *    enable_fprobe(), disable_fprobe(), fprobe_disabled()), mapped onto the first set,
 *    unless UFGRAPH_NO_UPSTREAM_NAMES is defined. Upstream client code then builds with
 *    <ufgraph/fprobe.h> in place of <linux/fprobe.h> and nothing else changed. Include
 *    this header before anything that includes <linux/fprobe.h>: it blocks the kernel's.
 */
#ifndef _UFGRAPH_FPROBE_H
#define _UFGRAPH_FPROBE_H

#include <linux/compiler.h>
#include <linux/ftrace.h>
#include <linux/types.h>

#if defined(_LINUX_FPROBE_H) && !defined(UFGRAPH_NO_UPSTREAM_NAMES)
#error "include <ufgraph/fprobe.h> before anything that includes <linux/fprobe.h>"
#endif

struct ufgraph_fprobe;

/*
 * @entry_ip is the ftrace location of the function (its patch site), @ret_ip where it
 * returns to. A non-zero return from the entry handler skips the exit handler for this
 * call. @entry_data is the probe's entry_data_size bytes, shared by its two handlers for
 * one call (NULL when entry_data_size is 0); zeroed for a probe without an entry handler.
 * entry_data_size must not change while the probe is registered (as upstream, which sizes
 * its pool at registration): ufgraph reserves the size it read at registration.
 */
typedef int (*ufgraph_fprobe_entry_cb)(struct ufgraph_fprobe *fp, unsigned long entry_ip,
				       unsigned long ret_ip, struct ftrace_regs *fregs,
				       void *entry_data);
typedef void (*ufgraph_fprobe_exit_cb)(struct ufgraph_fprobe *fp, unsigned long entry_ip,
				       unsigned long ret_ip, struct ftrace_regs *fregs,
				       void *entry_data);

struct ufgraph_fprobe {
	unsigned long		nmissed;	/* calls the probe could not handle (0 at registration) */
	unsigned int		flags;		/* UFGRAPH_FPROBE_FL_* only: bit 31 is ufgraph's own */
	size_t			entry_data_size; /* 0..120 bytes; -E2BIG above */
	int			nr_maxactive;	/* accepted, never limiting */
	ufgraph_fprobe_entry_cb	entry_handler;
	ufgraph_fprobe_exit_cb	exit_handler;
	void			*hlist_array;	/* private to ufgraph */
};

#define UFGRAPH_FPROBE_FL_DISABLED	1	/* soft-disabled: handlers are not called */
#define UFGRAPH_FPROBE_FL_KPROBE_SHARED	2	/* accepted for compatibility */
/*
 * Bit 31 marks ufgraph's own Rust probes: registration refuses a probe that has it, and a
 * registered probe must never set it (the core would take the probe for one of its own).
 */

/* Most entry data, as upstream: 15 longs. */
#define UFGRAPH_MAX_FPROBE_DATA_SIZE_WORD	15
#define UFGRAPH_MAX_FPROBE_DATA_SIZE	(UFGRAPH_MAX_FPROBE_DATA_SIZE_WORD * sizeof(long))

/*
 * Register @fp on every traceable function whose name matches the glob @filter and not
 * @notfilter (may be NULL). Errors, with nothing left registered: -EINVAL (no handler,
 * bad argument), -E2BIG (entry_data_size), -EBUSY (already registered), -ENOENT (no
 * function matches), -ENOMEM.
 */
int ufgraph_register_fprobe(struct ufgraph_fprobe *fp, const char *filter, const char *notfilter);
/* ...on @num functions given by address (function start or ftrace location). */
int ufgraph_register_fprobe_ips(struct ufgraph_fprobe *fp, unsigned long *addrs, int num);
/* ...on @num functions given by name: -ENOENT names an unknown symbol in the log. */
int ufgraph_register_fprobe_syms(struct ufgraph_fprobe *fp, const char **syms, int num);
/* When this returns, neither handler of @fp runs any more. -EINVAL if not registered. */
int ufgraph_unregister_fprobe(struct ufgraph_fprobe *fp);
bool ufgraph_fprobe_is_registered(struct ufgraph_fprobe *fp);
/* How many traceable functions @filter/@notfilter select. */
int ufgraph_fprobe_count_ips_from_filter(const char *filter, const char *notfilter);

static inline bool ufgraph_fprobe_disabled(struct ufgraph_fprobe *fp)
{
	return fp ? fp->flags & UFGRAPH_FPROBE_FL_DISABLED : false;
}

static inline void ufgraph_disable_fprobe(struct ufgraph_fprobe *fp)
{
	if (fp)
		WRITE_ONCE(fp->flags, fp->flags | UFGRAPH_FPROBE_FL_DISABLED);
}

static inline void ufgraph_enable_fprobe(struct ufgraph_fprobe *fp)
{
	if (fp)
		WRITE_ONCE(fp->flags, fp->flags & ~UFGRAPH_FPROBE_FL_DISABLED);
}

#ifndef UFGRAPH_NO_UPSTREAM_NAMES
/* Keep the kernel's own <linux/fprobe.h> out: its names are ours now. */
#define _LINUX_FPROBE_H
#define fprobe				ufgraph_fprobe
#define fprobe_entry_cb			ufgraph_fprobe_entry_cb
#define fprobe_exit_cb			ufgraph_fprobe_exit_cb
#define FPROBE_FL_DISABLED		UFGRAPH_FPROBE_FL_DISABLED
#define FPROBE_FL_KPROBE_SHARED		UFGRAPH_FPROBE_FL_KPROBE_SHARED
#define MAX_FPROBE_DATA_SIZE_WORD	UFGRAPH_MAX_FPROBE_DATA_SIZE_WORD
#define MAX_FPROBE_DATA_SIZE		UFGRAPH_MAX_FPROBE_DATA_SIZE
#define register_fprobe			ufgraph_register_fprobe
#define register_fprobe_ips		ufgraph_register_fprobe_ips
#define register_fprobe_syms		ufgraph_register_fprobe_syms
#define unregister_fprobe		ufgraph_unregister_fprobe
#define fprobe_is_registered		ufgraph_fprobe_is_registered
#define fprobe_count_ips_from_filter	ufgraph_fprobe_count_ips_from_filter
#define fprobe_disabled			ufgraph_fprobe_disabled
#define disable_fprobe			ufgraph_disable_fprobe
#define enable_fprobe			ufgraph_enable_fprobe
#endif

#endif /* _UFGRAPH_FPROBE_H */
