// SPDX-License-Identifier: GPL-2.0
/*
 * Registers (src/sys/ftrace.rs; src/tests/kretprobe.rs checks the shim's pt_regs): stack
 * arguments from ftrace_regs and pt_regs accessors are static inlines per architecture. The
 * register arguments themselves are read inline (src/fgraph/arch/hot_*.rs).
 */

unsigned long ufg_fregs_arg(const struct ftrace_regs *fregs, unsigned int n)
{
	return ftrace_regs_get_argument((struct ftrace_regs *)fregs, n);
}

unsigned long ufg_regs_return_value(struct pt_regs *regs)
{
	return regs_return_value(regs);
}

unsigned long ufg_regs_arg(struct pt_regs *regs, unsigned int n)
{
	return regs_get_kernel_argument(regs, n);
}
