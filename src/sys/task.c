// SPDX-License-Identifier: GPL-2.0
/*
 * Tasks and CPUs (src/sys/task.rs; src/tests/hot.rs checks the hot path's inline reads against
 * ufg_current/ufg_cpu/ufg_cpu_online): `current`, for_each_process_thread(), task_cpu(),
 * get_task_struct() and the task's saved registers are macros, static inlines or struct fields.
 * Teardown (src/fgraph/graph.rs) uses the stack views and references under stop_machine.
 */

struct task_struct *ufg_current(void)
{
	return current;
}

bool ufg_is_idle_task(const struct task_struct *t)
{
	return is_idle_task(t);
}

unsigned int ufg_task_cpu(const struct task_struct *t)
{
	return task_cpu(t);
}

void ufg_for_each_thread(void (*fn)(struct task_struct *t, void *data), void *data)
{
	struct task_struct *g, *t;

	rcu_read_lock();
	for_each_process_thread(g, t)
		fn(t, data);
	rcu_read_unlock();
}

unsigned int ufg_cpu(void)
{
	return raw_smp_processor_id();
}

unsigned int ufg_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

void __percpu *ufg_alloc_percpu(size_t size, size_t align)
{
	return __alloc_percpu(size, align);
}

/*
 * The task table's cache of the current task's shadow stack, one word per CPU in this
 * module's static per-CPU area (sys::percpu::CpuCache): the hot path reads it with one
 * %gs-relative load, with no pointer to it loaded first. Rust reaches it by symbol only.
 */
DEFINE_PER_CPU(void *, ufg_stack_cache);

bool ufg_cpu_online(unsigned int cpu)
{
	return cpu_online(cpu);
}

int ufg_task_pid(struct task_struct *t)
{
	return task_pid_nr(t);
}

void ufg_task_comm(const struct task_struct *t, char *buf)
{
	strscpy(buf, t->comm, TASK_COMM_LEN);
}

const char *ufg_current_comm(void)
{
	return current->comm;
}

bool ufg_task_dead(const struct task_struct *t)
{
	return READ_ONCE(t->__state) == TASK_DEAD;
}

bool ufg_task_stack_view(const struct task_struct *t, unsigned long *lo, unsigned long *hi,
			 unsigned long *saved_sp, bool *running)
{
	unsigned long base = (unsigned long)task_stack_page(t);

	*lo = base;
	*hi = base ? base + THREAD_SIZE : 0;
	*running = t == current || READ_ONCE(t->on_cpu);
#ifdef CONFIG_X86_64
	*saved_sp = t->thread.sp;
#else
	*saved_sp = thread_saved_sp(t);
#endif
	return base != 0;
}

void ufg_get_task(struct task_struct *t)
{
	get_task_struct(t);
}

void ufg_put_task(struct task_struct *t)
{
	put_task_struct(t);
}
