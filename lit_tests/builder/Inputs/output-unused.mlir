// The output is never touched, so it is never written.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<1024xf32>
    gpu.return
  }
}
