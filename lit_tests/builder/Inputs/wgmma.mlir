// Hopper-only instructions (wgmma fences, setmaxnreg): sm_90a only. Built
// for sm_90 the builder switches to sm_90a; for sm_80 it is a contract error.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 8, 1, 1>} {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c128 = arith.constant 128 : index
    %base = arith.muli %bid, %c128 : index
    %i = arith.addi %base, %tid : index
    nvvm.setmaxregister increase 232
    nvvm.wgmma.fence.aligned
    nvvm.wgmma.commit.group.sync.aligned
    nvvm.wgmma.wait.group.sync.aligned 0
    %v = memref.load %x[%i] : memref<1024xf32>
    memref.store %v, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
