// gpu.dynamic_shared_memory without llm_fuse.dynamic_shared_memory.
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
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %view = memref.view %smem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
    memref.store %v, %view[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %r = memref.load %view[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
    memref.store %r, %y[%i] : memref<1024xf32>
    gpu.return
  }
}
