// SPDX-License-Identifier: GPL-2.0
/*
 * An fprobe user written against upstream's v6.14 fprobe API. Its only ufgraph-specific
 * line is the include: <ufgraph/fprobe.h> in place of <linux/fprobe.h>. It exercises
 * register_fprobe() with a filter and a notfilter, register_fprobe_syms(),
 * register_fprobe_ips(), entry data, disable/enable, fprobe_is_registered() and
 * unregister_fprobe(), and reports what it saw in the log:
 *
 *   fprobe_client: MODE entries=N exits=N bad=N missed=N unregister=E stale=N
 *
 * Parameters: mode=filter|syms|ips, filter=GLOB, notfilter=GLOB, syms=NAME.
 * Writing /sys/kernel/debug/fprobe_client/reregister unregisters the probe and registers
 * the same structure again: calls in flight across it must not reach the new registration's
 * exit handler with the old one's entry data (stale counts those that do).
 */
#include <ufgraph/fprobe.h>	/* was: #include <linux/fprobe.h> */
#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/fs.h>

static char *mode = "filter";
module_param(mode, charp, 0444);
static char *filter = "version_proc_show";
module_param(filter, charp, 0444);
static char *notfilter;
module_param(notfilter, charp, 0444);
static unsigned long addr;
module_param(addr, ulong, 0444);

static atomic_t entries, exits, bad, stale;
/* Which registration of client_probe is current (bumped by reregister). */
static int generation;

struct client_data {
	unsigned long ip;
	unsigned long arg0;
	int generation;
};

static int client_entry(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
			struct ftrace_regs *fregs, void *entry_data)
{
	struct client_data *d = entry_data;

	atomic_inc(&entries);
	d->ip = entry_ip;
	d->arg0 = ftrace_regs_get_argument(fregs, 0);
	d->generation = READ_ONCE(generation);
	return 0;
}

static void client_exit(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
			struct ftrace_regs *fregs, void *entry_data)
{
	struct client_data *d = entry_data;

	atomic_inc(&exits);
	if (d->ip != entry_ip || !ret_ip)
		atomic_inc(&bad);
	if (d->generation != READ_ONCE(generation))
		atomic_inc(&stale);
}

static struct fprobe client_probe = {
	.entry_handler = client_entry,
	.exit_handler = client_exit,
	.entry_data_size = sizeof(struct client_data),
};

static int client_register(void)
{
	int ret;

	if (!strcmp(mode, "syms")) {
		const char *syms[] = { filter };

		ret = register_fprobe_syms(&client_probe, syms, 1);
	} else if (!strcmp(mode, "ips")) {
		ret = register_fprobe_ips(&client_probe, &addr, 1);
	} else {
		ret = register_fprobe(&client_probe, filter, notfilter);
	}
	if (ret)
		pr_info("fprobe_client: register (%s) failed: %d\n", mode, ret);
	return ret;
}

/*
 * A debugfs file, not a module parameter: a parameter's set callback runs under the module's
 * param_lock, and registration reads tracefs (seq_file locks), an order lockdep flags against
 * any reader of a parameter file.
 */
static ssize_t reregister_write(struct file *f, const char __user *buf, size_t len, loff_t *pos)
{
	int ret = unregister_fprobe(&client_probe);

	if (ret)
		return ret;
	WRITE_ONCE(generation, generation + 1);
	ret = client_register();
	pr_info("fprobe_client: registered again (generation %d): %d\n", generation, ret);
	return ret ? ret : len;
}

static const struct file_operations reregister_fops = {
	.write = reregister_write,
};
static struct dentry *client_dir;

static int __init client_init(void)
{
	int ret = client_register();

	if (ret)
		return ret;
	if (!fprobe_is_registered(&client_probe))
		return -EIO;
	/* Soft-disable and re-enable once: the flags are the upstream inline helpers'. */
	disable_fprobe(&client_probe);
	if (!fprobe_disabled(&client_probe))
		return -EIO;
	enable_fprobe(&client_probe);
	client_dir = debugfs_create_dir("fprobe_client", NULL);
	debugfs_create_file("reregister", 0200, client_dir, NULL, &reregister_fops);
	pr_info("fprobe_client: registered (%s)\n", mode);
	return 0;
}

static void __exit client_exit_mod(void)
{
	int ret;

	debugfs_remove(client_dir);
	ret = unregister_fprobe(&client_probe);

	pr_info("fprobe_client: %s entries=%d exits=%d bad=%d missed=%lu unregister=%d stale=%d\n", mode,
		atomic_read(&entries), atomic_read(&exits), atomic_read(&bad),
		client_probe.nmissed, ret, atomic_read(&stale));
}

module_init(client_init);
module_exit(client_exit_mod);
MODULE_DESCRIPTION("An upstream-style fprobe client built against <ufgraph/fprobe.h>");
MODULE_LICENSE("GPL");
