// SPDX-License-Identifier: GPL-2.0
/*
 * Tracepoints (src/sys/tracepoint.rs): struct tracepoint's name and probestub, a module's
 * tracepoints (struct module fields, tracepoint_ptr_deref()), struct tp_module, and
 * tracepoint_synchronize_unregister() (a static inline).
 */

const char *ufg_tracepoint_name(const struct tracepoint *tp)
{
	return tp->name;
}

void *ufg_tracepoint_probestub(const struct tracepoint *tp)
{
	return tp->probestub;
}

/*
 * A module's tracepoints (6.12 exports no walk over them): how many, the i-th, and the module of
 * a `struct tp_module` a tracepoint module notifier gets.
 */
unsigned int ufg_module_num_tracepoints(const struct module *mod)
{
	return mod->num_tracepoints;
}

struct tracepoint *ufg_module_tracepoint(const struct module *mod, unsigned int i)
{
	return tracepoint_ptr_deref(&mod->tracepoints_ptrs[i]);
}

struct module *ufg_tp_module_mod(const void *tp_mod)
{
	return ((const struct tp_module *)tp_mod)->mod;
}

void ufg_tracepoint_synchronize_unregister(void)
{
	tracepoint_synchronize_unregister();
}
