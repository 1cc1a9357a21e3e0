// y = 2 * x over 4096 bf16 values, eight per thread with 16-byte vector
// loads and stores (vector<8xbf16>).
gpu.module @kernels {
  gpu.func @scale_bf16(%x: memref<4096xbf16>, %y: memref<4096xbf16>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c128 = arith.constant 128 : index
    %c8 = arith.constant 8 : index
    %0 = arith.muli %bid, %c128 : index
    %1 = arith.addi %0, %tid : index
    %i = arith.muli %1, %c8 : index
    %v = vector.load %x[%i] : memref<4096xbf16>, vector<8xbf16>
    %f = arith.extf %v : vector<8xbf16> to vector<8xf32>
    %two = arith.constant dense<2.0> : vector<8xf32>
    %m = arith.mulf %f, %two : vector<8xf32>
    %t = arith.truncf %m : vector<8xf32> to vector<8xbf16>
    vector.store %t, %y[%i] : memref<4096xbf16>, vector<8xbf16>
    gpu.return
  }
}
