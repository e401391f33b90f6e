// SPDX-License-Identifier: GPL-2.0
/*
 * A chain of tail calls tc_outer -> tcu_a -(tail)-> tcu_b -(tail)-> tcx_c, run by a kthread that
 * blocks in tcx_c until "release" is written: the three inner calls share one return slot, on
 * which ufgraph, function_graph and kretprobes can interleave their copies of each other's
 * trampolines (tests/80-rmmod-tail-chain.sh; found by session 4's second review).
 *   go=1       the kthread enters tc_outer()
 *   release=1  tcx_c returns
 *   state      0 idle, 1 blocked in tcx_c, 2 done
 */
#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/delay.h>

int tcx_c(int x);
int tcu_b(int x);
int tcu_a(int x);
int tc_outer(int x);

static DECLARE_COMPLETION(go_c);
static DECLARE_COMPLETION(rel_c);
static int state;
module_param(state, int, 0444);

noinline int tcx_c(int x)
{
	WRITE_ONCE(state, 1);
	wait_for_completion(&rel_c);
	return x + 1;
}

noinline int tcu_b(int x)
{
	__attribute__((musttail)) return tcx_c(x + 1);
}

noinline int tcu_a(int x)
{
	__attribute__((musttail)) return tcu_b(x + 1);
}

noinline int tc_outer(int x)
{
	int r = tcu_a(x);

	barrier();
	return r + 1;
}

static int tc_thread(void *unused)
{
	wait_for_completion(&go_c);
	pr_info("tailchain: result %d\n", tc_outer(0));
	WRITE_ONCE(state, 2);
	return 0;
}

static int go_set(const char *val, const struct kernel_param *kp)
{
	complete(&go_c);
	return 0;
}
static const struct kernel_param_ops go_ops = { .set = go_set };
module_param_cb(go, &go_ops, NULL, 0200);

static int rel_set(const char *val, const struct kernel_param *kp)
{
	complete(&rel_c);
	return 0;
}
static const struct kernel_param_ops rel_ops = { .set = rel_set };
module_param_cb(release, &rel_ops, NULL, 0200);

static int __init tc_init(void)
{
	struct task_struct *t = kthread_run(tc_thread, NULL, "tailchain");

	return IS_ERR(t) ? PTR_ERR(t) : 0;
}

static void __exit tc_exit(void)
{
	complete(&go_c);
	complete(&rel_c);
	while (READ_ONCE(state) != 2)
		msleep(10);
}

module_init(tc_init);
module_exit(tc_exit);
MODULE_DESCRIPTION("ufgraph tests: a tail-call chain on one return slot");
MODULE_LICENSE("GPL");
