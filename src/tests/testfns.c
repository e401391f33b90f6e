// SPDX-License-Identifier: GPL-2.0
/*
 * Test fixtures for the KUnit suites (linked into ufgraph_kunit.ko only): plain,
 * traceable C functions with known results. Rust functions are not ftrace-
 * instrumented in 6.12, so hook targets have to be C.
 */
#include <linux/compiler.h>
#include <linux/init.h>
#include <linux/cpu.h>
#include <linux/smp.h>
#include <linux/irqflags.h>
#include <linux/preempt.h>
#include "../helpers/helpers.h"

noinline int ufg_test_add(int a, int b)
{
	return a + b;
}

/*
 * A traced function in the module's init text, which the module loader frees once the
 * module is live (right after the LIVE notifiers, where KUnit runs this module's suites):
 * the location list's LIVE edit must take it out (tests/fprobe/registry.rs). Nothing calls it.
 */
static noinline int __init __used ufg_test_init_text(int a)
{
	return a + 1;
}

/*
 * Its address, for the tests (which run from the LIVE notifier, init text still there): a
 * reference from outside the init text, which __ref declares on purpose.
 */
unsigned long __ref ufg_test_init_text_addr(void)
{
	return (unsigned long)ufg_test_init_text;
}

noinline long ufg_test_mul(long a, long b)
{
	return a * b;
}

/*
 * Recursion the compiler cannot turn into a loop: the self-call goes through a
 * volatile function pointer, so every level enters through ftrace.
 */
static int (*volatile ufg_test_recurse_fp)(int n);

noinline int ufg_test_recurse(int n)
{
	if (n <= 0)
		return 0;
	return ufg_test_recurse_fp(n - 1) + 1;
}

static int (*volatile ufg_test_recurse_fp)(int n) = ufg_test_recurse;

/*
 * Self tail call at the same return slot: the tail call goes through a volatile pointer
 * (musttail: a jmp, so the inner entry finds the outer call's return address, the trampoline,
 * in the same slot).
 */
static int (*volatile ufg_test_tail_fp)(int n);

noinline int ufg_test_tail(int n)
{
	if (n <= 0)
		return 7;
	__attribute__((musttail)) return ufg_test_tail_fp(n - 1);
}

static int (*volatile ufg_test_tail_fp)(int n) = ufg_test_tail;

noinline long ufg_test_inner(long x)
{
	return x * 3;
}

noinline long ufg_test_outer(long x)
{
	return ufg_test_inner(x + 1) + 1;
}

/*
 * Calls @fn while its own frame is live: a test does there what needs process context
 * (unregistering the ops that hooked this call).
 */
noinline long ufg_test_call(long (*fn)(long), long x)
{
	return fn(x) + 1;
}

/* Calls ufg_test_add, for stack traces taken in its return: the real caller must show. */
noinline int ufg_test_caller(int a)
{
	int r = ufg_test_add(a, 1);

	barrier();
	return r + 1;
}

/*
 * The function's own return address as it sees it: ufgraph's return trampoline while its return
 * is hooked, the real call site otherwise.
 */
noinline unsigned long ufg_test_retaddr(void)
{
	return (unsigned long)__builtin_return_address(0);
}

/*
 * Runs fn(arg) on @cpu (in its IPI handler, interrupts off) and waits for it:
 * the per-CPU pointer test sets and reads another CPU's own copy, which only
 * its owner may write as a plain store.
 */
int ufg_test_on_cpu(unsigned int cpu, void (*fn)(void *arg), void *arg)
{
	return smp_call_function_single(cpu, fn, arg, 1);
}

/* CPU hotplug for the tests: remove_cpu() and add_cpu(), 0 or an errno. */
int ufg_test_cpu_down(unsigned int cpu)
{
	return remove_cpu(cpu);
}

int ufg_test_cpu_up(unsigned int cpu)
{
	return add_cpu(cpu);
}

/*
 * Runs fn(arg) with interrupts off and the preempt count raised by @offset
 * (SOFTIRQ_OFFSET, HARDIRQ_OFFSET or NMI_OFFSET + HARDIRQ_OFFSET: a softirq, a
 * hardirq or an NMI as interrupt_context_level() sees them), so that the guard's
 * bit in each context is compared with ftrace's own in the same context.
 */
int ufg_test_in_fake_context(unsigned int offset, int (*fn)(void *arg), void *arg)
{
	unsigned long flags;
	int r;

	local_irq_save(flags);
	preempt_count_add(offset);
	r = fn(arg);
	preempt_count_sub(offset);
	local_irq_restore(flags);
	return r;
}
