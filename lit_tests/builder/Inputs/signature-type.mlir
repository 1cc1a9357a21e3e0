// Wrong element type and a strided layout: arguments must be the subgraph's
// tensors as identity-layout memrefs.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf16>,
              %y: memref<1024xf32, strided<[1], offset: 4>>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<1024xf16>
    %w = arith.extf %v : f16 to f32
    memref.store %w, %y[%tid] : memref<1024xf32, strided<[1], offset: 4>>
    gpu.return
  }
}
