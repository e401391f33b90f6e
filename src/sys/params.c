// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters of the demo users (src/ufgraph_main.rs: `func=` for the entry counter,
 * `graph=` for the entry/return counter): module_param() is a macro that 6.12's kernel crate
 * cannot express for a module with a C part. Read-only (0444) in sysfs: each is read once, at
 * load, where the demo hooks its functions; writing one later would change nothing.
 */

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
