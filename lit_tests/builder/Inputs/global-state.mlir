// A mutable global in device memory: state that outlives a launch.
gpu.module @kernels {
  memref.global "private" @counter : memref<1xf32> = dense<0.0>
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
    %v = memref.load %x[%i] : memref<1024xf32>
    %g = memref.get_global @counter : memref<1xf32>
    %c0 = arith.constant 0 : index
    %old = memref.atomic_rmw addf %v, %g[%c0] : (f32, memref<1xf32>) -> f32
    memref.store %old, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
