// SPDX-License-Identifier: GPL-2.0
/*
 * ufgraph's benchmark client: the kernel's own return hooks and ufgraph's, side by side,
 * on one noinline target in this module, driven from a shell (selftests/bench.sh) through
 * /sys/kernel/debug/ufgraph_bench/ctl. Each command written to ctl runs at once; reading
 * ctl gives its result, one line of "key=value" words (scripts/bench.sh and
 * host/bench-report parse them):
 *
 *   hook KIND...        register hooks on the target (see hook_one() for the kinds)
 *   unhook              unregister everything "hook" or "mem" registered
 *   cost CHUNKS CALLS   call the target CHUNKS x CALLS times, each chunk with interrupts
 *                       off, timed with ktime_get_ns(): median and min ps per call
 *   funcs (file)        write function addresses, one hex number per line (appends)
 *   clearfuncs, nfuncs  forget them; count them
 *   attach KIND N CAP   attach one probe (ufprobe, kfprobe, ufprobe_exit, kfprobe_exit) or
 *                       one kprobe per function (kprobe) to the first N functions, then
 *                       detach; kprobes stop after CAP seconds ("capped")
 *   second FIRST KIND N with a probe of kind FIRST on the first N functions, attach and
 *                       detach a second probe of KIND (same API) there, timed; then count
 *                       ftrace's patching of call sites for each step (see run_second())
 *   mem KIND P          register P probes of KIND (kfprobe_exit, kretprobe, ufprobe_exit,
 *                       ukretprobe) on the target, and keep them (kinds add up)
 *   unmem               unregister what "mem" registered
 *   conc CALLS          one kthread per online CPU, each calling the target CALLS times,
 *                       all at once; reports calls, hits and nmissed
 *   sizes               the structure sizes the memory figures are computed from
 *   profarm             the target's and the go flag's addresses, for a debugger
 *   profile             wait (up to 60 s) until a debugger attached to QEMU sets the go flag,
 *                       then call the target once with interrupts off: the debugger
 *                       single-steps that one call (scripts/bench.sh --profile)
 *
 * It is a client of both APIs: the kernel's <linux/fprobe.h> and <linux/kprobes.h>, and
 * ufgraph's C API with UFGRAPH_NO_UPSTREAM_NAMES (the upstream names stay the kernel's).
 */
#define UFGRAPH_NO_UPSTREAM_NAMES
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fprobe.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/objpool.h>
#include <linux/percpu.h>
#include <linux/rethook.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <ufgraph/fgraph.h>
#include <ufgraph/fprobe.h>
#include <ufgraph/kretprobe.h>

#define MAX_GOPS 16
#define MAX_CHUNKS 512

/* ---- the target ---------------------------------------------------------------------- */

static noinline int ufgraph_bench_target(int x)
{
	barrier();
	return x + 1;
}

static int sink;

/* ---- counters: per CPU, so that the concurrency run does not bounce a cache line ------- */

enum { C_BARE, C_KFP_E, C_KFP_X, C_KRP, C_UFP_E, C_UFP_X, C_UKRP, C_UG_E, C_UG_X, C_KP, NC };
static const char *const cname[NC] = {
	"bare", "kfp_entry", "kfp_exit", "kretprobe", "ufp_entry", "ufp_exit", "ukretprobe",
	"ug_entry", "ug_exit", "kprobe",
};
static DEFINE_PER_CPU(unsigned long [NC], cnt);

static unsigned long cnt_sum(int c)
{
	unsigned long s = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		s += per_cpu(cnt, cpu)[c];
	return s;
}

static void cnt_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu(cnt, cpu), 0, sizeof(per_cpu(cnt, cpu)));
}

/* ---- the hooks ------------------------------------------------------------------------- */

static void notrace bare_cb(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			    struct ftrace_regs *fregs)
{
	this_cpu_inc(cnt[C_BARE]);
}

static int notrace kfp_entry(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,
			     struct pt_regs *regs, void *data)
{
	this_cpu_inc(cnt[C_KFP_E]);
	return 0;
}

static void notrace kfp_exit(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,
			     struct pt_regs *regs, void *data)
{
	this_cpu_inc(cnt[C_KFP_X]);
}

static int notrace krp_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	this_cpu_inc(cnt[C_KRP]);
	return 0;
}

static int notrace kp_pre(struct kprobe *p, struct pt_regs *regs)
{
	this_cpu_inc(cnt[C_KP]);
	return 0;
}

static int notrace ufp_entry(struct ufgraph_fprobe *fp, unsigned long ip, unsigned long ret_ip,
			     struct ftrace_regs *fregs, void *data)
{
	this_cpu_inc(cnt[C_UFP_E]);
	return 0;
}

