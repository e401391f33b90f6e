// SPDX-License-Identifier: GPL-2.0
/*
 * Attack fixture: functions to probe, called from every context at once, each caller
 * checking the value it gets back.
 *
 *   atk_fn(x)   returns 3x + 1: called by kthreads (task context), an hrtimer (hardirq), a
 *               soft hrtimer (softirq) and an NMI handler (NMIs sent to the other CPUs from
 *               the hrtimer).
 *   atk_rec(n)  recurses n deep (returns n(n+1)/2 + 1).
 *   atk_nap(x)  sleeps (usleep_range) and returns 3x + 1.
 *
 * debugfs atk_target/ctl: "go" starts everything, "stop" stops it (waits for the callers),
 * "rec N" makes one atk_rec(N) call from the writer, "nap" one atk_nap call.
 * debugfs atk_target/stats: calls per context and wrong returns.
 * Parameters: threads=N kthreads (default 2), hr_us=period of the timers (default 50),
 * nmi=0|1, naps=0|1 (the kthreads call atk_nap too), rec=N (the kthreads call atk_rec(N)).
 */
#include <linux/atomic.h>
#include <linux/cpu.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#ifdef CONFIG_X86
#include <asm/apic.h>
#include <asm/nmi.h>
#endif

static int threads = 2;
module_param(threads, int, 0444);
static int hr_us = 50;
module_param(hr_us, int, 0444);
static int nmi = 1;
module_param(nmi, int, 0444);
static int naps;
module_param(naps, int, 0444);
static int rec;
module_param(rec, int, 0444);
/* churn=N: N spawner kthreads creating short-lived kthreads that make checked calls and exit
 * (task_structs freed and reused while the probes run). mig=1: a kthread moving the workers
 * between CPUs all the time (frames live in atk_nap across migrations). */
static int churn;
module_param(churn, int, 0444);
static int mig;
module_param(mig, int, 0444);
/* tail=1: the workers also call atk_tail(x), which tail-calls atk_tail2(x) (one return slot). */
static int tail;
module_param(tail, int, 0444);

unsigned long atk_fn(unsigned long x);
unsigned long atk_rec(unsigned long n);
unsigned long atk_nap(unsigned long x);
unsigned long atk_tail(unsigned long x);
unsigned long atk_tail2(unsigned long x);

enum { C_TASK, C_HARD, C_SOFT, C_NMI, C_REC, C_NAP, C_CHURN, C_CHK, C_TAIL, C_NR };
static const char *const cname[C_NR] = { "task", "hardirq", "softirq", "nmi", "rec", "nap", "churn", "chk", "tail" };
static atomic_t churn_live = ATOMIC_INIT(0);
static atomic_long_t churn_spawned, migrations;
static struct task_struct **spawners, *migrator;
static atomic_long_t calls[C_NR], wrong[C_NR];
static atomic_long_t nmis_sent, nmis_handled;
static unsigned long last_arg, last_ret;

noinline unsigned long atk_fn(unsigned long x)
{
	asm volatile("" : "+r"(x));
	return x * 3 + 1;
}
EXPORT_SYMBOL_GPL(atk_fn);

noinline unsigned long atk_rec(unsigned long n)
{
	volatile unsigned long keep = n;
	unsigned long r;

	if (!n)
		return 1;
	r = atk_rec(n - 1);
	return r + keep;
}
EXPORT_SYMBOL_GPL(atk_rec);

noinline unsigned long atk_tail2(unsigned long x)
{
	asm volatile("" : "+r"(x));
	return x * 3 + 1;
}
EXPORT_SYMBOL_GPL(atk_tail2);

noinline unsigned long atk_tail(unsigned long x)
{
	asm volatile("" : "+r"(x));
	return atk_tail2(x);
}
EXPORT_SYMBOL_GPL(atk_tail);

noinline unsigned long atk_nap(unsigned long x)
{
	usleep_range(50, 200);
	asm volatile("" : "+r"(x));
	return x * 3 + 1;
}
EXPORT_SYMBOL_GPL(atk_nap);

