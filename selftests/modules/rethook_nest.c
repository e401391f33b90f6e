// SPDX-License-Identifier: GPL-2.0
/*
 * ufgraph_rethook_hook() called from an fprobe's entry handler, for the call being entered:
 * refused (the rethook's nmissed counts it), the fprobe's own exit handler still runs. Found by
 * session 4's review: the nested hook used to push a second frame on the same return slot under
 * the one being built, and the return then popped the wrong one (lost exits, or a panic when the
 * entry handler declined). On unload it reports
 *
 *   rethook_nest: entries=N hooked=N exits=N rh_rets=N rh_missed=N
 */
#include <ufgraph/fprobe.h>
#include <ufgraph/rethook.h>
#include <linux/atomic.h>
#include <linux/module.h>

static int skip;
module_param(skip, int, 0644);
static atomic_t entries, exits, rh_rets, hooked;

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
	if (ret)
		ufgraph_rethook_unregister(&rh);
	return ret;
}

static void __exit nest_exit_mod(void)
{
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
