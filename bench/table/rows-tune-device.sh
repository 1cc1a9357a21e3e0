#!/usr/bin/env bash
# rows-tune-device.sh - on the GPU machine: bench/table/rows_tune.py run over
# the stage bench/table/rows-tune-prepare.sh made (the row entries' tune
# variants before and after, at the held-out sizes that missed issue 15's
# targets), each variant checked, verified by llm-fuse-verify and timed
# beside torch eager, torch.compile and a copy of the same bytes.
#
#   bash bench/table/rows-tune-device.sh STAGE OUT   (ROWS_TUNE_ARGS: extra
#   arguments of rows_tune.py run, e.g. --no-verify or --budget-ms 30)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: rows-tune-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: rows-tune-device.sh STAGE OUT}" && cd "$2" && pwd)
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
cd "$root"
PYTHONUNBUFFERED=1 python3 bench/table/rows_tune.py run "$stage" "$out/rows-tune.json" ${ROWS_TUNE_ARGS:-} \
  2>&1 | grep -v -i "warn" | tee "$out/rows-tune.log"