static void notrace ufp_exit(struct ufgraph_fprobe *fp, unsigned long ip, unsigned long ret_ip,
			     struct ftrace_regs *fregs, void *data)
{
	this_cpu_inc(cnt[C_UFP_X]);
}

static int notrace ukrp_handler(struct ufgraph_kretprobe_instance *ri, struct pt_regs *regs)
{
	this_cpu_inc(cnt[C_UKRP]);
	return 0;
}

static int notrace ug_entry(struct ufgraph_ent *trace, struct ufgraph_ops *gops,
			    struct ftrace_regs *fregs)
{
	this_cpu_inc(cnt[C_UG_E]);
	return 1;
}

static void notrace ug_ret(struct ufgraph_ret *trace, struct ufgraph_ops *gops,
			   struct ftrace_regs *fregs)
{
	this_cpu_inc(cnt[C_UG_X]);
}

/* What is registered now: one of each single hook, or arrays of probes ("mem"). */
static struct ftrace_ops bare_ops;
static bool bare_on;
static struct fprobe kfp;
static bool kfp_on;
static struct kretprobe krp;
static bool krp_on;
static struct ufgraph_fprobe ufp;
static bool ufp_on;
static struct ufgraph_kretprobe ukrp;
static bool ukrp_on;
static struct ufgraph_ops ugops[MAX_GOPS];
static int ug_n;

/* "mem": P probes of each kind at once, each array with its own count. */
static struct fprobe *mem_kfp;
static struct kretprobe **mem_krp;
static struct ufgraph_fprobe *mem_ufp;
static struct ufgraph_kretprobe **mem_ukrp;
static int mem_kfp_n, mem_krp_n, mem_ufp_n, mem_ukrp_n;

static void unmem_all(void)
{
	int i;

	for (i = 0; i < mem_kfp_n; i++)
		unregister_fprobe(&mem_kfp[i]);
	for (i = 0; i < mem_ufp_n; i++)
		ufgraph_unregister_fprobe(&mem_ufp[i]);
	if (mem_krp_n)
		unregister_kretprobes(mem_krp, mem_krp_n);
	if (mem_ukrp_n)
		ufgraph_unregister_kretprobes(mem_ukrp, mem_ukrp_n);
	for (i = 0; mem_krp && i < mem_krp_n; i++)
		kfree(mem_krp[i]);
	for (i = 0; mem_ukrp && i < mem_ukrp_n; i++)
		kfree(mem_ukrp[i]);
	kvfree(mem_kfp);
	kvfree(mem_ufp);
	kvfree(mem_krp);
	kvfree(mem_ukrp);
	mem_kfp = NULL;
	mem_ufp = NULL;
	mem_krp = NULL;
	mem_ukrp = NULL;
	mem_kfp_n = mem_krp_n = mem_ufp_n = mem_ukrp_n = 0;
}

#define TARGET ((unsigned long)ufgraph_bench_target)

static void kfp_init(struct fprobe *fp, bool exit)
{
	memset(fp, 0, sizeof(*fp));
	fp->entry_handler = kfp_entry;
	if (exit)
		fp->exit_handler = kfp_exit;
}

static void ufp_init(struct ufgraph_fprobe *fp, bool exit)
{
	memset(fp, 0, sizeof(*fp));
	fp->entry_handler = ufp_entry;
	if (exit)
		fp->exit_handler = ufp_exit;
}

static void krp_init(struct kretprobe *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->kp.addr = (kprobe_opcode_t *)TARGET;
	rp->handler = krp_handler;
}

static void ukrp_init(struct ufgraph_kretprobe *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->kp.addr = (kprobe_opcode_t *)TARGET;
	rp->handler = ukrp_handler;
}

/*
 * Kinds: ftrace_ops (an ftrace_ops whose callback counts), kfprobe / kfprobe_exit (the
 * kernel's fprobe, entry only / entry and exit), kretprobe (the kernel's), ufprobe /
 * ufprobe_exit (ufgraph's fprobe), ukretprobe (ufgraph's kretprobe shim), ufgraphN (N
 * ufgraph graph ops, each hooking entry and return).
 */
