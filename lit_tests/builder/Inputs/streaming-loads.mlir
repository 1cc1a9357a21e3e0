// y = x + b, x read once with nontemporal (streaming) loads: 16-byte
// vector<8xbf16> loads of x, a 2-byte scalar load of b; plus two
// nontemporal loads that must stay plain: one from shared memory and one
// 16-byte load at an offset not known to be 16-byte aligned.
gpu.module @kernels {
  gpu.func @stream_bf16(%x: memref<4096xbf16>, %b: memref<8xbf16>,
                        %y: memref<4096xbf16>) workgroup(%buf: memref<8xbf16, 3>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 4, 1, 1>} {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c8 = arith.constant 8 : index
    %0 = arith.muli %bid, %c128 : index
    %1 = arith.addi %0, %tid : index
    %i = arith.muli %1, %c8 : index
    %v = vector.load %x[%i] {nontemporal = true} : memref<4096xbf16>, vector<8xbf16>
    %s = memref.load %b[%c0] {nontemporal = true} : memref<8xbf16>
    memref.store %s, %buf[%tid] : memref<8xbf16, 3>
    gpu.barrier
    %sh = memref.load %buf[%c0] {nontemporal = true} : memref<8xbf16, 3>
    %j = arith.addi %tid, %c1 : index
    %odd = vector.load %x[%j] {nontemporal = true} : memref<4096xbf16>, vector<8xbf16>
    %f = arith.extf %v : vector<8xbf16> to vector<8xf32>
    %g = arith.extf %odd : vector<8xbf16> to vector<8xf32>
    %e = arith.extf %sh : bf16 to f32
    %sb = vector.broadcast %e : f32 to vector<8xf32>
    %m = arith.addf %f, %sb : vector<8xf32>
    %n = arith.addf %m, %g : vector<8xf32>
    %t = arith.truncf %n : vector<8xf32> to vector<8xbf16>
    vector.store %t, %y[%i] : memref<4096xbf16>, vector<8xbf16>
    gpu.return
  }
}
