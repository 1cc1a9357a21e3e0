# Prints a reply of a little over 1 MiB: past the builder's size limit.
print("// " + "x" * (1 << 20))
print("gpu.module @kernels {}")
