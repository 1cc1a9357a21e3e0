# Prints a kernel with 200 contract violations (gpu.printf each), to check
# that the repair text stays within its cap.
print("gpu.module @kernels {")
print("  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel")
print("      attributes {known_block_size = array<i32: 256, 1, 1>,")
print("                  known_grid_size = array<i32: 4, 1, 1>} {")
print("    %tid = gpu.thread_id x")
print("    %v = memref.load %x[%tid] : memref<1024xf32>")
for i in range(200):
    print('    gpu.printf "value %d is %f\\n", %v : f32'.replace("%d", str(i)))
print("    memref.store %v, %y[%tid] : memref<1024xf32>")
print("    gpu.return")
print("  }")
print("}")
