// SPDX-License-Identifier: GPL-2.0
/*
 * x86_64 unwinding (src/fgraph/arch/x86_64.rs, ufgraph's stack traces through its trampoline): the
 * unwinder's state and its accessors are static inlines over a struct Rust does not see.
 */

#ifdef CONFIG_X86_64
unsigned long ufg_unwind_state_size(void)
{
	return sizeof(struct unwind_state);
}

void ufg_unwind_start(void *state, struct task_struct *task)
{
	unwind_start(state, task, NULL, NULL);
}

bool ufg_unwind_done(void *state)
{
	return unwind_done(state);
}

unsigned long ufg_unwind_ip(void *state)
{
	return unwind_get_return_address(state);
}

unsigned long ufg_unwind_sp(void *state)
{
	return ((struct unwind_state *)state)->sp;
}

void ufg_unwind_set_ip(void *state, unsigned long ip)
{
	((struct unwind_state *)state)->ip = ip;
}

bool ufg_unwind_next(void *state)
{
	return unwind_next_frame(state);
}
#endif
