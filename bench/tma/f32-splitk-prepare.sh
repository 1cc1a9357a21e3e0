#!/usr/bin/env bash
# f32-splitk-prepare.sh - stages, on the build machine, what bench/tma/
# f32-splitk-device.sh needs on the GPU machine (session 25: split-K and the
# 64-row A box for the exact-f32 3xTF32 TMA GEMM, and the table entries that
# offer them; bench/tma/f32_splitk_bench.py says what is built). The stage's
# layout is bench/tma/splitk-prepare.sh's, which does the work with this
# case script.
#
#   bash bench/tma/f32-splitk-prepare.sh [STAGE] [BUILD]   (.device/f32splitk, build)
# then carry STAGE and run there: bash bench/tma/f32-splitk-device.sh STAGE $OUT
# (F32SK_ONLY=REGEX: only the cases whose name matches; F32SK_SET=confirm: the
# second run's cases, table variants only)
root=$(cd "$(dirname "$0")/../.." && pwd)
SPLITK_BENCH=bench/tma/f32_splitk_bench.py exec bash "$root/bench/tma/splitk-prepare.sh" \
  "${1:-$root/.device/f32splitk}" "${2:-$root/build}"
