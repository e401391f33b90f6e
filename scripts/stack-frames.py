#!/usr/bin/env python3
# Reads `llvm-objdump -d` of a module on stdin and lists functions whose stack frame is
# at least LIMIT bytes (argv[1], default 2048); exits 1 if there is one. Rust has no
# -Wframe-larger-than, and a kernel stack is 16 KiB for everything a call chain does:
# a value built on the stack in module init once overflowed it (see git log).
import re
import sys

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
fn = None
found = set()
for line in sys.stdin:
    m = re.match(r'^[0-9a-f]+ <(.*)>:\s*$', line)
    if m:
        fn = m.group(1)
        continue
    m = re.search(r'sub[q]?\s+\$(0x[0-9a-f]+|\d+), ?%rsp', line) or re.search(r'sub\s+sp, sp, #(0x[0-9a-f]+|\d+)', line)
    if m and fn:
        v = int(m.group(1), 0)
        if v >= limit:
            found.add((v, fn))
for v, f in sorted(found, reverse=True):
    print(f"stack frame of {v} bytes: {f}")
sys.exit(1 if found else 0)
