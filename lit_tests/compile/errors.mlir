// Bad input: located errors and a non-zero exit, never a crash.
// RUN: rm -rf %t && mkdir -p %t && split-file %s %t

// A syntax error: the parser's located error, exit 1.
// RUN: not llm-fuse-compile --no-llm-fuse %t/syntax.mlir -o %t/a.o 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: syntax.mlir:2:12: error: expected ':'
// SYNTAX: llm-fuse-compile: {{.*}}syntax.mlir could not be read or parsed

// A missing file.
// RUN: not llm-fuse-compile --no-llm-fuse %t/missing.mlir -o %t/a.o 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: could not be read or parsed

// Dynamic shapes at the boundary: the entry point is named and located.
// RUN: not llm-fuse-compile --no-llm-fuse %t/dynamic.mlir -o %t/a.o 2>&1 | FileCheck %s --check-prefix=DYN
// DYN: dynamic.mlir:1:1: error: entry point @dyn: argument 0 has type 'tensor<?x16xf32>'; llm-fuse-compile takes statically shaped tensors
// DYN: 1 entry point(s) cannot be compiled

// Host code that would read device memory is refused where it stands.
// RUN: not llm-fuse-compile --no-llm-fuse %t/host.mlir -o %t/a.o 2>&1 | FileCheck %s --check-prefix=HOST
// HOST: host.mlir:4:8: error: 'memref.load' stays on the host after the default GPU mapping
// HOST: 1 host op(s) cannot run with device-resident tensors

// Nothing public to compile.
// RUN: not llm-fuse-compile --no-llm-fuse %t/private.mlir -o %t/a.o 2>&1 | FileCheck %s --check-prefix=PRIV
// PRIV: private.mlir:0:0: error: no public function with a body: nothing to compile

// No object or header is left behind by a failure.
// RUN: not ls %t/a.o %t/a.h

// Usage errors exit 2.
// RUN: not llm-fuse-compile %t/host.mlir 2>&1 | FileCheck %s --check-prefix=USAGE
// RUN: not llm-fuse-compile %t/host.mlir -o %t/a.o --chip sm_70 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not llm-fuse-compile %t/host.mlir -o %t/a.o --format elf 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not llm-fuse-compile %t/host.mlir -o %t/a.o --llm-fuse-options 'no-such-option=1' 2>&1 | FileCheck %s --check-prefix=OPTS
// RUN: sh -c 'llm-fuse-compile %t/host.mlir -o %t/a.o --chip sm_70 2>/dev/null; test $? -eq 2'
// RUN: sh -c 'llm-fuse-compile --no-llm-fuse %t/host.mlir -o %t/a.o 2>/dev/null; test $? -eq 1'
// USAGE: usage: llm-fuse-compile MODEL.mlir -o OUT.o
// CHIP: --chip must be sm_80, sm_90 or sm_90a, not 'sm_70'
// FORMAT: --format must be auto, ptx, cubin or fatbin, not 'elf'
// OPTS: error

//--- syntax.mlir
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a tensor<4xf32>
}
//--- dynamic.mlir
func.func @dyn(%a: tensor<?x16xf32>) -> tensor<?x16xf32> {
  return %a : tensor<?x16xf32>
}
//--- host.mlir
func.func @host(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4xf32>
  %v = tensor.extract %a[%c0] : tensor<4xf32>
  %r = linalg.fill ins(%v : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
//--- private.mlir
func.func private @p(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
