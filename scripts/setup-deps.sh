#!/usr/bin/env bash
# setup-deps.sh - install the Debian packages llm-fuse builds and tests with.
#
# Installs only what is missing, non-interactively, after an apt-get update.
# Runs as root, or through sudo when available. Nothing else is downloaded:
# no vendored sources, no language package managers.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libcurl4-openssl-dev libcjson-dev libssl-dev zlib1g-dev
  clang-22 libclang-rt-22-dev
  nginx-light  # lit_tests/remote's WebDAV store; its system service is not used
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "setup-deps: need root (or passwordless sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
# nginx-light's post-install starts the system nginx on port 80 unless a
# policy-rc.d forbids it; the tests run their own nginx on loopback, so the
# service is never wanted. Forbid service starts for this install only.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 755 "$policy"
  added_policy=1
fi
status=0
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
if ((added_policy)); then
  "${sudo[@]}" rm -f "$policy"
fi
((status == 0)) || exit "$status"

if [[ ! -x /usr/local/cuda/bin/ptxas ]] && ! command -v ptxas >/dev/null; then
  echo "setup-deps: note: no CUDA toolkit (ptxas); PTX is still emitted," \
       "cubin tests are reported UNSUPPORTED"
fi
