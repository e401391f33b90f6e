// SPDX-License-Identifier: GPL-2.0
/*
 * A C user of ufgraph's fgraph API, built only from <ufgraph/fgraph.h>: hooks the
 * entry and return of @func, stores data at entry and checks it at return, counts in
 * the per-task variable, and reports what it saw when unloaded:
 *
 *   ufgraph_client: entries=N returns=N data_ok=N data_bad=N
 *
 * Its parameter cmd restarts it and changes its shared filter while it runs.
 */
#include <linux/atomic.h>
#include <linux/limits.h>
#include <linux/ftrace.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/trace_clock.h>
#include <linux/workqueue.h>
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
	/* The call's time, as a user that wants durations takes it (no times in ufgraph_ret). */
	u64 calltime;
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
		d->calltime = trace_clock_local();
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
		/* trace_clock_local() is per CPU: a task that migrated may see it go backwards. */
		if (trace_clock_local() < d->calltime)
			atomic_inc(&clock_back);
	} else if (atomic_inc_return(&data_bad) == 1) {
		/* The first bad one, in detail, printed at exit: which check failed. */
		bad_d = d != NULL;
		bad_size = size;
		bad_func = d ? d->func : 0;
		bad_magic = d ? d->magic : 0;
		bad_trace_func = trace->func;
		bad_depth = trace->depth;
	}
}

static struct ufgraph_ops client_ops = {
	.entryfunc = client_entry,
	.retfunc = client_return,
};

/*
 * Commands written to "cmd", run by a work item (not under the parameter's lock, which
 * lockdep would chain through ufgraph's read of ftrace's function list to the sysfs reads of
 * "cmd_ret"); "cmd_ret" is 1 while one runs, then its result:
 *   r        unregister and register again with the filter the ops kept, as a user that
 *            stops and restarts would (the ops stays unregistered after a failure)
 *   +ADDR    add the function at hex ADDR to the shared filter (ufgraph_set_filter_ips())
 *   -ADDR    remove it
 */
static char cmd[32];
static int cmd_ret;
module_param(cmd_ret, int, 0444);

static void cmd_work_fn(struct work_struct *work)
{
	unsigned long ip;
	int ret;

	if (cmd[0] == 'r') {
		ufgraph_unregister(&client_ops);
		ret = ufgraph_register(&client_ops);
	} else {
		ret = kstrtoul(cmd + 1, 16, &ip);
		if (!ret)
			ret = ufgraph_set_filter_ips(&client_ops, &ip, 1, cmd[0] == '-', 0);
	}
	WRITE_ONCE(cmd_ret, ret);
}
static DECLARE_WORK(cmd_work, cmd_work_fn);

static int cmd_set(const char *val, const struct kernel_param *kp)
{
	if (READ_ONCE(cmd_ret) == 1)
		return -EBUSY;
	if ((val[0] != 'r' && val[0] != '+' && val[0] != '-') || strscpy(cmd, val, sizeof(cmd)) < 0)
		return -EINVAL;
	strim(cmd);
	WRITE_ONCE(cmd_ret, 1);
	schedule_work(&cmd_work);
	return 0;
}
static const struct kernel_param_ops cmd_ops = { .set = cmd_set };
module_param_cb(cmd, &cmd_ops, NULL, 0200);

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
	flush_work(&cmd_work);
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

module_init(client_init);
module_exit(client_exit);
MODULE_DESCRIPTION("A C client of ufgraph's fgraph API, for the selftests");
MODULE_LICENSE("GPL");
