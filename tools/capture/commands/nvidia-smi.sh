#!/bin/sh
# Capture what the inventory script asks nvidia-smi, on a machine with NVIDIA GPUs, into OUT (default
# tests/fixtures/commands): the GPU query (with compute_cap, then the form without it that older drivers
# need), the version banner, and the head of the table (where older drivers print "CUDA Version").
# The query fields are those of sparktui/core/inventory/script.py (a test checks they agree).
set -u
OUT=${1:-$(dirname "$0")/../../../tests/fixtures/commands}
NAME=${2:-$(uname -n)}
Q=index,name,memory.total,driver_version,compute_cap,pci.bus_id
nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits >"$OUT/nvidia-smi-query-$NAME.txt" 2>&1
nvidia-smi --version >"$OUT/nvidia-smi-version-$NAME.txt" 2>&1
nvidia-smi 2>&1 | head -n 6 >"$OUT/nvidia-smi-table-$NAME.txt"
