// 64 KiB of static shared memory: over the 48 KiB static limit, which only
// ptxas checks.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>)
      workgroup(%tile : memref<16384xf32, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: 256, 1, 1>,
                         known_grid_size = array<i32: 4, 1, 1>} {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
    %v = memref.load %x[%i] : memref<1024xf32>
    %c64 = arith.constant 64 : index
    %s = arith.muli %tid, %c64 : index
    memref.store %v, %tile[%s] : memref<16384xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %c255 = arith.constant 255 : index
    %o = arith.subi %c255, %tid : index
    %os = arith.muli %o, %c64 : index
    %r = memref.load %tile[%os] : memref<16384xf32, #gpu.address_space<workgroup>>
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
