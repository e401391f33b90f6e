// SPDX-License-Identifier: GPL-2.0
/*
 * The C API (include/ufgraph/), implemented in Rust (src/capi.rs, src/fprobe/capi.rs,
 * src/kretprobe/): EXPORT_SYMBOL_GPL has no Rust form in 6.12. ufgraph_kunit.ko carries the
 * same code but exports nothing, so that both modules can be loaded together.
 */

#ifndef UFG_KUNIT
#include <ufgraph/fgraph.h>
EXPORT_SYMBOL_GPL(ufgraph_register);
EXPORT_SYMBOL_GPL(ufgraph_unregister);
EXPORT_SYMBOL_GPL(ufgraph_set_filter_ips);
EXPORT_SYMBOL_GPL(ufgraph_set_filter);
EXPORT_SYMBOL_GPL(ufgraph_free_filter);
EXPORT_SYMBOL_GPL(ufgraph_reserve_data);
EXPORT_SYMBOL_GPL(ufgraph_retrieve_data);
EXPORT_SYMBOL_GPL(ufgraph_retrieve_parent_data);
EXPORT_SYMBOL_GPL(ufgraph_get_task_var);
EXPORT_SYMBOL_GPL(ufgraph_ret_addr);
EXPORT_SYMBOL_GPL(ufgraph_stack_trace_save);
EXPORT_SYMBOL_GPL(ufgraph_trampoline_addr);

#define UFGRAPH_NO_UPSTREAM_NAMES
#include <ufgraph/fprobe.h>
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe);
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe_ips);
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe_syms);
EXPORT_SYMBOL_GPL(ufgraph_unregister_fprobe);
EXPORT_SYMBOL_GPL(ufgraph_fprobe_is_registered);
EXPORT_SYMBOL_GPL(ufgraph_fprobe_count_ips_from_filter);

#include <ufgraph/kretprobe.h>
EXPORT_SYMBOL_GPL(ufgraph_register_kretprobe);
EXPORT_SYMBOL_GPL(ufgraph_unregister_kretprobe);
EXPORT_SYMBOL_GPL(ufgraph_register_kretprobes);
EXPORT_SYMBOL_GPL(ufgraph_unregister_kretprobes);

#include <ufgraph/rethook.h>
EXPORT_SYMBOL_GPL(ufgraph_rethook_register);
EXPORT_SYMBOL_GPL(ufgraph_rethook_unregister);
EXPORT_SYMBOL_GPL(ufgraph_rethook_hook);
#endif
