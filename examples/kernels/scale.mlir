// A minimal hand-written gpu.module: y = 2 * x over 1024 floats, 256 threads
// per block. It exercises the NVPTX/ptxas toolchain in the demo and tests.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>,
                    known_grid_size = array<i32: 4, 1, 1>} {
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
