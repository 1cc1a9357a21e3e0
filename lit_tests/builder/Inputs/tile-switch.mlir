// A template's tiling switch as kernels/table/gemm_any.py instantiates it:
// `%lf_tile = arith.constant K` and a chain of scf.if on `arith.cmpi eq`.
// The builder keeps only the taken branch before the lowering
// (builder/prune.c): tiling 0's branch holds a memref.copy, which lowers to
// a host call (a lowering failure), so the kernel builds only when TILE is
// not 0. Tiling 1 yields 2.0 through an scf.if with a result.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: 1, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %lf_tile = arith.constant TILE : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %is0 = arith.cmpi eq, %lf_tile, %c0 : index
    scf.if %is0 {
      %xs = memref.subview %x[0] [512] [2] : memref<1024xf32> to memref<512xf32, strided<[2]>>
      %ys = memref.subview %y[0] [512] [2] : memref<1024xf32> to memref<512xf32, strided<[2]>>
      memref.copy %xs, %ys : memref<512xf32, strided<[2]>> to memref<512xf32, strided<[2]>>
    } else {
      %is1 = arith.cmpi ne, %lf_tile, %c1 : index
      %v = scf.if %is1 -> f32 {
        %a = arith.constant 3.0 : f32
        scf.yield %a : f32
      } else {
        %b = arith.constant 2.0 : f32
        scf.yield %b : f32
      }
      memref.store %v, %y[%c0] : memref<1024xf32>
    }
    gpu.return
  }
}