static int hook_one(const char *kind)
{
	unsigned long addr = TARGET;
	int ret, n;

	if (!strcmp(kind, "none"))
		return 0;
	if (!strcmp(kind, "ftrace_ops")) {
		if (bare_on)
			return -EBUSY;
		memset(&bare_ops, 0, sizeof(bare_ops));
		bare_ops.func = bare_cb;
		ret = ftrace_set_filter_ip(&bare_ops, addr, 0, 0);
		if (!ret)
			ret = register_ftrace_function(&bare_ops);
		if (ret) {
			ftrace_free_filter(&bare_ops);
			return ret;
		}
		bare_on = true;
		return 0;
	}
	if (!strcmp(kind, "kfprobe") || !strcmp(kind, "kfprobe_exit")) {
		if (kfp_on)
			return -EBUSY;
		kfp_init(&kfp, !strcmp(kind, "kfprobe_exit"));
		ret = register_fprobe_ips(&kfp, &addr, 1);
		kfp_on = !ret;
		return ret;
	}
	if (!strcmp(kind, "kretprobe")) {
		if (krp_on)
			return -EBUSY;
		krp_init(&krp);
		ret = register_kretprobe(&krp);
		krp_on = !ret;
		return ret;
	}
	if (!strcmp(kind, "ufprobe") || !strcmp(kind, "ufprobe_exit")) {
		if (ufp_on)
			return -EBUSY;
		ufp_init(&ufp, !strcmp(kind, "ufprobe_exit"));
		ret = ufgraph_register_fprobe_ips(&ufp, &addr, 1);
		ufp_on = !ret;
		return ret;
	}
	if (!strcmp(kind, "ukretprobe")) {
		if (ukrp_on)
			return -EBUSY;
		ukrp_init(&ukrp);
		ret = ufgraph_register_kretprobe(&ukrp);
		ukrp_on = !ret;
		return ret;
	}
	if (sscanf(kind, "ufgraph%d", &n) == 1 && n > 0 && n <= MAX_GOPS) {
		if (ug_n)
			return -EBUSY;
		for (; ug_n < n; ug_n++) {
			struct ufgraph_ops *g = &ugops[ug_n];

			memset(g, 0, sizeof(*g));
			g->entryfunc = ug_entry;
			g->retfunc = ug_ret;
			/* ufgraph's shared filter: all the ops on the one hub ftrace_ops. */
			ret = ufgraph_set_filter_ips(g, &addr, 1, 0, 0);
			if (!ret)
				ret = ufgraph_register(g);
			if (ret) {
				ufgraph_free_filter(g);
				return ret;
			}
		}
		return 0;
	}
	return -EINVAL;
}

static void unhook_all(void)
{
	if (bare_on) {
		unregister_ftrace_function(&bare_ops);
		ftrace_free_filter(&bare_ops);
		bare_on = false;
	}
	if (kfp_on) {
		unregister_fprobe(&kfp);
		kfp_on = false;
	}
	if (krp_on) {
		unregister_kretprobe(&krp);
		krp_on = false;
	}
	if (ufp_on) {
		ufgraph_unregister_fprobe(&ufp);
		ufp_on = false;
	}
	if (ukrp_on) {
		ufgraph_unregister_kretprobe(&ukrp);
		ukrp_on = false;
	}
	for (; ug_n > 0; ug_n--) {
		ufgraph_unregister(&ugops[ug_n - 1]);
		ufgraph_free_filter(&ugops[ug_n - 1]);
	}
	unmem_all();
}

/* The nmissed counts of whatever is registered. */
static unsigned long nmissed(void)
{
	unsigned long n = 0;

	if (kfp_on)
		n += kfp.nmissed;
	if (krp_on)
		n += krp.nmissed + krp.kp.nmissed;
	if (ufp_on)
		n += ufp.nmissed;
	if (ukrp_on)
		n += ukrp.nmissed;
	return n;
}

/* ---- output ---------------------------------------------------------------------------- */

static char out[4096];
static size_t out_len;

static __printf(1, 2) void emit(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out_len += vscnprintf(out + out_len, sizeof(out) - out_len, fmt, ap);
	va_end(ap);
}

static void emit_counts(void)
{
	int c;

	for (c = 0; c < NC; c++) {
		unsigned long s = cnt_sum(c);

		if (s)
			emit(" %s=%lu", cname[c], s);
	}
	emit(" nmissed=%lu", nmissed());
}

/* ---- cost ------------------------------------------------------------------------------ */

static u64 chunk_ns[MAX_CHUNKS];

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static int run_cost(unsigned int chunks, unsigned int calls)
{
	unsigned int c, i;
	unsigned long flags;
	u64 t0, t1, total = 0;
	int s = 0;

	if (!chunks || chunks > MAX_CHUNKS || !calls)
		return -EINVAL;
	cnt_reset();
	/* One warm-up chunk: first-call effects (a task's first hooked frame, cold caches). */
	for (c = 0; c <= chunks; c++) {
		local_irq_save(flags);
		t0 = ktime_get_ns();
		for (i = 0; i < calls; i++)
			s += ufgraph_bench_target(i);
		t1 = ktime_get_ns();
		local_irq_restore(flags);
		if (c)
			chunk_ns[c - 1] = t1 - t0;
		cond_resched();
	}
	WRITE_ONCE(sink, s);
	for (c = 0; c < chunks; c++)
		total += chunk_ns[c];
	sort(chunk_ns, chunks, sizeof(u64), cmp_u64, NULL);
	/* ps per call: ns per chunk * 1000 / calls */
	emit("cost calls=%llu median_ps=%llu min_ps=%llu mean_ps=%llu",
	     (u64)chunks * calls, div_u64(chunk_ns[chunks / 2] * 1000, calls),
	     div_u64(chunk_ns[0] * 1000, calls), div64_u64(total * 1000, (u64)chunks * calls));
	emit_counts();
	return 0;
}

