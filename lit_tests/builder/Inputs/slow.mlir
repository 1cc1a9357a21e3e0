// A build that takes tens of seconds: 32768 inlined expf calls in one
// thread. The tests run it with a short time limit.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 1, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<1024xf32>
    %l = vector.load %x[%c0] : memref<1024xf32>, vector<1024xf32>
    %b = vector.broadcast %l : vector<1024xf32> to vector<32x1024xf32>
    %e = math.exp %b : vector<32x1024xf32>
    %s = arith.mulf %e, %b : vector<32x1024xf32>
    %sc = vector.shape_cast %s : vector<32x1024xf32> to vector<32768xf32>
    %r = vector.reduction <add>, %sc : vector<32768xf32> into f32
    memref.store %r, %y[%c0] : memref<1024xf32>
    gpu.return
  }
}
