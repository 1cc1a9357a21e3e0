// 2048 threads per block: CUDA allows at most 1024.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 1024, 2, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<1024xf32>
    memref.store %v, %y[%tid] : memref<1024xf32>
    gpu.return
  }
}