/* ---- one call for a debugger to single-step --------------------------------------------- */

/* Set by the debugger (QEMU's gdbstub) once its breakpoint on the target is in place. */
static int profile_go;

static int run_profile(void)
{
	unsigned long flags;
	int i, s;

	/*
	 * One call first, not stepped: as in the cost loops, the call stepped is warm (this
	 * task's shadow stack in its CPU's cache, ufgraph's and the kernel's code paths taken once).
	 */
	local_irq_save(flags);
	s = ufgraph_bench_target(0);
	local_irq_restore(flags);
	WRITE_ONCE(sink, s);
	/* Sleeping, not spinning: both CPUs wait in the kernel, where the debugger's write lands. */
	for (i = 0; i < 6000 && !READ_ONCE(profile_go); i++)
		msleep(10);
	if (!READ_ONCE(profile_go))
		return -ETIMEDOUT;
	WRITE_ONCE(profile_go, 0);
	local_irq_save(flags);
	s = ufgraph_bench_target(1);
	local_irq_restore(flags);
	WRITE_ONCE(sink, s);
	emit("profile ret=0");
	emit_counts();
	return 0;
}

/* ---- mass attach ----------------------------------------------------------------------- */

static unsigned long *funcs;
static int nfuncs, funcs_cap;

static int add_func(unsigned long a)
{
	if (nfuncs == funcs_cap) {
		int cap = funcs_cap ? funcs_cap * 2 : 4096;
		unsigned long *n = kvmalloc_array(cap, sizeof(*n), GFP_KERNEL);

		if (!n)
			return -ENOMEM;
		if (funcs)
			memcpy(n, funcs, nfuncs * sizeof(*n));
		kvfree(funcs);
		funcs = n;
		funcs_cap = cap;
	}
	funcs[nfuncs++] = a;
	return 0;
}

static int attach_kprobes(int n, unsigned int cap_s)
{
	struct kprobe *kps, **ok;
	int i, nok = 0, refused = 0, tried = 0;
	u64 t0, t1, t2, cap = (u64)cap_s * NSEC_PER_SEC;
	int first_err = 0;

	kps = kvcalloc(n, sizeof(*kps), GFP_KERNEL);
	ok = kvcalloc(n, sizeof(*ok), GFP_KERNEL);
	if (!kps || !ok) {
		kvfree(kps);
		kvfree(ok);
		return -ENOMEM;
	}
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++) {
		int ret;

		if (ktime_get_ns() - t0 > cap)
			break;
		kps[i].addr = (kprobe_opcode_t *)funcs[i];
		kps[i].pre_handler = kp_pre;
		tried++;
		ret = register_kprobe(&kps[i]);
		if (ret) {
			refused++;
			if (!first_err)
				first_err = ret;
		} else {
			ok[nok++] = &kps[i];
		}
		cond_resched();
	}
	t1 = ktime_get_ns();
	unregister_kprobes(ok, nok);
	t2 = ktime_get_ns();
	emit("attach kind=kprobe n=%d tried=%d attached=%d refused=%d first_err=%d capped=%d attach_ns=%llu detach_ns=%llu",
	     n, tried, nok, refused, first_err, tried < n, t1 - t0, t2 - t1);
	kvfree(kps);
	kvfree(ok);
	return 0;
}

static struct ftrace_ops floor_ops;

static void notrace floor_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			       struct ftrace_regs *fregs)
{
}

