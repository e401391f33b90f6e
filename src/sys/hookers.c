// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own return hookers (src/sys/hookers.rs): where function_graph and rethook keep
 * the return addresses they saved, so that teardown can rewrite ufgraph's trampoline in them
 * under stop_machine. task_struct fields that exist only with their configs.
 */

unsigned long *ufg_task_fgraph_stack(struct task_struct *t, int *top)
{
#ifdef CONFIG_FUNCTION_GRAPH_TRACER
	*top = READ_ONCE(t->curr_ret_stack);
	return READ_ONCE(t->ret_stack);
#else
	*top = 0;
	return NULL;
#endif
}

void *ufg_task_rethook_first(struct task_struct *t)
{
#ifdef CONFIG_RETHOOK
	return READ_ONCE(t->rethooks.first);
#else
	return NULL;
#endif
}

void *ufg_rethook_next(void *node)
{
#ifdef CONFIG_RETHOOK
	return READ_ONCE(((struct llist_node *)node)->next);
#else
	return NULL;
#endif
}

unsigned long *ufg_rethook_ret(void *node, unsigned long *frame)
{
#ifdef CONFIG_RETHOOK
	struct rethook_node *rh = container_of((struct llist_node *)node, struct rethook_node, llist);

	*frame = rh->frame;
	return &rh->ret_addr;
#else
	*frame = 0;
	return NULL;
#endif
}
