// Everything the contract allows beside the basics: a func.func helper with
// a math function (libdevice), a constant lookup table, a workgroup
// attribution, dynamic shared memory with its size attribute, scf.for and
// affine.apply, all inside a gpu.container_module wrapper.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    memref.global "private" constant @lut : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
    func.func private @gelu_ish(%a: f32) -> f32 {
      %e = math.exp %a : f32
      %t = math.tanh %e : f32
      return %t : f32
    }
    gpu.func @features(%x: memref<1024xf32>, %y: memref<1024xf32>)
        workgroup(%tile : memref<256xf32, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 256, 1, 1>,
                           known_grid_size = array<i32: 4, 1, 1>,
                           llm_fuse.dynamic_shared_memory = 1024 : i32} {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %i = affine.apply affine_map<(b, t) -> (b * 256 + t)>(%bid, %tid)
      %v = memref.load %x[%i] : memref<1024xf32>
      %g = func.call @gelu_ish(%v) : (f32) -> f32
      memref.store %g, %tile[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %buf = memref.view %dyn[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
      memref.store %v, %buf[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %lut = memref.get_global @lut : memref<4xf32>
      %acc0 = memref.load %tile[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      %acc = scf.for %j = %c0 to %c4 step %c1 iter_args(%a = %acc0) -> (f32) {
        %l = memref.load %lut[%j] : memref<4xf32>
        %m = arith.mulf %a, %l : f32
        scf.yield %m : f32
      }
      %d = memref.load %buf[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      %r = arith.addf %acc, %d : f32
      memref.store %r, %y[%i] : memref<1024xf32>
      gpu.return
    }
  }
}