static int run_attach(const char *kind, int n, unsigned int cap_s)
{
	u64 t0, t1, t2;
	int ret, ret2;
	bool exit = strstr(kind, "_exit") != NULL;

	if (n <= 0 || n > nfuncs)
		n = nfuncs;
	if (!n)
		return -ENOENT;
	if (!strcmp(kind, "kprobe"))
		return attach_kprobes(n, cap_s);
	cnt_reset();
	if (!strncmp(kind, "ufprobe", 7)) {
		ufp_init(&ufp, exit);
		t0 = ktime_get_ns();
		ret = ufgraph_register_fprobe_ips(&ufp, funcs, n);
		t1 = ktime_get_ns();
		ret2 = ret ? 0 : ufgraph_unregister_fprobe(&ufp);
		t2 = ktime_get_ns();
	} else if (!strcmp(kind, "ftrace_ops")) {
		/*
		 * The floor both fprobes stand on: a bare ftrace_ops with the same filter, what
		 * ftrace's filter hash and the patching of N call sites cost by themselves.
		 */
		memset(&floor_ops, 0, sizeof(floor_ops));
		floor_ops.func = floor_func;
		floor_ops.flags = FTRACE_OPS_FL_SAVE_ARGS;
		t0 = ktime_get_ns();
		ret = ftrace_set_filter_ips(&floor_ops, funcs, n, 0, 1);
		if (!ret)
			ret = register_ftrace_function(&floor_ops);
		t1 = ktime_get_ns();
		ret2 = ret ? 0 : unregister_ftrace_function(&floor_ops);
		t2 = ktime_get_ns();
		ftrace_free_filter(&floor_ops);
	} else if (!strncmp(kind, "kfprobe", 7)) {
		kfp_init(&kfp, exit);
		t0 = ktime_get_ns();
		ret = register_fprobe_ips(&kfp, funcs, n);
		t1 = ktime_get_ns();
		ret2 = ret ? 0 : unregister_fprobe(&kfp);
		t2 = ktime_get_ns();
	} else {
		return -EINVAL;
	}
	emit("attach kind=%s n=%d tried=%d attached=%d refused=%d err=%d/%d capped=0 attach_ns=%llu detach_ns=%llu",
	     kind, n, n, ret ? 0 : n, ret ? n : 0, ret, ret2, t1 - t0, t2 - t1);
	emit_counts();
	return 0;
}

/* ---- a second probe on functions already hooked ---------------------------------------- */

/*
 * ftrace's patching, counted with kprobes on two functions of its update (6.12, x86):
 * ftrace_update_record(), which x86's ftrace_replace_code() calls once for each call site it
 * patches (right after queueing that site's text_poke) and never for a site it leaves alone,
 * and ftrace_modify_all_code(), called once per update of the call sites (each walks all of
 * ftrace's records, whether or not it patches any). ftrace_update_tot_cnt would not do: it
 * counts the records of newly loaded code, not patching of existing call sites. A kprobe
 * traps on every hit, so the counters are registered only around untimed repeats.
 */
static atomic_long_t ft_sites, ft_updates;
static struct kprobe ft_kps[2];

static int notrace ft_site_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_long_inc(&ft_sites);
	return 0;
}

static int notrace ft_update_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_long_inc(&ft_updates);
	return 0;
}

static int ft_count_start(void)
{
	struct kprobe *kps[2] = { &ft_kps[0], &ft_kps[1] };

	memset(ft_kps, 0, sizeof(ft_kps));
	ft_kps[0].symbol_name = "ftrace_update_record";
	ft_kps[0].pre_handler = ft_site_pre;
	ft_kps[1].symbol_name = "ftrace_modify_all_code";
	ft_kps[1].pre_handler = ft_update_pre;
	atomic_long_set(&ft_sites, 0);
	atomic_long_set(&ft_updates, 0);
	return register_kprobes(kps, 2);
}

/* The counts since the last call (or ft_count_start()). */
static void ft_count_take(long *sites, long *updates)
{
	*sites = atomic_long_xchg(&ft_sites, 0);
	*updates = atomic_long_xchg(&ft_updates, 0);
}

static void ft_count_stop(void)
{
	struct kprobe *kps[2] = { &ft_kps[0], &ft_kps[1] };

	unregister_kprobes(kps, 2);
}

/* One probe of either API: the pair run_second() registers. */
struct any_probe {
	bool ufg;
	struct ufgraph_fprobe u;
	struct fprobe k;
};
static struct any_probe second_p[2];

static int any_register(struct any_probe *p, bool exit, int n)
{
	if (p->ufg) {
		ufp_init(&p->u, exit);
		return ufgraph_register_fprobe_ips(&p->u, funcs, n);
	}
	kfp_init(&p->k, exit);
	return register_fprobe_ips(&p->k, funcs, n);
}

static int any_unregister(struct any_probe *p)
{
	return p->ufg ? ufgraph_unregister_fprobe(&p->u) : unregister_fprobe(&p->k);
}

/*
 * A second probe (KIND) on functions a first one (FIRST, the same API) already hooks: with
 * ufgraph's shared ops the second should need no ftrace patching at all (issue #15); the
 * kernel's fprobe gives each probe an ftrace_ops, so the call sites go from the first ops'
 * trampoline to the list function. The first probe's registration is counted (untimed), the
 * second's attach and detach are timed, then repeated with ftrace's patching counted.
 */