static void check(int c, unsigned long x)
{
	atomic_long_inc(&calls[c]);
	if (atk_fn(x) != x * 3 + 1)
		atomic_long_inc(&wrong[c]);
}

static DEFINE_PER_CPU(struct hrtimer, hard_timer);
static DEFINE_PER_CPU(struct hrtimer, soft_timer);
static bool running;
static struct task_struct **tasks;
static DEFINE_MUTEX(ctl_lock);

#ifdef CONFIG_X86
static DEFINE_PER_CPU(atomic_t, nmi_pending);

static int atk_nmi(unsigned int type, struct pt_regs *regs)
{
	/* One sent NMI each: with an xchg, a latched second NMI found the count taken by the
	 * first and went to the kernel as an unknown NMI ("Uhhuh. NMI received"). */
	if (atomic_dec_if_positive(this_cpu_ptr(&nmi_pending)) < 0)
		return NMI_DONE;
	atomic_long_inc(&nmis_handled);
	check(C_NMI, (unsigned long)regs->ip);
	return NMI_HANDLED;
}

static void send_nmis(void)
{
	int cpu, me = smp_processor_id();

	for_each_online_cpu(cpu) {
		if (cpu == me)
			continue;
		atomic_inc(per_cpu_ptr(&nmi_pending, cpu));
		atomic_long_inc(&nmis_sent);
		__apic_send_IPI_mask(cpumask_of(cpu), NMI_VECTOR);
	}
}
#else
/* No NMIs to send here (arm64's pseudo-NMIs are not on in the test kernel). */
static void send_nmis(void)
{
}
#endif

static enum hrtimer_restart hard_fn(struct hrtimer *t)
{
	check(C_HARD, (unsigned long)t ^ jiffies);
	if (nmi)
		send_nmis();
	if (!READ_ONCE(running))
		return HRTIMER_NORESTART;
	hrtimer_forward_now(t, ns_to_ktime((u64)(hr_us) * 1000));
	return HRTIMER_RESTART;
}

static enum hrtimer_restart soft_fn(struct hrtimer *t)
{
	check(C_SOFT, (unsigned long)t ^ jiffies);
	if (!READ_ONCE(running))
		return HRTIMER_NORESTART;
	hrtimer_forward_now(t, ns_to_ktime((u64)(hr_us * 3) * 1000));
	return HRTIMER_RESTART;
}

static int worker(void *arg)
{
	unsigned long i = (unsigned long)arg << 32;

	while (!kthread_should_stop()) {
		check(C_TASK, i++);
		if (rec && !(i & 63)) {
			atomic_long_inc(&calls[C_REC]);
			if (atk_rec(rec) != (unsigned long)rec * (rec + 1) / 2 + 1)
				atomic_long_inc(&wrong[C_REC]);
		}
		if (tail && !(i & 3)) {
			atomic_long_inc(&calls[C_TAIL]);
			if (atk_tail(i) != i * 3 + 1)
				atomic_long_inc(&wrong[C_TAIL]);
		}
		if (naps && !(i & 15)) {
			atomic_long_inc(&calls[C_NAP]);
			if (atk_nap(i) != i * 3 + 1)
				atomic_long_inc(&wrong[C_NAP]);
		}
		/* A real sleep now and then: RCU Tasks waits for voluntary switches. */
		if (!(i & 4095))
			usleep_range(10, 20);
		else if (!(i & 255))
			cond_resched();
	}
	return 0;
}

static int churn_fn(void *arg)
{
	unsigned long x = (unsigned long)arg;
	int i;

	for (i = 0; i < 8; i++)
		check(C_CHURN, x + i);
	atomic_long_inc(&calls[C_CHURN]);
	if (atk_nap(x) != x * 3 + 1)
		atomic_long_inc(&wrong[C_CHURN]);
	if (rec) {
		atomic_long_inc(&calls[C_CHURN]);
		if (atk_rec(rec) != (unsigned long)rec * (rec + 1) / 2 + 1)
			atomic_long_inc(&wrong[C_CHURN]);
	}
	check(C_CHURN, x ^ 0x55);
	atomic_dec(&churn_live);
	return 0;
}

