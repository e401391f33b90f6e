// SPDX-License-Identifier: GPL-2.0
/*
 * The exports of the fgraph C API (include/ufgraph/fgraph.h), implemented in Rust
 * (src/fgraph/capi.rs): EXPORT_SYMBOL_GPL has no Rust form in 6.12. ufgraph_kunit.ko carries the same
 * code but exports nothing (UFG_KUNIT), so that both modules can be loaded together. Part of
 * the one C translation unit, src/helpers/helpers.c.
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
#endif
