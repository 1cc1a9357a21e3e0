# device-env.sh - sourced by the GPU-machine scripts (bench/loop,
# bench/remote, bench/table): the MLIR runtime unpacked from the stage that
# bench/loop/prepare.sh made in .device/loop, the staged tools first on
# PATH, the data folders of this checkout, the staged verifier.
# Expects $root (the repository root); sets $stage ($STAGE, default
# .device/loop). LF_DEVICE_DRY=1 skips the unpack (a dry run on the build
# machine). $TABLE overrides the table folder.
stage=${STAGE:-$root/.device/loop}
if [ -z "${LF_DEVICE_DRY:-}" ]; then
  mkdir -p /tmp/lf && { [ -x /tmp/lf/bin ] || tar -xJf "$stage/mlir-runtime.tar.xz" -C /tmp/lf; }
  export LD_LIBRARY_PATH=/tmp/lf/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # The table's entries travel packed in the stage when the carried tree
  # leaves kernels/table/v1 (or its entries) out (the 64 MiB carry; bench/loop/prepare.sh).
  if ! ls "$root"/kernels/table/v1/*.json* >/dev/null 2>&1 && [ -f "$stage/table-v1.tar.xz" ]; then
    tar -xJf "$stage/table-v1.tar.xz" -C "$root/kernels/table"
  fi
fi
export PATH=$stage/bin:/tmp/lf/bin:$PATH
export LLM_FUSE_PROMPTS_DIR=$root/llm_client/prompts
export LLM_FUSE_REPLAY_DIR=$root/kernels/replay
export LLM_FUSE_TABLE_DIR=${TABLE:-$root/kernels/table}
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LLM_FUSE_VERIFY=${LLM_FUSE_VERIFY:-$stage/bin/llm-fuse-verify}
