#!/usr/bin/env bash
# build-ahead-device.sh - on the GPU machine: the pass's wall time with and
# without build-ahead (building a reply's next tune variant while the
# previous one is verified), on held-out models staged by `heldout.py
# device-script` (pass only, TORCH=0; a fresh cache each run), in turns
# true, false, true, false. Carry .device/loop and HELDOUT.
#   bash bench/table/build-ahead-device.sh HELDOUT OUT [ONLY_REGEX]
set -uo pipefail
held=${1:?usage: build-ahead-device.sh HELDOUT OUT [ONLY]}
out=$(mkdir -p "${2:?usage: build-ahead-device.sh HELDOUT OUT [ONLY]}" && cd "$2" && pwd)
only=${3:-.}
for run in 1 2 3 4; do
  case $run in 1|3) opt="build-ahead=true";; *) opt="build-ahead=false";; esac
  TORCH=0 ONLY="$only" OPTIONS="$opt" bash bench/table/heldout-device.sh "$held" "/tmp/ba$run" > "/tmp/ba$run.log" 2>&1
  grep -o "== [0-9A-Za-z_]*: exit [0-9]* in [0-9]* ms" "/tmp/ba$run.log" > "$out/ba$run-models.txt"
  python3 - "$run" "$opt" "/tmp/ba$run" "$out/ba$run-models.txt" <<'PY'
import glob, json, sys
run, opt, d, models = sys.argv[1:]
ms = [int(l.split()[-2]) for l in open(models)]
sw = sum(1 for f in glob.glob(d + "/reports/*.json")
         for s in json.load(open(f)).get("subgraphs", []) if s.get("decision") == "swapped")
print("run %s %-18s %d models, wall sum %d ms, swapped %d" % (run, opt, len(ms), sum(ms), sw))
PY
done
