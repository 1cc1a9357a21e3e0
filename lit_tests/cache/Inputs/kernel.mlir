gpu.module @sg_kernels {
  gpu.func @sg_0(%arg0: memref<1024xf32>, %arg1: memref<1024xf32>) kernel {
    gpu.return
  }
}
