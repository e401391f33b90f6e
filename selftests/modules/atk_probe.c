// SPDX-License-Identifier: GPL-2.0
/*
 * Attack client: one exit probe on ufgraph (an fprobe with entry data, or a kretprobe of the
 * shim), whose handlers check everything they are handed, optionally with a second probe
 * registered and unregistered in a loop (flipping the first between the single exit probe's
 * own ways and the general way), the first one disabled and enabled in a loop, and handlers
 * that call probed functions (re-entry).
 *
 * Parameters:
 *   mode=fprobe|kretprobe     the primary probe (default fprobe)
 *   func=NAME                 its function (default atk_fn); ret is checked for atk_fn only
 *   words=N                   fprobe entry data in words, 0..15 (default 4; 0: none, NULL data)
 *   second=none|exit|entry|kret   a second probe toggled by a kthread (on func2)
 *   func2=NAME                its function (default: func)
 *   flip=0|1                  disable/enable the primary in a loop
 *   reenter=0|1|2             1: the entry handler calls atk_fn; 2: the exit handler does too
 *
 * At unload: "atk_probe: entries=N exits=N bad_ip=N bad_ret=N bad_data=N missed=N
 *   nmi=N hard=N soft=N task=N second_regs=N second_bad=N"
 * debugfs atk_probe/stats gives the same while loaded; atk_probe/ctl: "stop" stops the loops.
 */
#include <ufgraph/fprobe.h>
#include <ufgraph/kretprobe.h>
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

static char *mode = "fprobe";
module_param(mode, charp, 0444);
static char *func = "atk_fn";
module_param(func, charp, 0444);
static int words = 4;
module_param(words, int, 0444);
static char *second = "none";
module_param(second, charp, 0444);
static char *func2;
module_param(func2, charp, 0444);
static int flip;
module_param(flip, int, 0444);
static int reenter;
module_param(reenter, int, 0444);
static int flip_us = 200;
module_param(flip_us, int, 0444);
/* decline: the entry handler returns non-zero for odd arguments (no exit may follow). */
static int decline;
module_param(decline, int, 0444);
/* noentry: an fprobe without entry handler (its exit must see zeroed entry data). */
static int noentry;
module_param(noentry, int, 0444);
/* override: the exit handler makes calls whose argument is 0x4000xxxxxxxxxxxx return 5x + 7. */
static int override;
module_param(override, int, 0444);

static atomic_long_t bad_decline, bad_zero, overridden;

/* atk_target's, taken with __symbol_get only for reenter (no load-time dependency). */
static unsigned long (*atk_call)(unsigned long x);

static atomic_long_t entries, exits, bad_ip, bad_ret, bad_data, ctx[4];
static atomic_long_t second_regs, second_bad, second_exits;
/* 1: atk_fn's 3x + 1; 2: atk_rec's n(n+1)/2 + 1; 3: either (a glob over both). */
static int check_ret;

static bool ret_ok(unsigned long a, unsigned long r)
{
	switch (check_ret) {
	case 1:
		return r == a * 3 + 1;
	case 2:
		return r == a * (a + 1) / 2 + 1;
	case 3:
		return r == a * 3 + 1 || r == a * (a + 1) / 2 + 1;
	}
	return true;
}

#define MAGIC 0x5a17c0de00000000UL

static void count_ctx(void)
{
	if (in_nmi())
		atomic_long_inc(&ctx[0]);
	else if (in_hardirq())
		atomic_long_inc(&ctx[1]);
	else if (in_serving_softirq())
		atomic_long_inc(&ctx[2]);
	else
		atomic_long_inc(&ctx[3]);
}

/* fprobe mode */
static int fp_entry(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		    struct ftrace_regs *fregs, void *entry_data)
{
	unsigned long *d = entry_data;
	unsigned long a0 = ftrace_regs_get_argument(fregs, 0);
	int i;

	atomic_long_inc(&entries);
	if (!words) {
		/* words=0: no entry data; the handler must be given none. */
		if (d)
			atomic_long_inc(&bad_data);
		return decline && (a0 & 1);
	}
	d[0] = MAGIC ^ a0;
	if (words > 1)
		d[1] = entry_ip;
	if (words > 2)
		d[2] = ret_ip;
	for (i = 3; i < words; i++)
		d[i] = a0 + i;
	if (reenter && check_ret == 1 && atk_call(a0 ^ 1) != (a0 ^ 1) * 3 + 1)
		atomic_long_inc(&bad_ret);
	return decline && (a0 & 1);
}

