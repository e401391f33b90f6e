// SPDX-License-Identifier: GPL-2.0
/*
 * A kretprobe module in the shape of the kernel's kretprobe sample: an entry_handler that
 * timestamps into the instance data, a handler that reads the return value, maxactive set
 * low on purpose. The only ufgraph-specific line is the include. When unloaded it reports:
 *
 *   kretprobe_client: FUNC entries=N returns=N bad=N missed=N
 */
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <ufgraph/kretprobe.h>	/* the one added line: kretprobes on ufgraph */

static char func_name[KSYM_NAME_LEN] = "kernel_clone";
module_param_string(func, func_name, KSYM_NAME_LEN, 0644);
static int maxactive = 5;
module_param(maxactive, int, 0444);

static atomic_t entries, returns, bad;

struct my_data {
	ktime_t entry_stamp;
	unsigned long magic;
};

static int entry_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct my_data *data = (struct my_data *)ri->data;

	atomic_inc(&entries);
	data->entry_stamp = ktime_get();
	data->magic = 0xc0ffee;
	return 0;
}
NOKPROBE_SYMBOL(entry_handler);

static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct my_data *data = (struct my_data *)ri->data;
	s64 delta = ktime_to_ns(ktime_sub(ktime_get(), data->entry_stamp));

	atomic_inc(&returns);
	if (data->magic != 0xc0ffee || delta < 0 || get_kretprobe(ri) == NULL ||
	    instruction_pointer(regs) != get_kretprobe_retaddr(ri))
		atomic_inc(&bad);
	return 0;
}
NOKPROBE_SYMBOL(ret_handler);

static struct kretprobe my_kretprobe = {
	.handler	= ret_handler,
	.entry_handler	= entry_handler,
	.data_size	= sizeof(struct my_data),
};

static int __init kretprobe_init(void)
{
	int ret;

	my_kretprobe.kp.symbol_name = func_name;
	my_kretprobe.maxactive = maxactive;
	ret = register_kretprobe(&my_kretprobe);
	if (ret < 0) {
		pr_err("kretprobe_client: register_kretprobe failed, returned %d\n", ret);
		return ret;
	}
	pr_info("kretprobe_client: planted return probe at %s: %p\n",
		my_kretprobe.kp.symbol_name, my_kretprobe.kp.addr);
	return 0;
}

static void __exit kretprobe_exit(void)
{
	unregister_kretprobe(&my_kretprobe);
	pr_info("kretprobe_client: %s entries=%d returns=%d bad=%d missed=%d\n", func_name,
		atomic_read(&entries), atomic_read(&returns), atomic_read(&bad),
		my_kretprobe.nmissed);
}

module_init(kretprobe_init)
module_exit(kretprobe_exit)
MODULE_DESCRIPTION("A kretprobe-sample-shaped client of ufgraph's kretprobe shim");
MODULE_LICENSE("GPL");
