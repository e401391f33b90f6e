// SPDX-License-Identifier: GPL-2.0
/*
 * Tracepoints (src/sys/tracepoint.rs): struct tracepoint's name and
 * tracepoint_synchronize_unregister() (a static inline).
 */

const char *ufg_tracepoint_name(const struct tracepoint *tp)
{
	return tp->name;
}

void ufg_tracepoint_synchronize_unregister(void)
{
	tracepoint_synchronize_unregister();
}
