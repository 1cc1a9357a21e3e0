// RMSNorm of examples/rmsnorm.mlir's subgraph, y = x * rsqrt(mean(x^2) +
// 1e-6) * w over 16384 rows of 4096 bf16: one 256-thread block per row, 16
// elements per thread as two vector<8xbf16> loads, warp shuffles, then the
// eight warp sums through shared memory (a workgroup attribution).
gpu.module @kernels {
  gpu.func @rmsnorm(%x: memref<16384x4096xbf16>, %w: memref<4096xbf16>,
                    %y: memref<16384x4096xbf16>)
      workgroup(%partial : memref<8xf32, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: 256, 1, 1>,
                         known_grid_size = array<i32: 16384, 1, 1>} {
    %row = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c2048 = arith.constant 2048 : index
    %zero = arith.constant 0.0 : f32
    %col0 = arith.muli %tid, %c8 : index
    %sum = scf.for %k = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
      %off = arith.muli %k, %c2048 : index
      %col = arith.addi %col0, %off : index
      %v = vector.load %x[%row, %col] : memref<16384x4096xbf16>, vector<8xbf16>
      %f = arith.extf %v : vector<8xbf16> to vector<8xf32>
      %sq = arith.mulf %f, %f : vector<8xf32>
      %s = vector.reduction <add>, %sq : vector<8xf32> into f32
      %a = arith.addf %acc, %s : f32
      scf.yield %a : f32
    }
    %width = arith.constant 32 : i32
    %o1 = arith.constant 1 : i32
    %o2 = arith.constant 2 : i32
    %o4 = arith.constant 4 : i32
    %o8 = arith.constant 8 : i32
    %o16 = arith.constant 16 : i32
    %s1, %p1 = gpu.shuffle xor %sum, %o16, %width : f32
    %a1 = arith.addf %sum, %s1 : f32
    %s2, %p2 = gpu.shuffle xor %a1, %o8, %width : f32
    %a2 = arith.addf %a1, %s2 : f32
    %s3, %p3 = gpu.shuffle xor %a2, %o4, %width : f32
    %a3 = arith.addf %a2, %s3 : f32
    %s4, %p4 = gpu.shuffle xor %a3, %o2, %width : f32
    %a4 = arith.addf %a3, %s4 : f32
    %s5, %p5 = gpu.shuffle xor %a4, %o1, %width : f32
    %warp_sum = arith.addf %a4, %s5 : f32
    %lane = arith.remui %tid, %c32 : index
    %warp = arith.divui %tid, %c32 : index
    %lane0 = arith.cmpi eq, %lane, %c0 : index
    scf.if %lane0 {
      memref.store %warp_sum, %partial[%warp] : memref<8xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %total = scf.for %j = %c0 to %c8 step %c1 iter_args(%t = %zero) -> (f32) {
      %p = memref.load %partial[%j] : memref<8xf32, #gpu.address_space<workgroup>>
      %tp = arith.addf %t, %p : f32
      scf.yield %tp : f32
    }
    %n = arith.constant 4096.0 : f32
    %eps = arith.constant 9.99999997E-7 : f32
    %mean = arith.divf %total, %n : f32
    %me = arith.addf %mean, %eps : f32
    %r = math.rsqrt %me : f32
    %rv = vector.broadcast %r : f32 to vector<8xf32>
    scf.for %k = %c0 to %c2 step %c1 {
      %off = arith.muli %k, %c2048 : index
      %col = arith.addi %col0, %off : index
      %v = vector.load %x[%row, %col] : memref<16384x4096xbf16>, vector<8xbf16>
      %wv = vector.load %w[%col] : memref<4096xbf16>, vector<8xbf16>
      %f = arith.extf %v : vector<8xbf16> to vector<8xf32>
      %wf = arith.extf %wv : vector<8xbf16> to vector<8xf32>
      %m1 = arith.mulf %f, %rv : vector<8xf32>
      %m2 = arith.mulf %m1, %wf : vector<8xf32>
      %t = arith.truncf %m2 : vector<8xf32> to vector<8xbf16>
      vector.store %t, %y[%row, %col] : memref<16384x4096xbf16>, vector<8xbf16>
    }
    gpu.return
  }
}
