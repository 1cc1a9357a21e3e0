#!/usr/bin/env bash
# f32-splitk-device.sh - on the GPU machine: bench/tma/splitk-device.sh on a
# stage of bench/tma/f32-splitk-prepare.sh: verifies every kernel variant
# with the verification worker (llm-fuse-verify against the default MLIR
# lowering, the exact f32 tolerance; verdicts in $F32SK_VERIFY_DIR, default
# /tmp/f32sk-verify), then checks (float64, bit-identical repeat) and times
# them beside torch eager and torch.compile (TF32 off) in one process
# (bench/tma/f32_splitk_bench.py run); the table is printed last.
#
#   bash bench/tma/f32-splitk-device.sh STAGE OUT
#   (F32SK_VERIFY_TRIALS default 2; SPLITK_BUDGET_MS default 150 per
#    variant; SPLITK_COMPILE_UNTIL_S: no torch.compile after that many s)
SPLITK_VERIFY_DIR=${F32SK_VERIFY_DIR:-/tmp/f32sk-verify} \
SPLITK_VERIFY_TRIALS=${F32SK_VERIFY_TRIALS:-2} \
SPLITK_BENCH=bench/tma/f32_splitk_bench.py \
  exec bash "$(dirname "$0")/splitk-device.sh" "$@"