static void fp_exit(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		    struct ftrace_regs *fregs, void *entry_data)
{
	unsigned long *d = entry_data;
	unsigned long a0;
	int i;

	atomic_long_inc(&exits);
	count_ctx();
	if (!words) {
		if (d)
			atomic_long_inc(&bad_data);
		if (!ret_ip)
			atomic_long_inc(&bad_ip);
		return;
	}
	a0 = d[0] ^ MAGIC;
	if (noentry) {
		for (i = 0; i < words; i++)
			if (d[i])
				atomic_long_inc(&bad_zero);
		return;
	}
	if (decline && (a0 & 1))
		atomic_long_inc(&bad_decline);
	if ((words > 1 && d[1] != entry_ip) || (words > 2 && d[2] != ret_ip) || !ret_ip)
		atomic_long_inc(&bad_ip);
	for (i = 3; i < words; i++)
		if (d[i] != a0 + i) {
			atomic_long_inc(&bad_data);
			break;
		}
	if (!ret_ok(a0, ftrace_regs_get_return_value(fregs)))
		atomic_long_inc(&bad_ret);
	if (override && (a0 >> 48) == 0x4000) {
		ftrace_regs_set_return_value(fregs, a0 * 5 + 7);
		atomic_long_inc(&overridden);
	}
	if (reenter > 1 && check_ret == 1 && atk_call(a0 ^ 2) != (a0 ^ 2) * 3 + 1)
		atomic_long_inc(&bad_ret);
}

static struct fprobe probe = {
	.entry_handler = fp_entry,
	.exit_handler = fp_exit,
};

/* kretprobe mode */
struct kdata {
	unsigned long magic;
	unsigned long arg;
	unsigned long pad[3];
};

static int kr_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kdata *d = (struct kdata *)ri->data;

	atomic_long_inc(&entries);
	d->arg = regs_get_kernel_argument(regs, 0);
	d->magic = MAGIC ^ d->arg;
	d->pad[0] = d->arg + 1;
	d->pad[2] = d->arg + 3;
	if (reenter && check_ret == 1 && atk_call(d->arg ^ 1) != (d->arg ^ 1) * 3 + 1)
		atomic_long_inc(&bad_ret);
	return decline && (d->arg & 1);
}

static int kr_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kdata *d = (struct kdata *)ri->data;

	atomic_long_inc(&exits);
	count_ctx();
	if (d->magic != (MAGIC ^ d->arg) || d->pad[0] != d->arg + 1 || d->pad[2] != d->arg + 3)
		atomic_long_inc(&bad_data);
	if (get_kretprobe(ri) == NULL || instruction_pointer(regs) != get_kretprobe_retaddr(ri))
		atomic_long_inc(&bad_ip);
	if (decline && (d->arg & 1))
		atomic_long_inc(&bad_decline);
	if (!ret_ok(d->arg, regs_return_value(regs)))
		atomic_long_inc(&bad_ret);
	if (override && (d->arg >> 48) == 0x4000) {
		regs_set_return_value(regs, d->arg * 5 + 7);
		atomic_long_inc(&overridden);
	}
	if (reenter > 1 && check_ret == 1 && atk_call(d->arg ^ 2) != (d->arg ^ 2) * 3 + 1)
		atomic_long_inc(&bad_ret);
	return 0;
}

static struct kretprobe krp = {
	.handler = kr_ret,
	.entry_handler = kr_entry,
	.data_size = sizeof(struct kdata),
	.maxactive = 1,
};

/* The second probe, toggled. */
static int s_entry(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		   struct ftrace_regs *fregs, void *entry_data)
{
	unsigned long *d = entry_data;

	if (d)
		d[0] = entry_ip ^ MAGIC;
	return 0;
}

static void s_exit(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		   struct ftrace_regs *fregs, void *entry_data)
{
	unsigned long *d = entry_data;

	atomic_long_inc(&second_exits);
	if (d[0] != (entry_ip ^ MAGIC))
		atomic_long_inc(&second_bad);
}

static struct fprobe probe2 = {
	.entry_handler = s_entry,
	.exit_handler = s_exit,
	.entry_data_size = 2 * sizeof(long),
};

static int k2_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_long_inc(&second_exits);
	return 0;
}

static struct kretprobe krp2 = {
	.handler = k2_ret,
};

static struct task_struct *looper;
static bool primary_fprobe;

static int loop_fn(void *unused)
{
	bool s_exit_kind = !strcmp(second, "exit"), s_entry_kind = !strcmp(second, "entry");
	bool s_kret = !strcmp(second, "kret");
	const char *f2 = func2 ? func2 : func;
	unsigned long n = 0;
	int ret;

	if (s_entry_kind)
		probe2.exit_handler = NULL;
	krp2.kp.symbol_name = f2;
	while (!kthread_should_stop()) {
		if (s_exit_kind || s_entry_kind) {
			ret = register_fprobe(&probe2, f2, NULL);
			if (!ret) {
				atomic_long_inc(&second_regs);
				usleep_range(flip_us, flip_us * 2);
				unregister_fprobe(&probe2);
			}
		} else if (s_kret) {
			krp2.kp.addr = NULL;
			krp2.kp.flags = 0;
			ret = register_kretprobe(&krp2);
			if (!ret) {
				atomic_long_inc(&second_regs);
				usleep_range(flip_us, flip_us * 2);
				unregister_kretprobe(&krp2);
			}
		}
		if (flip && primary_fprobe) {
			disable_fprobe(&probe);
			usleep_range(flip_us / 2, flip_us);
			enable_fprobe(&probe);
		}
		usleep_range(flip_us, flip_us * 2);
		n++;
	}
	return 0;
}

