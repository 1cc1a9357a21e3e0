#!/usr/bin/env bash
# verify-corpus.sh - runs the verification worker on every staged case, on
# the GPU machine, in one go, and prints the table
#   kernel | expected | verdict | reason | ms | match
# Cases come from scripts/stage-verify.py (default .device/verify):
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1,
#   STAGE/cases.tsv: name, plan.json, result.json, expected reasons
#   ("accept", or reason words joined by '|'), extra worker arguments.
# Every verdict (with the case name and the worker's stderr) goes to
# OUT/verdicts.jsonl. Each case runs through the client (--isolated: child process, own process
# group, watchdog), so a crash or hang is a verdict like any other.
#   scripts/verify-corpus.sh [STAGE] [OUT]     exit 1 if any case mismatches
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage=${1:-$root/.device/verify}
out=${2:-${OUT:-/tmp/verify-out}}
mkdir -p "$out/verdicts"
: > "$out/verdicts.jsonl"
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=$stage/bin/llm-fuse-verify
bad=0 n=0
printf '%-34s | %-40s | %-8s | %-22s | %8s | %s\n' kernel expected verdict reason ms match
while IFS=$'\t' read -r name plan cand expected extra; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  n=$((n + 1))
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  "$bin" --isolated --watchdog-floor-ms 10000 --plan "$stage/$plan" \
    --candidate "$stage/$cand" $extra --out "$out/verdicts/$name.json" \
    2> "$out/verdicts/$name.stderr"
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  reason=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(v["reason"])' \
           "$out/verdicts/$name.json" 2>/dev/null || echo "(no verdict, rc $rc)")
  verdict=$([[ $rc == 0 ]] && echo accepted || echo rejected)
  ok=no
  if [[ "$expected" == accept ]]; then
    [[ $rc == 0 ]] && ok=yes
  elif [[ $rc == 1 ]] && [[ "|$expected|" == *"|$reason|"* ]]; then
    ok=yes
  fi
  [[ $ok == yes ]] || bad=$((bad + 1))
  { cat "$out/verdicts/$name.json" 2>/dev/null || echo '{}'; } |
    python3 -c 'import json,sys; v=json.loads(sys.stdin.read() or "{}"); v["case"]=sys.argv[1]; v["stderr"]=open(sys.argv[2]).read()[-2000:]; print(json.dumps(v))' \
    "$name" "$out/verdicts/$name.stderr" >> "$out/verdicts.jsonl"
  printf '%-34s | %-40s | %-8s | %-22s | %8s | %s\n' "$name" "$expected" "$verdict" "$reason" "$ms" "$ok"
done < "$stage/cases.tsv"
echo "$n case(s), $bad not as expected"
rm -rf "$out/verdicts"   # all of it is in verdicts.jsonl
[[ $bad == 0 ]]