static int spawner(void *arg)
{
	unsigned long n = (unsigned long)arg << 40;

	while (!kthread_should_stop()) {
		struct task_struct *t;

		atomic_inc(&churn_live);
		t = kthread_run(churn_fn, (void *)n++, "atk_churn");
		if (IS_ERR(t)) {
			atomic_dec(&churn_live);
			msleep(1);
			continue;
		}
		atomic_long_inc(&churn_spawned);
		/* At most a few alive at once: their task_structs go back to the slab quickly. */
		while (atomic_read(&churn_live) > 4 && !kthread_should_stop())
			usleep_range(20, 50);
	}
	return 0;
}

static int migrator_fn(void *arg)
{
	unsigned int k = 0;

	while (!kthread_should_stop()) {
		int i, cpu;

		/*
		 * Under cpus_read_lock(), to an active CPU: a kthread may be given any online CPU,
		 * and one pinned to a CPU going down made the kernel warn "Dying CPU not properly
		 * vacated!" (sched_cpu_dying) and in dl_server_start (the fixture's fault, not
		 * ufgraph's).
		 */
		cpus_read_lock();
		for (i = 0; i < threads; i++) {
			if (!tasks[i])
				continue;
			cpu = cpumask_nth((k + i) % num_active_cpus(), cpu_active_mask);
			if (cpu < nr_cpu_ids && !set_cpus_allowed_ptr(tasks[i], cpumask_of(cpu)))
				atomic_long_inc(&migrations);
		}
		cpus_read_unlock();
		k++;
		usleep_range(30, 80);
	}
	return 0;
}

static void start_cpu_timer(void *unused)
{
	hrtimer_start(this_cpu_ptr(&hard_timer), ns_to_ktime((u64)(hr_us) * 1000), HRTIMER_MODE_REL_PINNED_HARD);
	hrtimer_start(this_cpu_ptr(&soft_timer), ns_to_ktime((u64)(hr_us * 3) * 1000), HRTIMER_MODE_REL_PINNED_SOFT);
}

static void stop_all(void)
{
	int i, cpu;

	if (!running)
		return;
	WRITE_ONCE(running, false);
	if (migrator)
		kthread_stop(migrator);
	migrator = NULL;
	for (i = 0; i < churn; i++)
		if (spawners[i])
			kthread_stop(spawners[i]);
	while (atomic_read(&churn_live) > 0)
		msleep(5);
	/* The last ones may still be between their decrement and their exit. */
	msleep(20);
	for (i = 0; i < threads; i++)
		if (tasks[i])
			kthread_stop(tasks[i]);
	for_each_possible_cpu(cpu) {
		hrtimer_cancel(per_cpu_ptr(&hard_timer, cpu));
		hrtimer_cancel(per_cpu_ptr(&soft_timer, cpu));
	}
}

static void start_all(void)
{
	int i;

	if (running)
		return;
	WRITE_ONCE(running, true);
	for (i = 0; i < threads; i++) {
		tasks[i] = kthread_run(worker, (void *)(unsigned long)i, "atk_worker/%d", i);
		if (IS_ERR(tasks[i]))
			tasks[i] = NULL;
	}
	for (i = 0; i < churn; i++) {
		spawners[i] = kthread_run(spawner, (void *)(unsigned long)(i + 1), "atk_spawner/%d", i);
		if (IS_ERR(spawners[i]))
			spawners[i] = NULL;
	}
	if (mig) {
		migrator = kthread_run(migrator_fn, NULL, "atk_migrator");
		if (IS_ERR(migrator))
			migrator = NULL;
	}
	if (hr_us > 0)
		on_each_cpu(start_cpu_timer, NULL, 1);
}

