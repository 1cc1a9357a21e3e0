// Inline PTX through llvm.inline_asm: forbidden unless --allow-inline-asm.
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
    %r = llvm.inline_asm "add.f32 $0, $1, $1;", "=f,f" %v : (f32) -> f32
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
