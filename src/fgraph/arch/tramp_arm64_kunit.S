/* SPDX-License-Identifier: GPL-2.0 */
/* The trampoline as linked into ufgraph_kunit.ko (Kbuild builds each object into one module). */
#include "tramp_arm64.S"
