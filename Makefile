# SPDX-License-Identifier: GPL-2.0
#
# ufgraph developer entry points. The kernel module itself is built by Kbuild
# (see Kbuild) through scripts/module.sh, never in this directory.
#
#   make demo     set up, build the test kernel and module, boot QEMU, show counts
#   make check    set up and run every test (host and in-VM); ends "N passed, N failed"
#                 (on the debug kernel: the set in selftests/sets/debug.list)
#   make check-debug   every in-VM test on the debug kernel (about 40 minutes under TCG)
#   make host-test   cargo test of the host-testable files (host/src/lib.rs) only
#   make lint     rustfmt (the kernel's .rustfmt.toml) and clippy on the host crates; make fmt reformats
#   make kcfi-audit   the kCFI audit of the built modules, every function listed (module.sh runs it quietly)
#   make fuzz     coverage-guided fuzzing of the host-testable files (libFuzzer): each target UFG_FUZZ_TIME s (600)
#   make stress   the long stress run (debug kernel): 1000 registration and module cycles
#   make attack   the attack set (selftests/attack: every context, the kernel's hookers stacked,
#                 task churn, hotplug, rmmod at every point); make attack-debug on the debug kernel
#   make shell    boot the test VM to an interactive shell
#   make bench    ufgraph against the kernel's own return hooks: tables in Documentation/benchmarks.md
#   make bench-arm64   the arm64 per-call table alone (make bench runs it first)
#   make bench-profile   one hooked call per hook, single-stepped: instructions (and locked ones) per function
#   make clean    remove build/ (kernel trees, tools, images)
#   make KDIR=DIR   build ufgraph.ko against the kernel build tree DIR (kmod_install, kmod_clean)

ARCH ?= x86_64
SHELL := /bin/bash

.PHONY: all setup kernel module demo check check-debug stress attack attack-debug host-test lint fmt kcfi-audit fuzz shell bench bench-arm64 bench-profile clean
.PHONY: kmod kmod_install kmod_clean

# Against an installed kernel instead of the test kernel (README.md, "Building against your
# kernel"): `make KDIR=/lib/modules/$(uname -r)/build` builds ufgraph.ko here, with Kbuild, as
# any external module (dkms.conf runs the same). A kernel built by clang (every kernel with
# Rust in practice) needs LLVM=1 for its modules too: read from its .config.
ifeq ($(origin KDIR),undefined)
all: module
else
all: kmod
endif
KDIR ?= /lib/modules/$(shell uname -r)/build
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) $(if $(LLVM),LLVM=$(LLVM),$(if $(shell grep -sx CONFIG_CC_IS_CLANG=y $(KDIR)/.config),LLVM=1))

# What README.md says the kernel must have (besides CONFIG_RUST), checked before Kbuild runs:
# otherwise the first error would be rustc's or bindgen's on a missing binding, far above the
# C glue's #error naming the option.
UFG_KCONFIG_NEEDED := CONFIG_DYNAMIC_FTRACE_WITH_ARGS CONFIG_EVENT_TRACING CONFIG_TRACEPOINTS CONFIG_DEBUG_FS

kmod:
	@test -f $(KDIR)/Makefile || { echo "ufgraph: no kernel build tree at KDIR=$(KDIR) (install the headers package of your kernel)"; exit 1; }
	@grep -qsx CONFIG_RUST=y $(KDIR)/.config || { echo "ufgraph: the kernel at KDIR=$(KDIR) has no CONFIG_RUST=y: ufgraph is a Rust module"; exit 1; }
	@missing=; for o in $(UFG_KCONFIG_NEEDED); do grep -qsx "$$o=y" $(KDIR)/.config || missing="$$missing $$o"; done; \
	grep -qsxE 'CONFIG_(X86_64|ARM64)=y' $(KDIR)/.config || missing="$$missing CONFIG_X86_64/CONFIG_ARM64"; \
	[ -z "$$missing" ] || { echo "ufgraph: the kernel at KDIR=$(KDIR) lacks$$missing (README.md: what ufgraph needs)"; exit 1; }
	$(KMAKE) modules

kmod_install: kmod
	$(KMAKE) modules_install

kmod_clean:
	$(KMAKE) clean

setup:
	scripts/setup.sh

kernel: setup
	scripts/kernel.sh $(ARCH)

module: kernel
	scripts/module.sh $(ARCH)

demo: module
	scripts/vm.sh $(ARCH) "" demo

check:
	scripts/check.sh

check-debug: setup
	scripts/kernel.sh $(ARCH) debug
	scripts/module.sh $(ARCH) debug
	UFG_DEBUG_ALL=1 scripts/vm.sh $(ARCH) debug check

stress: setup
	scripts/kernel.sh $(ARCH) debug
	scripts/module.sh $(ARCH) debug
	UFG_VM_TIMEOUT=7200 UFG_VM_APPEND="ufg.stress=100" scripts/vm.sh $(ARCH) debug check '5[0-9]-'

# The attack set alone (a filter no other test matches): about 15 minutes on
# the x86_64 test kernel and 30 on the debug kernel under TCG.
attack: setup
	scripts/kernel.sh $(ARCH)
	scripts/module.sh $(ARCH)
	UFG_VM_TIMEOUT=3600 UFG_VM_APPEND="ufg.attack=1" scripts/vm.sh $(ARCH) "" check 'atk-'

attack-debug: setup
	scripts/kernel.sh $(ARCH) debug
	scripts/module.sh $(ARCH) debug
	UFG_VM_TIMEOUT=7200 UFG_VM_APPEND="ufg.attack=1" scripts/vm.sh $(ARCH) debug check 'atk-'

host-test:
	cargo test --workspace

kcfi-audit:
	scripts/kcfi-audit.sh $(ARCH) "" -v

lint:
	scripts/lint.sh

fmt:
	scripts/lint.sh fix

fuzz: setup
	scripts/fuzz.sh --long

shell: module
	scripts/vm.sh $(ARCH) "" shell

# arm64 first (under a minute: per-call cost only; 6.12 has no kernel fprobe there), so that
# the x86_64 report's Targets see its log; then x86_64, everything (about 6 minutes).
bench: setup
	scripts/bench.sh --arch arm64
	scripts/bench.sh

bench-arm64: setup
	scripts/bench.sh --arch arm64

bench-profile: setup
	scripts/bench.sh --profile

clean:
	rm -rf build target
