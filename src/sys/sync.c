// SPDX-License-Identifier: GPL-2.0
/*
 * Synchronisation (src/sys/sync.rs, src/fgraph/tasks.rs, the arch hot paths): RCU, preemption,
 * ftrace's recursion guard, raw spinlocks, mutexes, work items and CPU hotplug states are
 * static inlines or macros in 6.12, or need constants (CPUHP_BP_PREPARE_DYN) bound here.
 */

void ufg_synchronize_rcu_tasks(void)
{
	synchronize_rcu_tasks();
}

void ufg_kfree_rcu(struct rcu_head *head, void *ptr)
{
	kvfree_call_rcu(head, ptr);
}

int ufg_recursion_trylock(unsigned long ip, unsigned long parent_ip)
{
	return ftrace_test_recursion_trylock(ip, parent_ip);
}

void ufg_recursion_unlock(int bit)
{
	ftrace_test_recursion_unlock(bit);
}

unsigned int ufg_preempt_count(void)
{
	return preempt_count();
}

void ufg_preempt_schedule_notrace(void)
{
#ifdef CONFIG_PREEMPTION
	__preempt_schedule_notrace();
#endif
}

void ufg_raw_spin_lock_init(raw_spinlock_t *lock)
{
	raw_spin_lock_init(lock);
}

unsigned long ufg_raw_spin_lock_irqsave(raw_spinlock_t *lock)
{
	unsigned long flags;

	raw_spin_lock_irqsave(lock, flags);
	return flags;
}

void ufg_raw_spin_unlock_irqrestore(raw_spinlock_t *lock, unsigned long flags)
{
	raw_spin_unlock_irqrestore(lock, flags);
}

void ufg_mutex_lock(struct mutex *m)
{
	mutex_lock(m);
}

void ufg_mutex_unlock(struct mutex *m)
{
	mutex_unlock(m);
}

void ufg_init_work(struct work_struct *work, void (*fn)(struct work_struct *work))
{
	INIT_WORK(work, fn);
}

bool ufg_schedule_work(struct work_struct *work)
{
	return schedule_work(work);
}

int ufg_cpuhp_add(int (*prepare)(unsigned int cpu))
{
	return cpuhp_setup_state_nocalls(CPUHP_BP_PREPARE_DYN, "ufgraph:idle-stack", prepare, NULL);
}

void ufg_cpuhp_remove(int state)
{
	cpuhp_remove_state_nocalls(state);
}
