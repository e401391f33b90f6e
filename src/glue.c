// SPDX-License-Identifier: GPL-2.0
/*
 * C glue for ufgraph; see glue.h. Compiled twice: once into ufgraph.ko, once
 * (through glue_kunit.c, with UFG_KUNIT defined) into ufgraph_kunit.ko, which
 * must not export anything so that both modules can coexist.
 */
#include <linux/ftrace.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <kunit/test.h>

#include "glue.h"

static char *func;
module_param(func, charp, 0444);
MODULE_PARM_DESC(func, "function (or glob) whose calls the counter hooks, e.g. vfs_read or 'vfs_*'");

const char *ufg_param_func(void)
{
	return func;
}

unsigned long ufg_fregs_ip(const struct ftrace_regs *fregs)
{
	return ftrace_regs_get_instruction_pointer((struct ftrace_regs *)fregs);
}

unsigned long ufg_fregs_sp(const struct ftrace_regs *fregs)
{
	return ftrace_regs_get_stack_pointer((struct ftrace_regs *)fregs);
}

unsigned long ufg_fregs_arg(const struct ftrace_regs *fregs, unsigned int n)
{
	return ftrace_regs_get_argument((struct ftrace_regs *)fregs, n);
}

unsigned long ufg_fregs_retval(const struct ftrace_regs *fregs)
{
	return ftrace_regs_get_return_value((struct ftrace_regs *)fregs);
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

struct module *ufg_this_module(void)
{
	return THIS_MODULE;
}
