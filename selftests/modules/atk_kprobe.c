// SPDX-License-Identifier: GPL-2.0
/*
 * Attack helper: the kernel's own return hookers (not ufgraph's) on a function, checking
 * what they see: a kretprobe (kprobes on ftrace, rethook) and a kernel fprobe (rethook),
 * each recording atk_fn's argument at the entry and checking 3x + 1 at the return.
 * Parameters: func=NAME (default atk_fn), kret=0|1, fprobe=0|1 (default both), maxactive.
 * At unload: "atk_kprobe: kret entries=N returns=N bad=N missed=N fprobe entries=N exits=N
 * bad=N missed=N"
 */
#include <linux/atomic.h>
#include <linux/fprobe.h>
#include <linux/kprobes.h>
#include <linux/module.h>

static char *func = "atk_fn";
module_param(func, charp, 0444);
static int kret = 1;
module_param(kret, int, 0444);
static int fprobe = 1;
module_param(fprobe, int, 0444);
static int maxactive = 256;
module_param(maxactive, int, 0444);

static bool check_ret;
static atomic_long_t k_ent, k_ret, k_bad, f_ent, f_ext, f_bad;
/* Which check failed: k_bad_{magic,ret,ip}, f_bad_{magic,ret}; the first bad values seen. */
static atomic_long_t kbm, kbr, kbi, fbm, fbr;
static atomic_t first_k, first_f;
static unsigned long fk[4], ff[4];

struct kd {
	unsigned long arg, magic;
};

static int k_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kd *d = (struct kd *)ri->data;

	atomic_long_inc(&k_ent);
	d->arg = regs_get_kernel_argument(regs, 0);
	d->magic = ~d->arg;
	return 0;
}

static int k_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kd *d = (struct kd *)ri->data;

	bool m = d->magic != ~d->arg, r = check_ret && regs_return_value(regs) != d->arg * 3 + 1;
	/*
	 * Not instruction_pointer(regs) against get_kretprobe_retaddr(ri): stacked hookers save
	 * each other's trampolines as the return address (the kernel's own do too).
	 */
	bool i = !instruction_pointer(regs);

	atomic_long_inc(&k_ret);
	if (m)
		atomic_long_inc(&kbm);
	if (r)
		atomic_long_inc(&kbr);
	if (i)
		atomic_long_inc(&kbi);
	if (m || r || i) {
		atomic_long_inc(&k_bad);
		if (atomic_inc_return(&first_k) == 1) {
			fk[0] = d->arg;
			fk[1] = regs_return_value(regs);
			fk[2] = instruction_pointer(regs);
			fk[3] = get_kretprobe_retaddr(ri);
		}
	}
	return 0;
}

static struct kretprobe krp = {
	.handler = k_handler,
	.entry_handler = k_entry,
	.data_size = sizeof(struct kd),
};

static int f_entry(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		   struct pt_regs *regs, void *data)
{
	struct kd *d = data;

	atomic_long_inc(&f_ent);
	d->arg = regs_get_kernel_argument(regs, 0);
	d->magic = ~d->arg;
	return 0;
}

static void f_exit(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
		   struct pt_regs *regs, void *data)
{
	struct kd *d = data;

	bool m = d->magic != ~d->arg, r = check_ret && regs_return_value(regs) != d->arg * 3 + 1;

	atomic_long_inc(&f_ext);
	if (m)
		atomic_long_inc(&fbm);
	if (r)
		atomic_long_inc(&fbr);
	if (m || r) {
		atomic_long_inc(&f_bad);
		if (atomic_inc_return(&first_f) == 1) {
			ff[0] = d->arg;
			ff[1] = regs_return_value(regs);
			ff[2] = ret_ip;
			ff[3] = d->magic ^ ~d->arg;
		}
	}
}

static struct fprobe kfp = {
	.entry_handler = f_entry,
	.exit_handler = f_exit,
	.entry_data_size = sizeof(struct kd),
};

static int __init atk_kprobe_init(void)
{
	int ret;

	check_ret = !strcmp(func, "atk_fn");
	if (kret) {
		krp.kp.symbol_name = func;
		krp.maxactive = maxactive;
		ret = register_kretprobe(&krp);
		if (ret) {
			pr_err("atk_kprobe: register_kretprobe %s: %d\n", func, ret);
			return ret;
		}
	}
	if (fprobe) {
		kfp.nr_maxactive = maxactive;
		ret = register_fprobe(&kfp, func, NULL);
		if (ret) {
			pr_err("atk_kprobe: register_fprobe %s: %d\n", func, ret);
			if (kret)
				unregister_kretprobe(&krp);
			return ret;
		}
	}
	pr_info("atk_kprobe: on %s (kret=%d fprobe=%d)\n", func, kret, fprobe);
	return 0;
}

static void __exit atk_kprobe_exit(void)
{
	if (fprobe)
		unregister_fprobe(&kfp);
	if (kret)
		unregister_kretprobe(&krp);
	pr_info("atk_kprobe: kret entries=%ld returns=%ld bad=%ld missed=%d fprobe entries=%ld exits=%ld bad=%ld missed=%lu\n",
		atomic_long_read(&k_ent), atomic_long_read(&k_ret), atomic_long_read(&k_bad),
		krp.nmissed, atomic_long_read(&f_ent), atomic_long_read(&f_ext),
		atomic_long_read(&f_bad), kfp.nmissed);
	pr_info("atk_kprobe: kret bad magic=%ld ret=%ld ip=%ld first arg=%lx ret=%lx ip=%pS retaddr=%pS; fprobe bad magic=%ld ret=%ld first arg=%lx ret=%lx ret_ip=%pS entry ret_ip=%pS\n",
		atomic_long_read(&kbm), atomic_long_read(&kbr), atomic_long_read(&kbi),
		fk[0], fk[1], (void *)fk[2], (void *)fk[3], atomic_long_read(&fbm),
		atomic_long_read(&fbr), ff[0], ff[1], (void *)ff[2], (void *)ff[3]);
}

module_init(atk_kprobe_init);
module_exit(atk_kprobe_exit);
MODULE_DESCRIPTION("ufgraph attack helper: the kernel's kretprobe and fprobe, checking");
MODULE_LICENSE("GPL");
