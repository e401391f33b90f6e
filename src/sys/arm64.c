// SPDX-License-Identifier: GPL-2.0
/*
 * arm64 (src/fgraph/arch/arm64.rs): what teardown needs to hand return addresses back at unload
 * (ftrace_regs and pt_regs layouts, the shadow call stack, pointer authentication), and the
 * pt_regs views of ftrace_regs the kretprobe shim hands its users (ftrace_partial_regs() is a
 * static inline).
 */

#ifdef CONFIG_ARM64
#include <linux/sched/task_stack.h>
#include <linux/thread_info.h>
#include <linux/scs.h>
#include <asm/cpufeature.h>

unsigned long ufg_arm64_peek(unsigned long addr)
{
	/* Another task's stack, as the kernel's unwinder reads it: no KASAN check. */
	return READ_ONCE_NOCHECK(*(unsigned long *)addr);
}

bool ufg_arm64_scs_enabled(void)
{
	return scs_is_enabled();
}

bool ufg_arm64_kernel_pac(void)
{
	return IS_ENABLED(CONFIG_ARM64_PTR_AUTH_KERNEL) && system_supports_address_auth();
}

bool ufg_arm64_scs(const struct task_struct *t, unsigned long *base, unsigned long *sp)
{
#ifdef CONFIG_SHADOW_CALL_STACK
	*base = (unsigned long)task_scs(t);
	*sp = (unsigned long)task_scs_sp(t);
	return *base && *sp >= *base && *sp - *base <= SCS_SIZE - sizeof(long);
#else
	return false;
#endif
}

unsigned long ufg_arm64_strip(unsigned long addr)
{
	/* A return address a frame record holds, with its PAC (if any) removed. */
	return ptrauth_strip_kernel_insn_pac(addr);
}

unsigned long ufg_arm64_saved_fp(const struct task_struct *t)
{
	return thread_saved_fp(t);
}

void ufg_regs_from_entry(struct ftrace_regs *fregs, struct pt_regs *out)
{
	memset(out, 0, sizeof(*out));
	ftrace_partial_regs(fregs, out);
	out->syscallno = NO_SYSCALL;
}

void ufg_regs_from_exit(struct ftrace_regs *fregs, struct pt_regs *out, unsigned long ret_addr)
{
	/* The trampoline's registers: x0..x8, fp, sp as the function left them, lr = x30. */
	memset(out, 0, sizeof(*out));
	ftrace_partial_regs(fregs, out);
	out->pc = ret_addr;
	out->syscallno = NO_SYSCALL;
}
#endif
