gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<1024xf32>
    %r = arith.addf %v, %undefined : f32
    memref.store %r, %y[%tid] : memref<1024xf32>
    gpu.return
  }
}
