// SPDX-License-Identifier: GPL-2.0
/*
 * Trace events (src/sys/trace_event.rs; src/events/env.rs for the fetch limits): the ring
 * buffer's reserve/commit pair, soft-disable triggers, trace_seq and trace_iterator fields,
 * and perf's buffer are static inlines or need struct layouts kept in C.
 */

bool ufg_event_soft_disabled(struct trace_event_file *file)
{
	return trace_trigger_soft_disabled(file);
}

void *ufg_event_reserve(struct trace_event_buffer *fb, struct trace_event_file *file,
			unsigned long len)
{
	void *entry = trace_event_buffer_reserve(fb, file, len);

	if (entry)
		fb->regs = NULL;
	return entry;
}

void ufg_event_commit(struct trace_event_buffer *fb)
{
	trace_event_buffer_commit(fb);
}

bool ufg_seq_symbol(struct trace_seq *s, unsigned long addr, bool offset)
{
	if (offset)
		trace_seq_printf(s, "%pS", (void *)addr);
	else
		trace_seq_printf(s, "%ps", (void *)addr);
	return !trace_seq_has_overflowed(s);
}

bool ufg_seq_overflowed(struct trace_seq *s)
{
	return trace_seq_has_overflowed(s);
}

struct trace_seq *ufg_iter_seq(struct trace_iterator *iter)
{
	return &iter->seq;
}

const void *ufg_iter_ent(struct trace_iterator *iter, unsigned long *size)
{
	*size = iter->ent_size;
	return iter->ent;
}

#ifdef CONFIG_PERF_EVENTS
void *ufg_perf_begin(struct trace_event_call *call, unsigned long size, int *rctx,
		     struct pt_regs **regs)
{
	/* this_cpu_ptr() and hlist_empty() are macros and static inlines. */
	if (hlist_empty(this_cpu_ptr(call->perf_events)))
		return NULL;
	return perf_trace_buf_alloc(size, regs, rctx);
}

void ufg_perf_end(struct trace_event_call *call, void *entry, unsigned long size, int rctx,
		  struct pt_regs *regs)
{
	perf_trace_buf_submit(entry, size, rctx, call->event.type, 1, regs,
			      this_cpu_ptr(call->perf_events), NULL);
}
#else
void *ufg_perf_begin(struct trace_event_call *call, unsigned long size, int *rctx,
		     struct pt_regs **regs)
{
	return NULL;
}

void ufg_perf_end(struct trace_event_call *call, void *entry, unsigned long size, int rctx,
		  struct pt_regs *regs)
{
}
#endif

unsigned long ufg_trace_entry_size(void)
{
	return sizeof(struct trace_entry);
}

unsigned long ufg_user_space_end(void)
{
#ifdef CONFIG_ARCH_HAS_NON_OVERLAPPING_ADDRESS_SPACE
	return TASK_SIZE;
#else
	return 0;
#endif
}

unsigned long ufg_stack_index_max(void)
{
	return THREAD_SIZE / sizeof(unsigned long);
}