static void stop_loop(void)
{
	if (looper) {
		kthread_stop(looper);
		looper = NULL;
	}
}

static int stats_show(struct seq_file *m, void *v)
{
	seq_printf(m, "entries=%ld exits=%ld bad_ip=%ld bad_ret=%ld bad_data=%ld missed=%lu nmi=%ld hard=%ld soft=%ld task=%ld second_regs=%ld second_bad=%ld second_exits=%ld bad_decline=%ld bad_zero=%ld overridden=%ld\n",
		   atomic_long_read(&entries), atomic_long_read(&exits), atomic_long_read(&bad_ip),
		   atomic_long_read(&bad_ret), atomic_long_read(&bad_data),
		   primary_fprobe ? probe.nmissed : (unsigned long)krp.nmissed,
		   atomic_long_read(&ctx[0]), atomic_long_read(&ctx[1]), atomic_long_read(&ctx[2]),
		   atomic_long_read(&ctx[3]), atomic_long_read(&second_regs),
		   atomic_long_read(&second_bad), atomic_long_read(&second_exits),
		   atomic_long_read(&bad_decline), atomic_long_read(&bad_zero), atomic_long_read(&overridden));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t len, loff_t *pos)
{
	char buf[16];

	if (len >= sizeof(buf) || copy_from_user(buf, ubuf, len))
		return -EINVAL;
	buf[len] = 0;
	if (!strncmp(buf, "stop", 4))
		stop_loop();
	else
		return -EINVAL;
	return len;
}
static const struct file_operations ctl_fops = { .write = ctl_write };
static struct dentry *dir;

static int __init atk_probe_init(void)
{
	int ret;

	check_ret = !strcmp(func, "atk_fn") ? 1 : !strcmp(func, "atk_rec") ? 2 :
		    !strncmp(func, "atk_", 4) ? 3 : 0;
	if (reenter) {
		atk_call = __symbol_get("atk_fn");
		if (!atk_call)
			return -ENOENT;
	}
	if (!strcmp(mode, "kretprobe")) {
		krp.kp.symbol_name = func;
		ret = register_kretprobe(&krp);
	} else {
		if (words < 0 || words > 15)
			return -EINVAL;
		probe.entry_data_size = words * sizeof(long);
		if (noentry)
			probe.entry_handler = NULL;
		primary_fprobe = true;
		ret = register_fprobe(&probe, func, NULL);
	}
	if (ret) {
		pr_err("atk_probe: register %s on %s failed: %d\n", mode, func, ret);
		if (atk_call)
			__symbol_put("atk_fn");
		return ret;
	}
	if (strcmp(second, "none") || flip) {
		looper = kthread_run(loop_fn, NULL, "atk_probe_loop");
		if (IS_ERR(looper))
			looper = NULL;
	}
	dir = debugfs_create_dir("atk_probe", NULL);
	debugfs_create_file("stats", 0444, dir, NULL, &stats_fops);
	debugfs_create_file("ctl", 0200, dir, NULL, &ctl_fops);
	pr_info("atk_probe: %s on %s registered\n", mode, func);
	return 0;
}

static void __exit atk_probe_exit(void)
{
	debugfs_remove_recursive(dir);
	stop_loop();
	if (primary_fprobe)
		unregister_fprobe(&probe);
	else
		unregister_kretprobe(&krp);
	if (atk_call)
		__symbol_put("atk_fn");
	pr_info("atk_probe: entries=%ld exits=%ld bad_ip=%ld bad_ret=%ld bad_data=%ld missed=%lu nmi=%ld hard=%ld soft=%ld task=%ld second_regs=%ld second_bad=%ld second_exits=%ld bad_decline=%ld bad_zero=%ld overridden=%ld\n",
		atomic_long_read(&entries), atomic_long_read(&exits), atomic_long_read(&bad_ip),
		atomic_long_read(&bad_ret), atomic_long_read(&bad_data),
		primary_fprobe ? probe.nmissed : (unsigned long)krp.nmissed,
		atomic_long_read(&ctx[0]), atomic_long_read(&ctx[1]), atomic_long_read(&ctx[2]),
		atomic_long_read(&ctx[3]), atomic_long_read(&second_regs),
		atomic_long_read(&second_bad), atomic_long_read(&second_exits),
		atomic_long_read(&bad_decline), atomic_long_read(&bad_zero), atomic_long_read(&overridden));
}

module_init(atk_probe_init);
module_exit(atk_probe_exit);
MODULE_DESCRIPTION("ufgraph attack client: a checking exit probe, with churn around it");
MODULE_LICENSE("GPL");
