#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""kCFI audit of ufgraph's modules (issue #18).

Under kCFI an indirect call checks the 32-bit hash stored in front of its target against the
hash of the function type it calls through. This lists every function of ufgraph.ko and
ufgraph_kunit.ko whose address is taken (a relocation to its first byte that is not a direct
call or jump, outside the unwind/debug/patching tables), finds in scripts/kcfi-audit.list the
type an indirect call to it checks, computes clang's hash of that type with the module's own
C flags, and compares it with the hash in the function's preamble.

  kcfi-audit.py --arch ARCH --moddir BUILD/mod-TAG --kdir BUILD/kernel-TAG [--list FILE] [-v]

Exit status: 0 when every address-taken function has the expected hash (or is Rust-only, or
never called indirectly, as the list says), 1 on a mismatch, a function the list does not
know, or a broken list entry. Only the standard library: no VM, no network.
"""
import argparse
import bisect
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile

# Sections whose relocations point at code without making it an indirect call target:
# debug info, unwind tables, and the tables objtool and the compiler emit for run-time
# patching (fentry sites, return thunks, retpolines, kCFI traps, IBT seals...).
META = ('.debug', '.orc_unwind', '.call_sites', '.return_sites', '.cfi_sites', '.ibt_endbr_seal',
        '__patchable_function_entries', '__kcfi_traps', '.retpoline_sites', '.static_call_sites',
        '.smp_locks', '.altinstructions', '.altinstr_replacement', '__mcount_loc', '.llvm_addrsig',
        '.discard', '.eh_frame', '__bug_table', '__ex_table', '.rela', '.symtab', '.strtab')
SHF_EXECINSTR = 4
# Relocation types of direct branches (not address-taking).
BRANCH = {'x86_64': {4}, 'arm64': {282, 283}}  # R_X86_64_PLT32; R_AARCH64_JUMP26, CALL26
R_X86_64_PC32 = 2
# arm64: what an indirect call (blr) may land on with BTI: bti c, bti jc, and paciasp/pacibsp
# (implicit landing pads, as the kernel's own C functions begin).
BTI_PADS = {struct.pack('<I', w) for w in (0xd503245f, 0xd50324df, 0xd503233f, 0xd503237f)}


class Elf:
    """The little of ELF64 (little-endian, relocatable) the audit needs."""

    def __init__(self, path):
        self.path = path
        with open(path, 'rb') as f:
            d = self.d = f.read()
        if d[:4] != b'\x7fELF' or d[4] != 2 or d[5] != 1:
            raise SystemExit(f'{path}: not a little-endian ELF64 file')
        shoff, = struct.unpack_from('<Q', d, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
        self.secs = []
        for i in range(shnum):
            (name, typ, flags, _addr, off, size, link, info, _al,
             _es) = struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize)
            self.secs.append(dict(i=i, nameoff=name, type=typ, flags=flags, off=off, size=size,
                                  link=link, info=info))
        for s in self.secs:
            s['name'] = self.cstr(self.secs[shstrndx]['off'] + s['nameoff'])
        self.syms = []
        for s in self.secs:
            if s['type'] == 2:  # SHT_SYMTAB
                strs = self.secs[s['link']]['off']
                for j in range(s['size'] // 24):
                    n, info, _o, shndx, val, size = struct.unpack_from('<IBBHQQ', d, s['off'] + 24 * j)
                    self.syms.append(dict(name=self.cstr(strs + n), type=info & 15, bind=info >> 4,
                                          shndx=shndx, value=val, size=size))
        self.relas = []
        for s in self.secs:
            if s['type'] == 4:  # SHT_RELA
                tgt = self.secs[s['info']]
                for j in range(s['size'] // 24):
                    off, info, add = struct.unpack_from('<QQq', d, s['off'] + 24 * j)
                    self.relas.append((tgt, off, info >> 32, info & 0xffffffff, add))

    def cstr(self, o):
        return self.d[o:self.d.index(b'\0', o)].decode()

    def code_syms(self):
        """(section index, offset) -> name of the symbols that start code (functions, and
        assembly labels such as the return trampoline); local .L labels left out."""
        out = {}
        for s in self.syms:
            # .L: assembler-local labels; $x, $d: AArch64 mapping symbols.
            if not s['name'] or s['name'].startswith(('.L', '$')) or s['shndx'] in (0,) or s['shndx'] >= 0xff00:
                continue
            if s['type'] not in (0, 2) or not self.secs[s['shndx']]['flags'] & SHF_EXECINSTR:
                continue
            k = (s['shndx'], s['value'])
            if k not in out or s['type'] == 2:
                out[k] = s['name']
        return out

    def bytes_at(self, shndx, off, n):
        s = self.secs[shndx]
        if off < 0 or off + n > s['size']:
            return None
        return self.d[s['off'] + off:s['off'] + off + n]


def address_taken(elf, arch):
    """{(section index, offset): (function name, set of sections referring to it)} (local
    functions of different objects may share a name: asan.module_ctor), and the
    count of references into the middle of code (never a valid kCFI target)."""
    starts = elf.code_syms()
    taken, mid = {}, 0
    for tgt, off, symi, rtype, add in elf.relas:
        if tgt['name'].startswith(META) or not tgt['flags'] & 2:  # SHF_ALLOC only
            continue
        sym = elf.syms[symi]
        if sym['shndx'] == 0 or sym['shndx'] >= 0xff00:
            continue
        if not elf.secs[sym['shndx']]['flags'] & SHF_EXECINSTR or rtype in BRANCH[arch]:
            continue
        val = sym['value'] + add
        if arch == 'x86_64' and rtype == R_X86_64_PC32 and tgt['flags'] & SHF_EXECINSTR:
            # rip-relative: the field ends the instruction (lea sym(%rip)); a call or jmp
            # rel32 with a PC32 relocation is still a direct branch.
            if elf.d[tgt['off'] + off - 1] in (0xe8, 0xe9):
                continue
            val += 4
        name = starts.get((sym['shndx'], val))
        if name is None:
            mid += 1
            continue
        taken.setdefault((sym['shndx'], val), (name, set()))[1].add(tgt['name'])
    return taken, mid


def ibt_view(elf, starts):
    """x86_64 with IBT: the code starts objtool left an ENDBR on (it seals, in
    .ibt_endbr_seal, every ENDBR of a function whose address it did not see taken), or None
    without IBT. An independent view of which functions are address-taken."""
    if not any(s['name'] == '.ibt_endbr_seal' for s in elf.secs):
        return None
    sealed = set()
    for tgt, off, symi, rtype, add in elf.relas:
        if tgt['name'] == '.ibt_endbr_seal':
            sym = elf.syms[symi]
            sealed.add((sym['shndx'], sym['value'] + add))
    return {k: n for k, n in starts.items()
            if elf.bytes_at(k[0], k[1], 4) == b'\xf3\x0f\x1e\xfa' and k not in sealed}


def preamble_hash(elf, arch, shndx, off, name):
    """The kCFI type hash in front of the function at (shndx, off), or None if it has none."""
    if arch == 'x86_64':
        # __cfi_NAME: movl $HASH, %eax; 11 nops (16 bytes, with FUNCTION_PADDING_CFI).
        b = elf.bytes_at(shndx, off - 16, 16)
        if b is None or b[0] != 0xb8 or b[5:] != b'\x90' * 11 or f'__cfi_{name}' not in elf.names:
            return None
        return struct.unpack_from('<I', b, 1)[0]
    # arm64: the hash is the word right before the function (before the patchable NOPs, if any).
    p = off - 4
    for _ in range(2):
        w = elf.bytes_at(shndx, p, 4)
        if w != b'\x1f\x20\x03\xd5':  # nop
            break
        p -= 4
    w = elf.bytes_at(shndx, p, 4)
    return None if w is None else struct.unpack('<I', w)[0]


def call_site_hashes(elf, arch):
    """{hash: count} of the types the module's kCFI-checked indirect calls check, and the
    count of checks whose hash could not be read. __kcfi_traps lists each check's trap."""
    seen, unread = {}, 0
    funcs = sorted((s['shndx'], s['value'], s['name']) for s in elf.syms if s['type'] == 2 and s['shndx'])

    def found(shndx, trap, h):
        nonlocal unread
        i = bisect.bisect_right(funcs, (shndx, trap, '\U0010ffff')) - 1
        where = funcs[i][2] if i >= 0 and funcs[i][0] == shndx else '?'
        if h is None:
            unread += 1
            print(f'note     {os.path.basename(elf.path)}: cannot read the kCFI check before the trap at '
                  f'{where}+{trap - funcs[i][1]:#x}' if where != '?' else f'{trap:#x}')
        else:
            seen.setdefault(h, []).append(where)

    if arch == 'x86_64':
        # __kcfi_traps lists each check's ud2:
        # movl $-HASH, %r10d; addl -15(%r11), %r10d; je 1f; ud2
        for tgt, off, symi, rtype, add in elf.relas:
            if tgt['name'] != '__kcfi_traps':
                continue
            sym = elf.syms[symi]
            trap = sym['value'] + add
            b = elf.bytes_at(sym['shndx'], trap - 12, 14)
            h = None
            if b and b[:2] == b'\x41\xba' and b[6:10] == b'\x45\x03\x53\xf1' and b[12:] == b'\x0f\x0b':
                h = (-struct.unpack_from('<I', b, 2)[0]) & 0xffffffff
            found(sym['shndx'], trap, h)
        return seen, unread
    # arm64: each check ends in `brk #0x8xxx` (the ESR tells the kernel it is kCFI's):
    # ldur w16, [xN, #-4]; mov(k) w17, #lo; movk w17, #hi, lsl #16; cmp w16, w17; b.eq 1f; brk
    # (a tail call loads the hash into another register: cmp wN, w17)
    for sec in elf.secs:
        if not sec['flags'] & SHF_EXECINSTR or sec['type'] != 1:
            continue
        words = struct.unpack_from(f'<{sec["size"] // 4}I', elf.d, sec['off'])
        for i, w in enumerate(words):
            if (w & 0xffe0001f) != 0xd4200000 or not 0x8000 <= (w >> 5) & 0xffff <= 0x8fff:
                continue
            h = None
            if i >= 4:
                lo, hi, cmp, beq = words[i - 4:i]
                if ((lo & 0xffe0001f) in (0x72800011, 0x52800011) and (hi & 0xffe0001f) == 0x72a00011
                        and (cmp & 0xfffffc1f) == 0x6b11001f and beq == 0x54000040):
                    h = ((lo >> 5) & 0xffff) | (((hi >> 5) & 0xffff) << 16)
            found(sec['i'], 4 * i, h)
    return seen, unread


