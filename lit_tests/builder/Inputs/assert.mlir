// A kernel with a device assert: cf.assert is forbidden.
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
    %zero = arith.constant 0.0 : f32
    %ok = arith.cmpf oge, %v, %zero : f32
    cf.assert %ok, "negative input"
    %r = arith.addf %v, %v : f32
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
