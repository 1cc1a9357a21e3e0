// A plain function instead of a gpu.module.
func.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<1024xf32>
  memref.store %v, %y[%c0] : memref<1024xf32>
  return
}