static int run_second(const char *first, const char *kind, int n)
{
	struct any_probe *p1 = &second_p[0], *p2 = &second_p[1];
	bool ufg = !strncmp(kind, "ufprobe", 7);
	bool exit1 = strstr(first, "_exit") != NULL, exit2 = strstr(kind, "_exit") != NULL;
	long first_sites = -1, first_updates = -1, sites = -1, updates = -1;
	long dsites = -1, dupdates = -1;
	int ret, ret2 = 0, count_err;
	u64 t0 = 0, t1 = 0, t2 = 0;

	if (strncmp(first, ufg ? "ufprobe" : "kfprobe", 7) || (!ufg && strncmp(kind, "kfprobe", 7)))
		return -EINVAL;
	if (ufp_on || kfp_on)
		return -EBUSY;
	if (n <= 0 || n > nfuncs)
		n = nfuncs;
	if (!n)
		return -ENOENT;
	cnt_reset();
	p1->ufg = p2->ufg = ufg;
	count_err = ft_count_start();
	ret = any_register(p1, exit1, n);
	if (!count_err) {
		ft_count_take(&first_sites, &first_updates);
		ft_count_stop();
	}
	if (ret) {
		emit("second kind=%s first=%s n=%d attached=0 err=%d/0 counted=0", kind, first, n, ret);
		return 0;
	}
	t0 = ktime_get_ns();
	ret = any_register(p2, exit2, n);
	t1 = ktime_get_ns();
	if (!ret)
		ret2 = any_unregister(p2);
	t2 = ktime_get_ns();
	if (!ret && !count_err) {
		count_err = ft_count_start();
		if (!count_err) {
			if (!any_register(p2, exit2, n)) {
				ft_count_take(&sites, &updates);
				any_unregister(p2);
				ft_count_take(&dsites, &dupdates);
			}
			ft_count_stop();
		}
	}
	any_unregister(p1);
	emit("second kind=%s first=%s n=%d attached=%d err=%d/%d counted=%d count_err=%d first_sites=%ld first_updates=%ld attach_ns=%llu detach_ns=%llu sites=%ld updates=%ld detach_sites=%ld detach_updates=%ld",
	     kind, first, n, ret ? 0 : n, ret, ret2, !count_err && sites >= 0, count_err,
	     first_sites, first_updates, t1 - t0, t2 - t1, sites, updates, dsites, dupdates);
	emit_counts();
	return 0;
}

/* ---- memory ---------------------------------------------------------------------------- */

static int run_mem(const char *kind, int p)
{
	unsigned long addr = TARGET;
	int i, ret = 0;

	if (p <= 0)
		return -EINVAL;
	if (!strcmp(kind, "kfprobe_exit")) {
		if (mem_kfp)
			return -EBUSY;
		mem_kfp = kvcalloc(p, sizeof(*mem_kfp), GFP_KERNEL);
		if (!mem_kfp)
			return -ENOMEM;
		for (i = 0; i < p && !ret; i++) {
			kfp_init(&mem_kfp[i], true);
			ret = register_fprobe_ips(&mem_kfp[i], &addr, 1);
			if (!ret)
				mem_kfp_n++;
		}
	} else if (!strcmp(kind, "ufprobe_exit")) {
		if (mem_ufp)
			return -EBUSY;
		mem_ufp = kvcalloc(p, sizeof(*mem_ufp), GFP_KERNEL);
		if (!mem_ufp)
			return -ENOMEM;
		for (i = 0; i < p && !ret; i++) {
			ufp_init(&mem_ufp[i], true);
			ret = ufgraph_register_fprobe_ips(&mem_ufp[i], &addr, 1);
			if (!ret)
				mem_ufp_n++;
		}
	} else if (!strcmp(kind, "kretprobe")) {
		if (mem_krp)
			return -EBUSY;
		mem_krp = kvcalloc(p, sizeof(*mem_krp), GFP_KERNEL);
		if (!mem_krp)
			return -ENOMEM;
		for (i = 0; i < p && !ret; i++) {
			mem_krp[i] = kmalloc(sizeof(*mem_krp[i]), GFP_KERNEL);
			if (!mem_krp[i])
				return -ENOMEM;
			krp_init(mem_krp[i]);
			ret = register_kretprobe(mem_krp[i]);
			if (ret)
				kfree(mem_krp[i]);
			else
				mem_krp_n++;
		}
	} else if (!strcmp(kind, "ukretprobe")) {
		if (mem_ukrp)
			return -EBUSY;
		mem_ukrp = kvcalloc(p, sizeof(*mem_ukrp), GFP_KERNEL);
		if (!mem_ukrp)
			return -ENOMEM;
		for (i = 0; i < p && !ret; i++) {
			mem_ukrp[i] = kmalloc(sizeof(*mem_ukrp[i]), GFP_KERNEL);
			if (!mem_ukrp[i])
				return -ENOMEM;
			ukrp_init(mem_ukrp[i]);
			ret = ufgraph_register_kretprobe(mem_ukrp[i]);
			if (ret)
				kfree(mem_ukrp[i]);
			else
				mem_ukrp_n++;
		}
	} else {
		return -EINVAL;
	}
	emit("mem kind=%s p=%d ret=%d", kind, p, ret);
	return ret;
}

