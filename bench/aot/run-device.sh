#!/bin/bash
# run-device.sh - the device half of the ahead-of-time proof: links the
# driver against the compiled model and libllm_fuse_rt alone, runs it on
# the GPU and compares with the CPU reference (bench/aot/prepare.py made
# every file in DIR on the build machine). Needs gcc and the NVIDIA driver.
#
#   bench/aot/run-device.sh DIR [REPEATS]       (from the device tool: run)
set -euo pipefail
dir=${1:?usage: run-device.sh DIR [REPEATS]}
repeats=${2:-20}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/nvidia/lib64
entry=$(cat "$dir/entry")
cd "$dir"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
gcc -std=c17 -O2 -Wall -Wextra -Werror -I. -DENTRY="$entry" \
  -DHEADER='"model.h"' driver.c model.o libllm_fuse_rt.a -ldl -lpthread -lm \
  -o driver
echo "driver links: $(ldd driver | awk '{print $1}' | tr '\n' ' ')"
./driver . "$repeats"
