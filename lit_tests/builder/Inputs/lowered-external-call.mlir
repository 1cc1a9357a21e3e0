// memref.copy between strided views lowers to a call of the host runtime's
// memrefCopy, which does not exist on the device: caught after lowering.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 1, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %xs = memref.subview %x[0] [512] [2] : memref<1024xf32> to memref<512xf32, strided<[2]>>
    %ys = memref.subview %y[0] [512] [2] : memref<1024xf32> to memref<512xf32, strided<[2]>>
    memref.copy %xs, %ys : memref<512xf32, strided<[2]>> to memref<512xf32, strided<[2]>>
    %xo = memref.subview %x[1] [512] [2] : memref<1024xf32> to memref<512xf32, strided<[2], offset: 1>>
    %yo = memref.subview %y[1] [512] [2] : memref<1024xf32> to memref<512xf32, strided<[2], offset: 1>>
    memref.copy %xo, %yo : memref<512xf32, strided<[2], offset: 1>> to memref<512xf32, strided<[2], offset: 1>>
    gpu.return
  }
}
