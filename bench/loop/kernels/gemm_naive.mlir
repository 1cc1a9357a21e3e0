// gemm_naive: the first kernel a model might write for the gemm_epilogue
// example (Y = relu((X * W - 0.5) * 2), X 1024x8192, W 8192x8192, f32):
// one thread per output element, a plain loop over K, no tiling. Correct,
// and many times slower than a tiled kernel.
gpu.module @kernels {
  gpu.func @gemm_naive(%x: memref<1024x8192xf32>, %w: memref<8192x8192xf32>,
                       %y: memref<1024x8192xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 32, 1024, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ck = arith.constant 8192 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0.0 : f32
    %half = arith.constant 0.5 : f32
    %two = arith.constant 2.0 : f32
    %bx = gpu.block_id x
    %row = gpu.block_id y
    %tx = gpu.thread_id x
    %base = arith.muli %bx, %c256 : index
    %col = arith.addi %base, %tx : index
    %acc = scf.for %k = %c0 to %ck step %c1 iter_args(%a = %zero) -> (f32) {
      %xv = memref.load %x[%row, %k] : memref<1024x8192xf32>
      %wv = memref.load %w[%k, %col] : memref<8192x8192xf32>
      %p = arith.mulf %xv, %wv : f32
      %s = arith.addf %a, %p : f32
      scf.yield %s : f32
    }
    %d = arith.subf %acc, %half : f32
    %m = arith.mulf %d, %two : f32
    %r = arith.maximumf %m, %zero : f32
    memref.store %r, %y[%row, %col] : memref<1024x8192xf32>
    gpu.return
  }
}
