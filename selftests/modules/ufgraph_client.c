// SPDX-License-Identifier: GPL-2.0
/*
 * A C user of ufgraph's fgraph API, built only from <ufgraph/fgraph.h>: hooks the
 * entry and return of @func, stores data at entry and checks it at return, counts in
 * the per-task variable, and reports what it saw when unloaded:
 *
 *   ufgraph_client: entries=N returns=N data_ok=N data_bad=N
 *
 * Its parameters rereg and filter restart it and change its shared filter while it runs.
 */
#include <linux/atomic.h>
#include <linux/kallsyms.h>
#include <linux/limits.h>
#include <linux/ftrace.h>
#include <linux/module.h>
#include <linux/string.h>
#include <ufgraph/fgraph.h>

static char *func = "version_proc_show";
module_param(func, charp, 0444);
static bool shared;
module_param(shared, bool, 0444);
/* shared=1: a second glob for the shared filter (tests/81-hub-edges.sh). */
static char *func2;
module_param(func2, charp, 0444);

static atomic_t entries, returns, data_ok, data_bad, clock_back, reserve_null;
/* gops->idx as seen by the first entry that ran before ufgraph_register() returned. */
static bool registered;
static int early_idx = INT_MIN;
static bool bad_d;
static int bad_size, bad_depth;
static unsigned long bad_func, bad_magic, bad_trace_func;

struct client_data {
	unsigned long func;
	unsigned long magic;
};

static int client_entry(struct ufgraph_ent *trace, struct ufgraph_ops *gops,
			struct ftrace_regs *fregs)
{
	struct client_data *d;
	unsigned long *var;

	atomic_inc(&entries);
	if (!READ_ONCE(registered))
		cmpxchg(&early_idx, INT_MIN, gops->idx);
	d = ufgraph_reserve_data(gops->idx, sizeof(*d));
	if (d) {
		d->func = trace->func;
		d->magic = 0x5eedf00d;
	} else {
		atomic_inc(&reserve_null);
	}
	var = ufgraph_get_task_var(gops);
	if (var)
		(*var)++;
	return 1;
}

static void client_return(struct ufgraph_ret *trace, struct ufgraph_ops *gops,
			  struct ftrace_regs *fregs)
{
	struct client_data *d;
	int size = 0;

	atomic_inc(&returns);
	d = ufgraph_retrieve_data(gops->idx, &size);
	if (d && size == sizeof(*d) && d->func == trace->func && d->magic == 0x5eedf00d) {
		atomic_inc(&data_ok);
	} else if (atomic_inc_return(&data_bad) == 1) {
		/* The first bad one, in detail, printed at exit: which check failed. */
		bad_d = d != NULL;
		bad_size = size;
		bad_func = d ? d->func : 0;
		bad_magic = d ? d->magic : 0;
		bad_trace_func = trace->func;
		bad_depth = trace->depth;
	}
	/* trace_clock_local() is per CPU: a task that migrated may see it go backwards. */
	if (trace->rettime < trace->calltime)
		atomic_inc(&clock_back);
}

static struct ufgraph_ops client_ops = {
	.entryfunc = client_entry,
	.retfunc = client_return,
};

static int __init client_init(void)
{
	int ret;

	/* shared=1: ufgraph's shared filter (the hub); else a filter on our own ftrace_ops. */
	if (shared) {
		ret = ufgraph_set_filter(&client_ops, func, 0, 0);
		if (!ret && func2)
			ret = ufgraph_set_filter(&client_ops, func2, 0, 0);
	} else
		ret = ftrace_set_filter(&client_ops.ops, func, strlen(func), 0);
	if (ret)
		return ret;
	ret = ufgraph_register(&client_ops);
	if (ret) {
		if (shared)
			ufgraph_free_filter(&client_ops);
		else
			ftrace_free_filter(&client_ops.ops);
		return ret;
	}
	WRITE_ONCE(registered, true);
	pr_info("ufgraph_client: hooked %s as ops %d\n", func, client_ops.idx);
	/*
	 * A function ufgraph_register() itself calls once the ops is live (mutex_unlock) runs
	 * our entry callback before registration returns: it must already see our index.
	 */
	if (READ_ONCE(early_idx) != INT_MIN)
		pr_info("ufgraph_client: an entry during registration saw idx %d\n", READ_ONCE(early_idx));
	return 0;
}

static void __exit client_exit(void)
{
	ufgraph_unregister(&client_ops);
	if (shared)
		ufgraph_free_filter(&client_ops);
	else
		ftrace_free_filter(&client_ops.ops);
	if (atomic_read(&data_bad))
		pr_info("ufgraph_client: first bad data: d=%s size=%d func=%pS/%pS magic=%lx depth=%d reserve_null=%d\n",
			bad_d ? "yes" : "NULL", bad_size, (void *)bad_func, (void *)bad_trace_func,
			bad_magic, bad_depth, atomic_read(&reserve_null));
	pr_info("ufgraph_client: entries=%d returns=%d data_ok=%d data_bad=%d clock_back=%d\n",
		atomic_read(&entries), atomic_read(&returns), atomic_read(&data_ok),
		atomic_read(&data_bad), atomic_read(&clock_back));
}

/*
 * Writing to "rereg" unregisters the ops and registers it again with the filter it kept, as a
 * user that stops and restarts would; "rereg_ret" is what ufgraph_register() returned (the ops
 * stays unregistered after a failure).
 */
static int rereg_ret;
module_param(rereg_ret, int, 0444);
static int rereg_set(const char *val, const struct kernel_param *kp)
{
	ufgraph_unregister(&client_ops);
	WRITE_ONCE(rereg_ret, ufgraph_register(&client_ops));
	return 0;
}
static const struct kernel_param_ops rereg_ops = { .set = rereg_set };
module_param_cb(rereg, &rereg_ops, NULL, 0200);

/*
 * Writing "+GLOB" or "-GLOB" to "filter" adds or removes functions of the shared filter while
 * registered; "filter_ret" is what ufgraph_set_filter() returned.
 */
static int filter_ret;
module_param(filter_ret, int, 0444);
static int filter_set(const char *val, const struct kernel_param *kp)
{
	char glob[KSYM_NAME_LEN];

	if ((val[0] != '+' && val[0] != '-') || strscpy(glob, val + 1, sizeof(glob)) < 0)
		return -EINVAL;
	strim(glob);
	WRITE_ONCE(filter_ret, ufgraph_set_filter(&client_ops, glob, val[0] == '-', 0));
	return 0;
}
static const struct kernel_param_ops filter_ops = { .set = filter_set };
module_param_cb(filter, &filter_ops, NULL, 0200);

module_init(client_init);
module_exit(client_exit);
MODULE_DESCRIPTION("A C client of ufgraph's fgraph API, for the selftests");
MODULE_LICENSE("GPL");
