// A gpu.func without the `kernel` keyword is a device helper, not an entry.
gpu.module @kernels {
  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<1024xf32>
    memref.store %v, %y[%tid] : memref<1024xf32>
    gpu.return
  }
}
