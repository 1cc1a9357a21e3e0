#!/usr/bin/env bash
# device-demo.sh - `make demo`'s script on the GPU machine, which has no
# Debian LLVM/MLIR: unpacks the MLIR runtime pack, points the data lookups
# at this tree, and runs scripts/demo.sh on a lean build folder (stripped
# tools and libllm_fuse_rt.a, staged by hand into .device/demo/build).
#   bash scripts/device-demo.sh PACK.tar.xz LEAN_BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p /tmp/lf && tar -xJf "${1:?pack}" -C /tmp/lf
export LD_LIBRARY_PATH=/tmp/lf/lib:/usr/local/nvidia/lib64 PATH=/tmp/lf/bin:$PATH
export LLM_FUSE_PROMPTS_DIR=$root/llm_client/prompts
export LLM_FUSE_REPLAY_DIR=$root/kernels/replay
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
bash "$root/scripts/demo.sh" "${2:?lean build dir}"