def demangle(names, llvm):
    p = subprocess.run([f'llvm-cxxfilt{llvm}'], input='\n'.join(names), capture_output=True,
                       text=True, check=True)
    return dict(zip(names, p.stdout.split('\n')))


def extern_c_names(top):
    """Names of the functions src/ defines `extern "C"`: none of them may be listed as
    Rust-only (a function made for C callers whose address is taken goes to C)."""
    names = set()
    for d, _, files in os.walk(os.path.join(top, 'src')):
        for f in files:
            if f.endswith('.rs'):
                with open(os.path.join(d, f), errors='replace') as fh:
                    names.update(re.findall(r'extern\s+"C"\s+fn\s+([A-Za-z_][A-Za-z0-9_]*)', fh.read()))
    return names


def load_list(path):
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            m = re.match(r'(.+?)\s{2,}(c|called|export|rust|none)\b\s*(.*)$', line)
            if not m:
                raise SystemExit(f'{path}:{n}: cannot read: {line}')
            pat, kind, rest = m.groups()
            if kind in ('rust', 'none') and not rest:
                raise SystemExit(f'{path}:{n}: `{kind}` needs a reason')
            rx = re.compile('^' + '.*'.join(re.escape(p) for p in pat.split('*')) + '$')
            expr, check = (rest.split(';', 1) + [''])[:2] if kind in ('c', 'called') else (rest, '')
            entries.append(dict(line=n, pat=pat, rx=rx, kind=kind, expr=expr.strip(),
                                check=check.strip(), used=0))
    return entries


