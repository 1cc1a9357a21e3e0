// A kernel computing x^3 with math.fpowi and an i32 exponent: accepted.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
    %v = memref.load %x[%i] : memref<1024xf32>
    %c3 = arith.constant 3 : i32
    %r = math.fpowi %v, %c3 : f32, i32
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
