// SPDX-License-Identifier: GPL-2.0
/* The C helpers as linked into ufgraph_kunit.ko: the same helpers, no exports. */
#define UFG_KUNIT 1
#include "helpers.c"
