// y = a * x for the first n of 4 elements: scalar subgraph operands (f32,
// index) are passed by value, between the buffers, in subgraph order.
gpu.module @m {
  gpu.func @axpy(%x: memref<4xf32>, %a: f32, %n: index, %y: memref<4xf32>) kernel
      attributes {known_block_size = array<i32: 4, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %t = gpu.thread_id x
    %ok = arith.cmpi ult, %t, %n : index
    scf.if %ok {
      %v = memref.load %x[%t] : memref<4xf32>
      %r = arith.mulf %v, %a : f32
      memref.store %r, %y[%t] : memref<4xf32>
    }
    gpu.return
  }
}
