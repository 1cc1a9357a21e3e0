// The toolchain llm-fuse builds kernels with: Debian's LLVM NVPTX back end
// emits PTX for Hopper (sm_90a) and Ampere (sm_80) through llm-fuse-opt, and
// the CUDA toolkit's ptxas assembles it into a cubin.
// RUN: %llm_fuse_opt %s --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a},gpu.module(convert-gpu-to-nvvm),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})' \
// RUN:   | FileCheck %s --check-prefix=PTX90
// RUN: %llm_fuse_opt %s --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_80},gpu.module(convert-gpu-to-nvvm),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})' \
// RUN:   | FileCheck %s --check-prefix=PTX80
// RUN: %if ptxas %{ %llm_fuse_opt %s --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a},gpu.module(convert-gpu-to-nvvm),reconcile-unrealized-casts,gpu-module-to-binary{format=bin})' \
// RUN:   | FileCheck %s --check-prefix=CUBIN %}

// PTX90: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90a">
// PTX90-SAME: .target sm_90a
// PTX90-SAME: .visible .entry scale(
// PTX80: .target sm_80
// CUBIN: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90a">, {{.*}}bin = "\7FELF
// CUBIN-SAME: .text.scale

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>} {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %0 = arith.muli %bid, %bdim : index
      %i = arith.addi %0, %tid : index
      %v = memref.load %x[%i] : memref<1024xf32>
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %y[%i] : memref<1024xf32>
      gpu.return
    }
  }
}