static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t len, loff_t *pos)
{
	char buf[32];
	unsigned long n;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	mutex_lock(&ctl_lock);
	if (!strncmp(buf, "go", 2)) {
		start_all();
	} else if (!strncmp(buf, "stop", 4)) {
		stop_all();
	} else if (sscanf(buf, "rec %lu", &n) == 1) {
		atomic_long_inc(&calls[C_REC]);
		if (atk_rec(n) != n * (n + 1) / 2 + 1)
			atomic_long_inc(&wrong[C_REC]);
	} else if (sscanf(buf, "call %lx", &n) == 1) {
		last_arg = n;
		last_ret = atk_fn(n);
	} else if (sscanf(buf, "chk %lu", &n) == 1) {
		/* From a fresh process each time (a shell's subshell): checked, outside the lock. */
		mutex_unlock(&ctl_lock);
		atomic_long_add(2, &calls[C_CHK]);
		if (atk_fn(n) != n * 3 + 1)
			atomic_long_inc(&wrong[C_CHK]);
		if (atk_nap(n) != n * 3 + 1)
			atomic_long_inc(&wrong[C_CHK]);
		return len;
	} else if (!strncmp(buf, "nap", 3)) {
		atomic_long_inc(&calls[C_NAP]);
		if (atk_nap(7) != 22)
			atomic_long_inc(&wrong[C_NAP]);
	} else {
		mutex_unlock(&ctl_lock);
		return -EINVAL;
	}
	mutex_unlock(&ctl_lock);
	return len;
}

static int stats_show(struct seq_file *m, void *v)
{
	int c;
	long tw = 0;

	for (c = 0; c < C_NR; c++) {
		seq_printf(m, "%s %ld %ld\n", cname[c], atomic_long_read(&calls[c]),
			   atomic_long_read(&wrong[c]));
		tw += atomic_long_read(&wrong[c]);
	}
	seq_printf(m, "wrong %ld\n", tw);
	seq_printf(m, "last %lx %lx\n", last_arg, last_ret);
	seq_printf(m, "nmis %ld %ld\n", atomic_long_read(&nmis_sent), atomic_long_read(&nmis_handled));
	seq_printf(m, "spawned %ld\n", atomic_long_read(&churn_spawned));
	seq_printf(m, "migrations %ld\n", atomic_long_read(&migrations));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

static const struct file_operations ctl_fops = { .write = ctl_write };
static struct dentry *dir;

static int __init atk_init(void)
{
	int cpu;

	tasks = kcalloc(threads, sizeof(*tasks), GFP_KERNEL);
	spawners = kcalloc(churn + 1, sizeof(*spawners), GFP_KERNEL);
	if (!tasks || !spawners) {
		kfree(tasks);
		kfree(spawners);
		return -ENOMEM;
	}
	for_each_possible_cpu(cpu) {
		hrtimer_init(per_cpu_ptr(&hard_timer, cpu), CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		per_cpu_ptr(&hard_timer, cpu)->function = hard_fn;
		hrtimer_init(per_cpu_ptr(&soft_timer, cpu), CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_SOFT);
		per_cpu_ptr(&soft_timer, cpu)->function = soft_fn;
	}
#ifdef CONFIG_X86
	if (nmi && register_nmi_handler(NMI_LOCAL, atk_nmi, 0, "atk_nmi")) {
		kfree(tasks);
		kfree(spawners);
		return -EIO;
	}
#else
	nmi = 0;
#endif
	dir = debugfs_create_dir("atk_target", NULL);
	debugfs_create_file("ctl", 0200, dir, NULL, &ctl_fops);
	debugfs_create_file("stats", 0444, dir, NULL, &stats_fops);
	return 0;
}

static void __exit atk_exit(void)
{
	debugfs_remove_recursive(dir);
	mutex_lock(&ctl_lock);
	stop_all();
	mutex_unlock(&ctl_lock);
#ifdef CONFIG_X86
	if (nmi) {
		unregister_nmi_handler(NMI_LOCAL, "atk_nmi");
		synchronize_rcu();
	}
#endif
	kfree(tasks);
	kfree(spawners);
}

module_init(atk_init);
module_exit(atk_exit);
MODULE_DESCRIPTION("ufgraph attack fixture: probed functions called from every context");
MODULE_LICENSE("GPL");
