#!/bin/bash
# rows-device.sh - the general row templates (kernels/table/rows_any.py) on
# the GPU machine: bench/table/rows_bench.py's models compiled by the pass on
# the offline default (the replay set misses, the table answers), each
# candidate verified and timed against the default lowering; then the same
# math in torch eager and torch.compile, and the summary table.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop:
#   bash bench/table/rows-device.sh OUT
# QUICK=1 fewer models; TABLE=DIR another table (e.g. only the general
# entries, to time them where a size-specific entry would win).
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: rows-device.sh OUT}" && cd "$1" && pwd)
bench=rows_bench.py torch_timeout=300
. "$root/bench/table/bench-device.sh"
