// Row sums of a 64x32 matrix: one warp per row, a butterfly reduction with
// gpu.shuffle xor, lane 0 stores.
gpu.module @kernels {
  gpu.func @row_sum(%x: memref<64x32xf32>, %y: memref<64xf32>) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>,
                  known_grid_size = array<i32: 64, 1, 1>} {
    %row = gpu.block_id x
    %lane = gpu.thread_id x
    %v = memref.load %x[%row, %lane] : memref<64x32xf32>
    %width = arith.constant 32 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c4 = arith.constant 4 : i32
    %c8 = arith.constant 8 : i32
    %c16 = arith.constant 16 : i32
    %s1, %p1 = gpu.shuffle xor %v, %c16, %width : f32
    %a1 = arith.addf %v, %s1 : f32
    %s2, %p2 = gpu.shuffle xor %a1, %c8, %width : f32
    %a2 = arith.addf %a1, %s2 : f32
    %s3, %p3 = gpu.shuffle xor %a2, %c4, %width : f32
    %a3 = arith.addf %a2, %s3 : f32
    %s4, %p4 = gpu.shuffle xor %a3, %c2, %width : f32
    %a4 = arith.addf %a3, %s4 : f32
    %s5, %p5 = gpu.shuffle xor %a4, %c1, %width : f32
    %a5 = arith.addf %a4, %s5 : f32
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %lane, %c0 : index
    scf.if %first {
      memref.store %a5, %y[%row] : memref<64xf32>
    }
    gpu.return
  }
}
