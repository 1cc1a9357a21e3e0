// A kernel name PTX would rewrite ('.' is not allowed in PTX names): the
// launcher could not find the entry by its MLIR name.
gpu.module @kernels {
  gpu.func @"add.relu"(%x0: memref<1024xf32>, %x1: memref<1024xf32>,
                     %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
    %a = memref.load %x0[%i] : memref<1024xf32>
    %b = memref.load %x1[%i] : memref<1024xf32>
    %s = arith.addf %a, %b : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
