#!/bin/bash
# attn-device.sh - the causal-attention templates (kernels/table/attn_any.py)
# on the GPU machine: bench/table/attn_bench.py's attention models (the
# attention subgraph of examples/minigpt_block.mlir at several S x H x D)
# compiled by the pass on the offline default (the replay set misses, the
# table answers; at 1024 x 12 x 64 the replay set's handwritten kernel
# answers, the reference point), each candidate verified and timed against
# the default lowering; then the same math in torch
# (scaled_dot_product_attention, causal: eager, torch.compile, bf16 flash
# attention for scale), and the summary table.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop:
#   bash bench/table/attn-device.sh OUT
# QUICK=1 fewer models; NO_TORCH=1 skips torch; TABLE=DIR another table.
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: attn-device.sh OUT}" && cd "$1" && pwd)
bench=attn_bench.py torch_timeout=420
# attention-like subgraphs are verified with lenient non-finite values (the
# pass asks for it by class)
. "$root/bench/table/bench-device.sh"