/* The architecture, as the report names it. */
#if defined(CONFIG_X86_64)
#define UTS_MACHINE_NAME "x86_64"
#elif defined(CONFIG_ARM64)
#define UTS_MACHINE_NAME "arm64"
#else
#define UTS_MACHINE_NAME "unknown"
#endif

/*
 * The sizes behind the kernel's pools (6.12): a rethook node is struct rethook_node; an
 * fprobe's node adds entry_ip and entry_parent_ip (struct fprobe_rethook_node, private to
 * kernel/trace/fprobe.c: two longs) and entry_data_size; a kretprobe instance is struct
 * kretprobe_instance (a rethook_node with CONFIG_KRETPROBE_ON_RETHOOK) plus data_size.
 */
static void run_sizes(void)
{
	emit("sizes arch=%s kfprobe=%d possible_cpus=%u nr_cpu_ids=%u online_cpus=%u page=%lu rethook=%zu rethook_node=%zu fprobe_node=%zu kretprobe_instance=%zu objpool_slot=%zu kretprobe=%zu fprobe=%zu ufgraph_fprobe=%zu ufgraph_kretprobe=%zu kmalloc_rethook=%zu",
	     UTS_MACHINE_NAME, IS_ENABLED(CONFIG_FPROBE), num_possible_cpus(), nr_cpu_ids,
	     num_online_cpus(), PAGE_SIZE, sizeof(struct rethook),
	     sizeof(struct rethook_node), sizeof(struct rethook_node) + 2 * sizeof(long),
	     sizeof(struct kretprobe_instance), sizeof(struct objpool_slot),
	     sizeof(struct kretprobe), sizeof(struct fprobe), sizeof(struct ufgraph_fprobe),
	     sizeof(struct ufgraph_kretprobe), kmalloc_size_roundup(sizeof(struct rethook)));
}

/* ---- concurrency ----------------------------------------------------------------------- */

static atomic_t conc_ready;
static DECLARE_COMPLETION(conc_go);

struct conc_worker {
	struct task_struct *task;
	struct completion done;
	unsigned int calls;
	u64 ns;
};

