// Host code beside the gpu.module: only one gpu.module may be given.
module attributes {gpu.container_module} {
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
      memref.store %v, %y[%i] : memref<1024xf32>
      gpu.return
    }
  }
  func.func @host(%x: memref<1024xf32>, %y: memref<1024xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@k blocks in (%c4, %c1, %c1)
        threads in (%c256, %c1, %c1) args(%x : memref<1024xf32>, %y : memref<1024xf32>)
    return
  }
}
