// SPDX-License-Identifier: GPL-2.0
/*
 * Symbols and modules (src/fprobe/mod.rs globs, src/fprobe/capi.rs the module-unload watch):
 * glob_match() is exported but its header's types are simpler to bind here; within_module()
 * and struct module's name are static inlines and fields.
 */

bool ufg_glob_match(const char *pat, const char *str)
{
	return glob_match(pat, str);
}

bool ufg_within_module(unsigned long addr, const struct module *mod)
{
	return within_module(addr, mod);
}

const char *ufg_module_name(const struct module *mod)
{
	return mod->name;
}

bool ufg_within_module_init(unsigned long addr, const struct module *mod)
{
	return within_module_init(addr, mod);
}

/* The raw call-site entries ftrace made the module's records from (ftrace_module_init()). */
unsigned long *ufg_module_callsites(const struct module *mod, unsigned int *n)
{
#ifdef CONFIG_FTRACE_MCOUNT_RECORD
	*n = mod->num_ftrace_callsites;
	return mod->ftrace_callsites;
#else
	*n = 0;
	return NULL;
#endif
}
