#!/usr/bin/env bash
# rows-tune-prepare.sh - on the build machine: stages what
# bench/table/rows-tune-device.sh needs (bench/table/rows_tune.py prepare:
# the held-out subgraphs' default lowerings, every tune variant of their
# row entries as git REV has them and as the working tree has them, built
# for sm_90a; the verification worker, libllm_fuse_rt.so). Needs the
# held-out models: python3 bench/table/heldout.py device-script ... (in
# .device/heldout).
#
#   bash bench/table/rows-tune-prepare.sh [STAGE] [BUILD] [REV]
#   (.device/rows-tune, build, HEAD); then carry STAGE and run there:
#   bash bench/table/rows-tune-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/rows-tune}
build=${2:-$root/build}
rm -rf "$stage"
python3 "$root/bench/table/rows_tune.py" prepare "$stage" --build "$build" --old-rev "${3:-HEAD}"
du -sh "$stage"
