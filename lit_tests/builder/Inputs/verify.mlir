// An op whose operand types do not match: a verifier error.
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
    %h = arith.truncf %v : f32 to f16
    %r = "arith.addf"(%v, %h) : (f32, f16) -> f32
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
