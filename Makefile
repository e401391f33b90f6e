# SPDX-License-Identifier: GPL-2.0
#
# ufgraph developer entry points. The kernel module itself is built by Kbuild
# (see Kbuild) through scripts/module.sh, never in this directory.
#
#   make demo     set up, build the test kernel and module, boot QEMU, show counts
#   make check    set up and run every test (host and in-VM); ends "N passed, N failed"
#   make host-test   cargo test of src/pure on the host only
#   make shell    boot the test VM to an interactive shell
#   make clean    remove build/ (kernel trees, tools, images)

ARCH ?= x86_64
SHELL := /bin/bash

.PHONY: all setup kernel module demo check host-test shell clean

all: module

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

host-test:
	cargo test --workspace

shell: module
	scripts/vm.sh $(ARCH) "" shell

clean:
	rm -rf build target
