#!/usr/bin/env bash
# run-fuzzers.sh - build llm_client's libFuzzer targets with clang-22 and run
# each one for a fixed time; fail on any crash, leak, sanitizer report,
# broken invariant or timeout.
#
# The targets are built here, apart from the main (gcc) build: clang-22
# compiles the few sources they need with -fsanitize=fuzzer,address,undefined
# and links the system cJSON, libcrypto and libcurl. Each target's corpus
# starts from the checked-in seeds in corpus/<target>/ and grows in the build
# folder (corpus/<target>/ there), so later runs start further along; the
# seeds themselves are never written.
#
#   run-fuzzers.sh [--build-dir DIR]
#
# Environment:
#   LF_FUZZ_SECONDS  time per target (default 20)
#   LF_FUZZ_TARGETS  which targets (default: reply chat_response sse_stream
#                    cache_entry tune keyring)
#   LF_FUZZ_CC       the compiler (default: clang-22, else
#                    /usr/lib/llvm-22/bin/clang)
#
# Exit status: 0 all targets ran clean; 1 a target failed or would not
# build; 77 skipped (no clang-22 or no libFuzzer runtime: install clang-22
# and libclang-rt-22-dev, as scripts/setup-deps.sh does).
#
# To reproduce a failure: <build-dir>/fuzz_<target> <artifact file>.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build-fuzz"
while (($#)); do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a folder}; shift 2 ;;
    --build-dir=*) build=${1#*=}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-fuzzers: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
seconds=${LF_FUZZ_SECONDS:-20}
targets=${LF_FUZZ_TARGETS:-reply chat_response sse_stream cache_entry tune keyring}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "run-fuzzers: LF_FUZZ_SECONDS must be a positive number of seconds" >&2
  exit 1
fi

cc=${LF_FUZZ_CC:-}
if [[ -z "$cc" ]]; then
  if command -v clang-22 >/dev/null; then cc=clang-22
  elif [[ -x /usr/lib/llvm-22/bin/clang ]]; then cc=/usr/lib/llvm-22/bin/clang
  fi
fi
if [[ -z "$cc" ]]; then
  echo "run-fuzzers: SKIPPED: clang-22 not found (apt-get install clang-22" \
       "libclang-rt-22-dev, or run scripts/setup-deps.sh)"
  exit 77
fi

mkdir -p "$build"
flags=(-std=c17 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -Wall -Wextra -Werror "-ffile-prefix-map=$root/=" -I "$root")

# The runtimes come in libclang-rt-22-dev: probe before blaming our code.
probe="$build/probe.c"
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)' \
  '{ (void)d; (void)n; return 0; }' > "$probe"
if ! "$cc" "${flags[@]}" "$probe" -o "$build/probe" 2>"$build/probe.log"; then
  echo "run-fuzzers: SKIPPED: $cc cannot link -fsanitize=fuzzer,address,undefined" \
       "(install libclang-rt-22-dev): $(tail -1 "$build/probe.log")"
  exit 77
fi

base=("$root"/base/status.c "$root"/base/strbuf.c "$root"/base/log.c
      "$root"/base/fs.c "$root"/base/sha256.c "$root"/base/base64.c)
sources_of() {
  case "$1" in
    reply) echo "$root/llm_client/reply.c" ;;
    chat_response|sse_stream) echo "$root/llm_client/http_client.c" ;;
    cache_entry) echo "$root/llm_client/cache.c $root/llm_client/sign.c" \
                      "$root/llm_client/remote.c" ;;
    tune) echo "$root/llm_client/tune.c" ;;
    keyring) echo "$root/llm_client/sign.c" ;;
  esac
}
libs_of() {
  case "$1" in
    chat_response|sse_stream|cache_entry)
      echo "-lcurl -lcjson -lcrypto -lm -lpthread" ;;
    *) echo "-lcjson -lcrypto -lm" ;;
  esac
}

failed=0
summary=()
for t in $targets; do
  src="$here/fuzz_$t.c"
  seeds="$here/corpus/$t"
  if [[ ! -f "$src" || ! -d "$seeds" ]]; then
    echo "run-fuzzers: unknown target '$t' (no $src or $seeds)" >&2
    exit 1
  fi
  bin="$build/fuzz_$t"
  echo "run-fuzzers: building fuzz_$t"
  # shellcheck disable=SC2046
  if ! "$cc" "${flags[@]}" "$src" $(sources_of "$t") "${base[@]}" \
       $(libs_of "$t") -o "$bin"; then
    echo "run-fuzzers: FAILED to build fuzz_$t" >&2
    failed=1
    continue
  fi
  work="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  mkdir -p "$work" "$artifacts"
  dict=()
  [[ -f "$here/$t.dict" ]] && dict=("-dict=$here/$t.dict")
  log="$build/fuzz_$t.log"
  echo "run-fuzzers: running fuzz_$t for ${seconds}s (log: $log)"
  rc=0
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
    "$work" "$seeds" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if ((rc != 0)); then
    failed=1
    echo "run-fuzzers: FAILED: fuzz_$t exited with $rc; the end of its log:" >&2
    tail -40 "$log" >&2
    echo "run-fuzzers: reproduce with: $bin $artifacts/<crash file>" >&2
    ls -1 "$artifacts" >&2 || true
    summary+=("fuzz_$t: FAILED (exit $rc)")
  else
    summary+=("fuzz_$t: ok, ${execs:-?} runs in ${seconds}s (${rate:-?} exec/s), ${cov:-cov: ?}, corpus $(ls -1 "$work" | wc -l) files")
  fi
done

printf 'run-fuzzers: %s\n' "${summary[@]}"
exit "$failed"
