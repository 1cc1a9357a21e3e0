// vector.multi_reduction has no lowering on gpu.func in MLIR 22.
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
    %vec = vector.broadcast %v : f32 to vector<2x4xf32>
    %acc = arith.constant dense<0.0> : vector<4xf32>
    %red = vector.multi_reduction <add>, %vec, %acc [0] : vector<2x4xf32> to vector<4xf32>
    %r = vector.extract %red[0] : f32 from vector<4xf32>
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