static int conc_fn(void *arg)
{
	struct conc_worker *w = arg;
	unsigned int i;
	int s = 0;
	u64 t0;

	atomic_inc(&conc_ready);
	wait_for_completion(&conc_go);
	t0 = ktime_get_ns();
	for (i = 0; i < w->calls; i++) {
		s += ufgraph_bench_target(i);
		if (!(i & 1023))
			cond_resched();
	}
	w->ns = ktime_get_ns() - t0;
	WRITE_ONCE(sink, s);
	complete(&w->done);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

static int run_conc(unsigned int calls)
{
	struct conc_worker *w;
	int cpu, n = 0, i;
	u64 max_ns = 0;

	w = kcalloc(nr_cpu_ids, sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	cnt_reset();
	atomic_set(&conc_ready, 0);
	reinit_completion(&conc_go);
	for_each_online_cpu(cpu) {
		w[n].calls = calls;
		init_completion(&w[n].done);
		w[n].task = kthread_create_on_cpu(conc_fn, &w[n], cpu, "ufgbench/%u");
		if (IS_ERR(w[n].task)) {
			w[n].task = NULL;
			break;
		}
		wake_up_process(w[n].task);
		n++;
	}
	while (atomic_read(&conc_ready) < n)
		msleep(1);
	complete_all(&conc_go);
	for (i = 0; i < n; i++) {
		wait_for_completion(&w[i].done);
		kthread_stop(w[i].task);
		max_ns = max(max_ns, w[i].ns);
	}
	emit("conc threads=%d calls=%llu wall_ns=%llu", n, (u64)n * calls, max_ns);
	emit_counts();
	kfree(w);
	return 0;
}

/* ---- debugfs --------------------------------------------------------------------------- */

static DEFINE_MUTEX(ctl_lock);
static struct dentry *dir;

static int run_cmd(char *line)
{
	char *argv[8];
	int argc = 0, ret = 0;
	unsigned int a = 0, b = 0;
	char *p;

	while ((p = strsep(&line, " \t\n")) && argc < 8)
		if (*p)
			argv[argc++] = p;
	if (!argc)
		return -EINVAL;
	out_len = 0;
	out[0] = 0;
	if (!strcmp(argv[0], "hook")) {
		int i;

		cnt_reset();
		for (i = 1; i < argc && !ret; i++)
			ret = hook_one(argv[i]);
		if (ret)
			unhook_all();
		emit("hook ret=%d", ret);
	} else if (!strcmp(argv[0], "unmem")) {
		unmem_all();
		emit("unmem ret=0");
	} else if (!strcmp(argv[0], "unhook")) {
		unhook_all();
		emit("unhook ret=0");
	} else if (!strcmp(argv[0], "cost") && argc == 3 && !kstrtouint(argv[1], 0, &a) &&
		   !kstrtouint(argv[2], 0, &b)) {
		ret = run_cost(a, b);
	} else if (!strcmp(argv[0], "clearfuncs")) {
		nfuncs = 0;
		emit("clearfuncs ret=0");
	} else if (!strcmp(argv[0], "nfuncs")) {
		emit("nfuncs n=%d", nfuncs);
	} else if (!strcmp(argv[0], "attach") && argc == 4 && !kstrtouint(argv[2], 0, &a) &&
		   !kstrtouint(argv[3], 0, &b)) {
		ret = run_attach(argv[1], a, b);
	} else if (!strcmp(argv[0], "second") && argc == 4 && !kstrtouint(argv[3], 0, &a)) {
		ret = run_second(argv[1], argv[2], a);
	} else if (!strcmp(argv[0], "mem") && argc == 3 && !kstrtouint(argv[2], 0, &a)) {
		ret = run_mem(argv[1], a);
	} else if (!strcmp(argv[0], "conc") && argc == 2 && !kstrtouint(argv[1], 0, &a)) {
		ret = run_conc(a);
	} else if (!strcmp(argv[0], "sizes")) {
		run_sizes();
	} else if (!strcmp(argv[0], "profarm")) {
		emit("profile target=0x%px flag=0x%px", ufgraph_bench_target, &profile_go);
	} else if (!strcmp(argv[0], "profile")) {
		ret = run_profile();
	} else {
		ret = -EINVAL;
	}
	emit("\n");
	return ret;
}

static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char buf[128];
	int ret;

	if (len >= sizeof(buf))
		return -E2BIG;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	mutex_lock(&ctl_lock);
	ret = run_cmd(buf);
	mutex_unlock(&ctl_lock);
	return ret ? ret : len;
}

static ssize_t ctl_read(struct file *f, char __user *ubuf, size_t len, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&ctl_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, out, out_len);
	mutex_unlock(&ctl_lock);
	return ret;
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.write = ctl_write,
	.read = ctl_read,
	.llseek = default_llseek,
};

/* Addresses, one hex number per line; a line may be split across writes. */
static char partial[32];
static size_t partial_len;

static ssize_t funcs_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char buf[256];
	size_t done = 0;
	int ret = 0;

	mutex_lock(&ctl_lock);
	while (done < len && !ret) {
		size_t n = min(len - done, sizeof(buf)), i;

		if (copy_from_user(buf, ubuf + done, n)) {
			ret = -EFAULT;
			break;
		}
		for (i = 0; i < n && !ret; i++) {
			unsigned long a;

			if (buf[i] != '\n') {
				if (partial_len < sizeof(partial) - 1)
					partial[partial_len++] = buf[i];
				continue;
			}
			partial[partial_len] = 0;
			if (partial_len && !kstrtoul(partial, 16, &a))
				ret = add_func(a);
			partial_len = 0;
		}
		done += n;
	}
	mutex_unlock(&ctl_lock);
	return ret ? ret : len;
}

static const struct file_operations funcs_fops = {
	.owner = THIS_MODULE,
	.write = funcs_write,
};

static int __init bench_init(void)
{
	dir = debugfs_create_dir("ufgraph_bench", NULL);
	debugfs_create_file("ctl", 0600, dir, NULL, &ctl_fops);
	debugfs_create_file("funcs", 0200, dir, NULL, &funcs_fops);
	pr_info("ufgraph_bench: target at %ps\n", ufgraph_bench_target);
	return 0;
}

static void __exit bench_exit(void)
{
	debugfs_remove_recursive(dir);
	mutex_lock(&ctl_lock);
	unhook_all();
	mutex_unlock(&ctl_lock);
	kvfree(funcs);
}

module_init(bench_init);
module_exit(bench_exit);
MODULE_DESCRIPTION("ufgraph benchmarks: the kernel's return hooks and ufgraph's side by side");
MODULE_LICENSE("GPL");
