// SPDX-License-Identifier: GPL-2.0
/* The C glue as linked into ufgraph_kunit.ko: same helpers, no exports. */
#define UFG_KUNIT 1
#include "glue.c"
