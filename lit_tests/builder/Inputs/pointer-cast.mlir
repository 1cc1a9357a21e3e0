// A pointer forged from an integer: llvm.inttoptr is forbidden.
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
    %p = memref.extract_aligned_pointer_as_index %x : memref<1024xf32> -> index
    %pi = arith.index_cast %p : index to i64
    %ptr = llvm.inttoptr %pi : i64 to !llvm.ptr<1>
    %r = arith.addf %v, %v : f32
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
