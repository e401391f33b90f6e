// SPDX-License-Identifier: GPL-2.0
/*
 * The exports of the kretprobe and rethook C API (include/ufgraph/kretprobe.h and rethook.h), implemented in Rust
 * (src/kretprobe/capi.rs): EXPORT_SYMBOL_GPL has no Rust form in 6.12. ufgraph_kunit.ko carries the same
 * code but exports nothing (UFG_KUNIT), so that both modules can be loaded together. Part of
 * the one C translation unit, src/helpers/helpers.c.
 */

#ifndef UFG_KUNIT
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
