// SPDX-License-Identifier: GPL-2.0
/*
 * Module functions for the glob event tests (tests/65-event-globs.sh): ufgt_glob_one, _two and
 * _three, which the test's globs select, and ufgt_globx_four, which they must not. Writing N to
 * the "run" parameter calls each once with N, through volatile pointers so that no call is
 * folded away, and leaves the sum of their results in "sum": the callers' view of the return
 * values while they are hooked.
 *
 * Also a function whose arguments only the module's own BTF describes, for the BTF argument
 * test (tests/91-btf-module-args.sh): ufgt_btf_pair(p, k), with a struct of the module's, called
 * by each write to "run" with p = { .a = N, .b = -N, .name = "ufgt-pair" } and k = N * 3,
 * returning a + b + k (N * 3).
 *
 * And a function in the module's init text, for the init text test (tests/94-init-text.sh):
 * ufgt_glob_init(x), which the module's init calls once with 2 (x + 40: 42, or init fails).
 * With "hold=1" init first waits for a write to "release" (or a fatal signal to insmod), so
 * that the test can hook it while init runs; the loader frees it once init returns.
 */
#include <linux/completion.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/module.h>

int ufgt_glob_one(int x);
int ufgt_glob_two(int x);
int ufgt_glob_three(int x);
int ufgt_globx_four(int x);

noinline int ufgt_glob_one(int x)
{
	return x + 1;
}

noinline int ufgt_glob_two(int x)
{
	return x * 2;
}

noinline int ufgt_glob_three(int x)
{
	return x + 300;
}

noinline int ufgt_globx_four(int x)
{
	return x - 4;
}

static int (*volatile glob_fns[])(int) = {
	ufgt_glob_one, ufgt_glob_two, ufgt_glob_three, ufgt_globx_four
};

struct ufgt_pair {
	int a;
	long b;
	const char *name;
};

long ufgt_btf_pair(struct ufgt_pair *p, unsigned int k);

noinline long ufgt_btf_pair(struct ufgt_pair *p, unsigned int k)
{
	return p->a + p->b + k;
}

static long (*volatile pair_fn)(struct ufgt_pair *, unsigned int) = ufgt_btf_pair;
static struct ufgt_pair pair = { .name = "ufgt-pair" };

static int sum;
module_param(sum, int, 0444);

static int run_set(const char *val, const struct kernel_param *kp)
{
	int n, i, s = 0;
	int ret = kstrtoint(val, 0, &n);

	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(glob_fns); i++)
		s += glob_fns[i](n);
	pair.a = n;
	pair.b = -n;
	pair_fn(&pair, n * 3);
	WRITE_ONCE(sum, s);
	return 0;
}
static const struct kernel_param_ops run_ops = { .set = run_set };
module_param_cb(run, &run_ops, NULL, 0200);

static bool hold;
module_param(hold, bool, 0444);

static DECLARE_COMPLETION(released);

static int release_set(const char *val, const struct kernel_param *kp)
{
	complete(&released);
	return 0;
}
static const struct kernel_param_ops release_ops = { .set = release_set };
module_param_cb(release, &release_ops, NULL, 0200);

static noinline int __init ufgt_glob_init(int x)
{
	return x + 40;
}

static int (*volatile init_fn)(int) __initdata = ufgt_glob_init;

static int __init globfns_init(void)
{
	if (hold)
		wait_for_completion_killable(&released);
	return init_fn(2) == 42 ? 0 : -EINVAL;
}
module_init(globfns_init);

/* A module with an init function and none to exit cannot be unloaded. */
static void __exit globfns_exit(void)
{
}
module_exit(globfns_exit);

MODULE_DESCRIPTION("ufgraph tests: module functions for glob events");
MODULE_LICENSE("GPL");
