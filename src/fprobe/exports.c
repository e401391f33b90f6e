// SPDX-License-Identifier: GPL-2.0
/*
 * The exports of the fprobe C API (include/ufgraph/fprobe.h), implemented in Rust
 * (src/fprobe/capi.rs): EXPORT_SYMBOL_GPL has no Rust form in 6.12. ufgraph_kunit.ko carries the same
 * code but exports nothing (UFG_KUNIT), so that both modules can be loaded together. Part of
 * the one C translation unit, src/helpers/helpers.c.
 */

#ifndef UFG_KUNIT
#define UFGRAPH_NO_UPSTREAM_NAMES
#include <ufgraph/fprobe.h>
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe);
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe_ips);
EXPORT_SYMBOL_GPL(ufgraph_register_fprobe_syms);
EXPORT_SYMBOL_GPL(ufgraph_unregister_fprobe);
EXPORT_SYMBOL_GPL(ufgraph_fprobe_is_registered);
EXPORT_SYMBOL_GPL(ufgraph_fprobe_count_ips_from_filter);
#endif