def c_flags(moddir, helpers_obj):
    """The module's C compile command (its .cmd file), without its input, output and
    dependency file: the flags clang hashed exports.c's prototypes with."""
    cmd = os.path.join(moddir, os.path.dirname(helpers_obj), '.' + os.path.basename(helpers_obj) + '.cmd')
    with open(cmd) as f:
        line = f.readline()
    argv = shlex.split(line.split(':=', 1)[1])
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == '-o':
            skip = True
            continue
        if a.startswith('-Wp,-MMD') or a == '-c' or a.endswith('.c'):
            continue
        out.append(a)
    return out


def expected_hashes(entries, cc_argv, kdir, arch):
    """clang's hash of each `c` entry's type, from a C file that declares a function of that
    type and takes its address (clang then emits __kcfi_typeid_NAME = hash)."""
    src = ['#include <linux/module.h>', '#include <linux/fs.h>', '#include <linux/seq_file.h>',
           '#include <linux/workqueue.h>', '#include <linux/notifier.h>', '#include <linux/cpuhotplug.h>',
           '#include <linux/stop_machine.h>', '#include <linux/tracepoint.h>', '#include <linux/trace_events.h>',
           '#include <linux/ftrace.h>', '#include <linux/kprobes.h>', '#include <kunit/test.h>',
           '#include <trace/events/task.h>', '#include <trace/events/sched.h>',
           '#include <ufgraph/fgraph.h>', '#include <ufgraph/fprobe.h>', '#include <ufgraph/kretprobe.h>',
           '#include <ufgraph/rethook.h>', '#include "helpers/helpers.h"',
           'long ufg_test_call(long (*fn)(long), long x);',
           '/* Every expression below must be a pointer to a function type. */']
    types = {}
    for e in entries:
        if e['kind'] not in ('c', 'called'):
            continue
        key = (e['expr'], e['check'])
        if key in types:
            e['sym'] = types[key]
            continue
        n = len(types)
        e['sym'] = types[key] = f'ufg_kcfi_{n}'
        src.append(f'/* {e["pat"]} (line {e["line"]}) */')
        src.append(f'extern typeof(*({e["expr"]})) ufg_kcfi_{n};')
        src.append(f'void *ufg_kcfi_take_{n}(void);')
        src.append(f'void *ufg_kcfi_take_{n}(void) {{ return (void *)&ufg_kcfi_{n}; }}')
        if e['check']:
            chk = re.sub(r'\bF\b', f'ufg_kcfi_{n}', e['check'])
            src.append(f'void ufg_kcfi_check_{n}(void);')
            src.append(f'void ufg_kcfi_check_{n}(void) {{ {chk}; }}')
    with tempfile.TemporaryDirectory() as tmp:
        c, o = os.path.join(tmp, 'kcfi_types.c'), os.path.join(tmp, 'kcfi_types.o')
        with open(c, 'w') as f:
            f.write('\n'.join(src) + '\n')
        p = subprocess.run(cc_argv + ['-Werror', '-DKBUILD_MODFILE=\"kcfi\"', '-c', '-o', o, c],
                           cwd=kdir, capture_output=True, text=True)
        if p.returncode:
            sys.stderr.write(p.stderr)
            raise SystemExit('kcfi-audit: the list\'s C types do not compile (above)')
        typeids = {s['name'][len('__kcfi_typeid_'):]: s['value'] for s in Elf(o).syms
                   if s['name'].startswith('__kcfi_typeid_')}
    for e in entries:
        if e['kind'] in ('c', 'called'):
            if e['sym'] not in typeids:
                raise SystemExit(f'kcfi-audit: line {e["line"]}: clang emitted no type id for {e["expr"]}')
            e['hash'] = typeids[e['sym']] & 0xffffffff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--arch', required=True, choices=('x86_64', 'arm64'))
    ap.add_argument('--moddir', required=True)
    ap.add_argument('--kdir', required=True)
    ap.add_argument('--list', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'kcfi-audit.list'))
    ap.add_argument('--llvm', default='-19', help='suffix of the LLVM tools (-19, or empty)')
    ap.add_argument('-v', '--verbose', action='store_true', help='list every function, not only problems')
    a = ap.parse_args()

    entries = load_list(a.list)
    externc = extern_c_names(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    expected_hashes(entries, c_flags(a.moddir, 'src/helpers/helpers.o'), a.kdir, a.arch)
    bad = ncalls = 0
    kinds = {}
    with open(os.path.join(a.kdir, '.config')) as f:
        bti = a.arch == 'arm64' and 'CONFIG_ARM64_BTI_KERNEL=y\n' in f.read()
    for ko, helpers in (('ufgraph.ko', 'src/helpers/helpers.o'), ('ufgraph_kunit.ko', 'src/helpers/helpers_kunit.o')):
        path = os.path.join(a.moddir, ko)
        if not os.path.exists(path):
            continue
        elf = Elf(path)
        elf.names = {s['name'] for s in elf.syms}
        # The hash C gives each export's prototype: exports.c takes their addresses.
        exports = {s['name'][len('__kcfi_typeid_'):]: s['value'] & 0xffffffff
                   for s in Elf(os.path.join(a.moddir, helpers)).syms if s['name'].startswith('__kcfi_typeid_')}
        taken, mid = address_taken(elf, a.arch)
        hashes = set()
        ibt = ibt_view(elf, elf.code_syms()) if a.arch == 'x86_64' else None
        if ibt is not None:
            # objtool's own view, on the object it processed (ufgraph.o: the .ko adds the
            # .mod.o objtool never sees): the functions it found address-taken must be the
            # audit's.
            obj = Elf(path[:-3] + '.o')
            obj_taken, _ = address_taken(obj, a.arch)
            for k, n in sorted(ibt_view(obj, obj.code_syms()).items(), key=lambda kv: kv[1]):
                if k not in obj_taken:
                    print(f'UNKNOWN  {ko}: objtool kept the ENDBR of {n} (address taken), the audit did not '
                          f'find its address taken: teach address_taken')
                    bad += 1
        calls, unread = call_site_hashes(elf, a.arch)
        if unread:
            print(f'UNKNOWN  {ko}: {unread} of {unread + sum(map(len, calls.values()))} kCFI checks not read '
                  f'(a code sequence the audit does not know: teach call_site_hashes)')
            bad += 1
        for e in entries:
            if e['kind'] != 'called':
                continue
            if e['hash'] not in calls:
                print(f'MISMATCH {ko}: no indirect call checks {e["expr"]} ({e["hash"]:08x}), which ufgraph '
                      f'calls C handlers through (list line {e["line"]}): is its Rust type encoded as C\'s?')
                bad += 1
            else:
                kinds['called'] = kinds.get('called', 0) + 1
                if a.verbose:
                    print(f'called   {ko}: {len(calls[e["hash"]])} indirect calls check {e["expr"]} ({e["hash"]:08x})')
        dem = demangle(sorted({v[0] for v in taken.values()}), a.llvm)
        for (shndx, off), (name, where) in sorted(taken.items(), key=lambda kv: (dem[kv[1][0]], kv[0])):
            pretty = re.sub(r'\bufgraph_(main|kunit)\b', 'ufgraph', dem[name])
            e = next((e for e in entries if e['rx'].match(pretty)), None)
            got = preamble_hash(elf, a.arch, shndx, off, name)
            hashes.add(got)
            gots = 'none' if got is None else f'{got:08x}'
            if e is None:
                print(f'UNKNOWN  {ko}: {pretty} (hash {gots}; referred to from {", ".join(sorted(where))}): '
                      f'add it to {os.path.basename(a.list)}')
                bad += 1
                continue
            e['used'] += 1
            kinds[e['kind']] = kinds.get(e['kind'], 0) + 1
            if ibt is not None and e['kind'] != 'none' and (shndx, off) not in ibt:
                print(f'MISMATCH {ko}: {pretty}: no ENDBR, but called indirectly: IBT would stop the call')
                bad += 1
            if bti and e['kind'] != 'none' and elf.bytes_at(shndx, off, 4) not in BTI_PADS:
                print(f'MISMATCH {ko}: {pretty}: no BTI landing pad, but called indirectly: BTI would stop the call')
                bad += 1
            last = re.sub(r'::<.*$', '', pretty).rsplit('::', 1)[-1]
            if e['kind'] == 'rust' and last in externc:
                print(f'MISMATCH {ko}: {pretty} is listed as Rust-only (line {e["line"]}), but src/ defines '
                      f'an extern "C" fn {last}: which C type calls it?')
                bad += 1
                continue
            if e['kind'] in ('rust', 'none'):
                if a.verbose:
                    print(f'{e["kind"]:8} {ko}: {pretty} ({e["expr"]})')
                continue
            if e['kind'] == 'export':
                want, what = exports.get(name), 'its prototype in include/ufgraph/'
            else:
                want, what = e['hash'], e['expr']
            if want is None:
                print(f'UNKNOWN  {ko}: {pretty}: no C prototype hash (not declared in a header exports.c includes?)')
                bad += 1
            elif got != want:
                print(f'MISMATCH {ko}: {pretty}: hash {gots}, C calls it through {what} ({want:08x}); '
                      f'list line {e["line"]}')
                bad += 1
            elif a.verbose:
                print(f'ok       {ko}: {pretty} {got:08x} = {what}')
        # Every indirect call the module makes must check a hash that something it can reach
        # has: one of its own address-taken functions (Rust fn pointers, vtables, callbacks
        # it calls back itself) or a C type the list names (`called`, `c`). Another hash is a
        # call to a function of unknown type (a kernel function pointer through a Rust type).
        targets = {h for h in hashes if h is not None} | {e['hash'] for e in entries if 'hash' in e}
        for h, sites in sorted(calls.items()):
            if h not in targets:
                fn = demangle(sorted(set(sites)), a.llvm)
                print(f'UNKNOWN  {ko}: indirect call checking {h:08x}, which no function of the module '
                      f'and no type in the list has, in {", ".join(sorted(fn.values()))}')
                bad += 1
        ncalls += sum(map(len, calls.values()))
        if mid:
            print(f'note     {ko}: {mid} references into the middle of functions (not call targets)')
    for e in entries:
        if not e['used'] and e['kind'] != 'called':
            print(f'note     list line {e["line"]} ({e["pat"]}) matched no function')
    called = kinds.pop('called', 0)
    total = sum(kinds.values())
    if not kinds.get('c') or not ncalls:
        # Every build has callbacks and indirect calls: finding none means the audit no longer
        # understands the objects (a relocation or check sequence it does not know).
        print('UNKNOWN  no callback or no checked indirect call found: the audit cannot read these modules')
        bad += 1
    print(f'kcfi-audit {a.arch}: {total} address-taken functions: '
          + ', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))
          + f'; {ncalls} kCFI-checked indirect calls, each to a known type; {called} checks of C API handler types'
          + f'; {bad} problem(s)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
