# Prints a gpu.module whose attribute nests 100000 arrays: MLIR's recursive
# descent parser overflows its stack on it (SIGSEGV) in MLIR 22.
depth = 100000
print("gpu.module @kernels attributes {x = " + "[" * depth + "]" * depth +
      "} {}")
