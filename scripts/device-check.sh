#!/usr/bin/env bash
# device-check.sh - on the GPU machine: run the GPU probe and the lit suite
# with the binaries staged by device-pack.sh. Writes logs under $OUT.
set -uo pipefail
root=$(pwd)
out=${OUT:-/tmp/lf-out}
mkdir -p /tmp/lf "$out"
tar -xJf .device/mlir-runtime.tar.xz -C /tmp/lf
export LD_LIBRARY_PATH=/tmp/lf/lib:/usr/local/nvidia/lib64
export PATH=$root/.device/tools/bin:/tmp/lf/bin:/usr/local/cuda/bin:$PATH
tools=$root/.device/tools

echo "== llm-fuse-device-info"
llm-fuse-device-info | tee "$out/devices.json"
echo "exit status: ${PIPESTATUS[0]}"

echo "== lit suite"
obj=/tmp/lf-obj
mkdir -p "$obj/lit_tests" "$obj/bin" "$obj/lib"
cp "$tools"/bin/llm-fuse-* "$obj/bin/"
cp "$tools"/lib/* "$obj/lib/"
sed -e "s|@CMAKE_SOURCE_DIR@|$root|" -e "s|@CMAKE_BINARY_DIR@|$obj|" \
    -e "s|@LLVM_TOOLS_BINARY_DIR@|$tools/bin|" \
    -e "s|@LF_MLIR_OPT@|/tmp/lf/bin/mlir-opt-22|" -e "s|@LF_MLIR_RUNNER@||" \
    -e "s|@LF_FILECHECK@|$tools/bin/FileCheck|" \
    -e "s|@LF_PTXAS@|$(command -v ptxas || true)|" \
    -e "s|@LF_CUDA_INCLUDE_DIR@|/usr/local/cuda/include|" \
    lit_tests/lit.site.cfg.py.in > "$obj/lit_tests/lit.site.cfg.py"
PYTHONPATH=$tools python3 -c 'import sys; from lit.main import main; sys.argv[0]="lit"; main()' \
  -v "$obj/lit_tests" 2>&1 | tee "$out/lit.log"
