// rowsum-bf16-opmath: the row sum of rowsum-bf16.mlir as PyTorch computes
// it (opmath): bf16 in, f32 accumulation (per thread, then a tree in shared
// memory), one rounding to bf16 at the end. Right against the opmath truth;
// the IR's own lowering, which sums 1000 terms in bf16, is far from it.
// SIGNATURE: (tensor<512x1000xbf16>) -> tensor<512xbf16>
gpu.module @kernels {
  gpu.func @rowsum(%a: memref<512x1000xbf16>, %y: memref<512xbf16>)
      workgroup(%sh : memref<256xf32, #gpu.address_space<workgroup>>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>,
                  known_grid_size = array<i32: 512, 1, 1>} {
    %row = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %nb = arith.constant 1000 : index
    %zero_f = arith.constant 0.0 : f32
    %zero = arith.constant 0.0 : f32
    %acc = scf.for %j = %tid to %nb step %c256 iter_args(%s = %zero) -> (f32) {
      %xb = memref.load %a[%row, %j] : memref<512x1000xbf16>
      %x = arith.extf %xb : bf16 to f32
      %s2 = arith.addf %s, %x : f32
      scf.yield %s2 : f32
    }
    %part = arith.addf %acc, %zero_f : f32
    memref.store %part, %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %c128 = arith.constant 128 : index
    %c2 = arith.constant 2 : index
    %fin = scf.while (%st = %c128) : (index) -> index {
      %more = arith.cmpi ugt, %st, %c0 : index
      scf.condition(%more) %st : index
    } do {
    ^bb0(%st2: index):
      %lo = arith.cmpi ult, %tid, %st2 : index
      scf.if %lo {
        %k = arith.addi %tid, %st2 : index
        %u = memref.load %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
        %v = memref.load %sh[%k] : memref<256xf32, #gpu.address_space<workgroup>>
        %w = arith.addf %u, %v : f32
        memref.store %w, %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %nx = arith.divui %st2, %c2 : index
      scf.yield %nx : index
    }
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      %total = memref.load %sh[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
      %tb = arith.truncf %total : f32 to bf16
      memref.store %tb, %y[%row] : memref<512xbf16>
    }
    gpu.return
  }
}
