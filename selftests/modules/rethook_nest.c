// SPDX-License-Identifier: GPL-2.0
/*
 * ufgraph_rethook_hook() called from an fprobe's entry handler, for the call being entered:
 * refused (the rethook's nmissed counts it), the fprobe's own exit handler still runs. Found by
 * session 4's review: the nested hook used to push a second frame on the same return slot under
 * the one being built, and the return then popped the wrong one (lost exits, or a panic when the
 * entry handler declined). On unload it reports
 *
 *   rethook_nest: entries=N hooked=N exits=N rh_rets=N rh_missed=N
 *
 * With first=1 a C graph ops hooks the function too, registered after the fprobe so that
 * ftrace runs it first: it pushes the frame, and the fprobe's entry joins it. The nested hook
 * must be refused all the same (review of the one-step push: a joined frame was not "being
 * built", so the hook joined it, and a skipping entry handler then dropped its data but not its
 * bit: a hook reported done whose handler never ran, and no miss counted). It reports
 *
 *   rethook_nest: other entries=N returns=N first=N
 */
#include <ufgraph/fprobe.h>
#include <ufgraph/rethook.h>
#include <ufgraph/fgraph.h>
#include <linux/ftrace.h>
#include <linux/string.h>
#include <linux/atomic.h>
#include <linux/module.h>

static int skip;
module_param(skip, int, 0644);
static int first;
module_param(first, int, 0444);
static atomic_t entries, exits, rh_rets, hooked;
static atomic_t other_entries, other_returns, other_first, other_pending;

static int other_entry(struct ufgraph_ent *trace, struct ufgraph_ops *gops,
		       struct ftrace_regs *fregs)
{
	atomic_inc(&other_entries);
	atomic_set(&other_pending, 1);
	return 1;
}

static void other_return(struct ufgraph_ret *trace, struct ufgraph_ops *gops,
			 struct ftrace_regs *fregs)
{
	atomic_inc(&other_returns);
}

static struct ufgraph_ops other_ops = {
	.entryfunc = other_entry,
	.retfunc = other_return,
};

static void rh_ret(struct ufgraph_rethook *rh, void *data, unsigned long ret_addr,
		   struct ftrace_regs *fregs)
{
	atomic_inc(&rh_rets);
}

static struct ufgraph_rethook rh = { .handler = rh_ret, .data_size = 8 };

static int nest_entry(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		      struct ftrace_regs *fregs, void *entry_data)
{
	atomic_inc(&entries);
	if (atomic_xchg(&other_pending, 0))
		atomic_inc(&other_first);
	if (ufgraph_rethook_hook(&rh, fregs))
		atomic_inc(&hooked);
	return READ_ONCE(skip);
}

static void nest_exit(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		      struct ftrace_regs *fregs, void *entry_data)
{
	atomic_inc(&exits);
}

static struct fprobe nest_probe = {
	.entry_handler = nest_entry,
	.exit_handler = nest_exit,
	.entry_data_size = 8,
};

static int __init nest_init(void)
{
	int ret = ufgraph_rethook_register(&rh);

	if (ret)
		return ret;
	ret = register_fprobe(&nest_probe, "version_proc_show", NULL);
	if (ret) {
		ufgraph_rethook_unregister(&rh);
		return ret;
	}
	if (!first)
		return 0;
	ret = ftrace_set_filter(&other_ops.ops, "version_proc_show", strlen("version_proc_show"), 0);
	if (!ret)
		ret = ufgraph_register(&other_ops);
	if (ret) {
		ftrace_free_filter(&other_ops.ops);
		unregister_fprobe(&nest_probe);
		ufgraph_rethook_unregister(&rh);
	}
	return ret;
}

static void __exit nest_exit_mod(void)
{
	if (first) {
		ufgraph_unregister(&other_ops);
		ftrace_free_filter(&other_ops.ops);
		pr_info("rethook_nest: other entries=%d returns=%d first=%d\n",
			atomic_read(&other_entries), atomic_read(&other_returns),
			atomic_read(&other_first));
	}
	unregister_fprobe(&nest_probe);
	ufgraph_rethook_unregister(&rh);
	pr_info("rethook_nest: entries=%d hooked=%d exits=%d rh_rets=%d rh_missed=%lu\n",
		atomic_read(&entries), atomic_read(&hooked), atomic_read(&exits),
		atomic_read(&rh_rets), rh.nmissed);
}

module_init(nest_init);
module_exit(nest_exit_mod);
MODULE_DESCRIPTION("A rethook hooked from inside an fprobe entry handler, for the same call");
MODULE_LICENSE("GPL");
