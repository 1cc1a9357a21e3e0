#!/bin/bash
# run-device.sh - the closed loop on the GPU machine (issue 14): the llm-fuse
# pass verifying and timing every candidate on this GPU, with a scripted
# model on loopback (llm_client/tests/kernel_server.py). Run from the
# repository root with the stage of bench/loop/prepare.sh carried in
# .device/loop:
#   bash bench/loop/run-device.sh OUT [CASE...]
# Cases (bench/loop/make_config.py): gemm block block-serial corpus-bad
# corpus-refine real-MODEL, and replay-EXAMPLE (examples/EXAMPLE.mlir on
# the offline default: the shipped kernels with their tune variants).
# Prints the table of bench/loop/summarize.py last.
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: run-device.sh OUT [CASE...]}" && cd "$1" && pwd)
shift
cases=${*:-gemm block corpus-bad corpus-refine}
stage=$root/.device/loop
if [ -z "${LF_LOOP_LOCAL:-}" ]; then # LF_LOOP_LOCAL=1: a dry run here
  mkdir -p /tmp/lf && tar -xJf "$stage/mlir-runtime.tar.xz" -C /tmp/lf
  export LD_LIBRARY_PATH=/tmp/lf/lib:/usr/local/nvidia/lib64
fi
export PATH=$stage/bin:/tmp/lf/bin:$PATH
export LLM_FUSE_PROMPTS_DIR=$root/llm_client/prompts
export LLM_FUSE_REPLAY_DIR=$root/kernels/replay
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LLM_FUSE_VERIFY=${LLM_FUSE_VERIFY:-$stage/bin/llm-fuse-verify}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader || true
llm-fuse-device-info || true

for c in $cases; do
  d=$out/$c && mkdir -p "$d"
  base=${c%-serial}
  model=examples/minigpt_block.mlir
  case $base in
    replay-*) # the offline default (the shipped kernels, their declared
              # tune variants timed here), no model server
      model=examples/${base#replay-}.mlir
      echo '{"rules": []}' > "$d/config.json"
      w=/tmp/lf-loop/$c && rm -rf "$w" && mkdir -p "$w"
      echo "== $c: $model (provider=replay)"
      t0=$(date +%s.%N)
      timeout 540 llm-fuse-opt --llm-fuse="arch=sm_90a cache-dir=$w/cache report=$d/report.json" \
        "$model" -o "$w/out.mlir" 2> "$d/err"
      echo "exit $?" >> "$d/err"
      t1=$(date +%s.%N)
      python3 -c "print('%.1f' % ($t1 - $t0))" > "$d/wall"
      grep -E "summary:|verified in|variant" "$d/err" | tail -30
      continue ;;
  esac
  opts=$(python3 bench/loop/make_config.py "$base" "$d") || exit 1
  case $base in
    gemm) model=examples/gemm_epilogue.mlir ;;
    corpus-*) model=lit_tests/verify/Inputs/corpus-model.mlir ;;
    real-*) model=bench/loop/models/${base#real-}.mlir ;;
  esac
  extra=""
  [ "$c" = block-serial ] && extra="max-concurrency=1"
  echo "== $c: $model ($opts $extra)"
  t0=$(date +%s.%N)
  w=/tmp/lf-loop/$c && rm -rf "$w" && mkdir -p "$w"
  timeout 540 python3 lit_tests/loop/Inputs/with_server.py \
    "$d/config.json" "$d/model.jsonl" -- \
    llm-fuse-opt --llm-fuse="provider=openai endpoint=http://127.0.0.1:@PORT@/v1 model=scripted arch=sm_90 cache-dir=$w/cache report=$d/report.json $opts $extra" \
    "$model" -o "$w/out.mlir" 2> "$d/err"
  echo "exit $?" >> "$d/err"
  t1=$(date +%s.%N)
  python3 -c "print('%.1f' % ($t1 - $t0))" > "$d/wall"
  grep -E "summary:|verified in|rejected in|asking" "$d/err" | tail -40
done
python3 bench/loop/summarize.py "$out" $cases | tee "$out/table.txt"
# one file back: everything under OUT, packed
(cd "$out" && tar -czf ../loop.tar.gz . ) && rm -rf "$out" && mkdir -p "$out" &&
  mv "$(dirname "$out")/loop.tar.gz" "$out/"
