# LLMFuseMLIR.cmake - how llm-fuse links MLIR.
#
# Debian ships MLIR's C++ API as one shared library (libMLIR.so, the MLIR
# target) and the C API only as static archives (libMLIRCAPI*.a) whose CMake
# targets drag in the static C++ libraries too. A plugin built that way would
# carry a second copy of MLIR next to the one in mlir-opt-22: two pass
# registries, two sets of TypeIDs, crashes. So we link the C API archives by
# path and resolve everything they need against libMLIR.so, the same library
# mlir-opt-22 uses.

set(LF_MLIR_CAPI_COMPONENTS
  IR RegisterEverything Transforms Conversion Interfaces
  Func Arith Math Tensor Linalg MemRef SCF Vector Bufferization Tosa
  GPU NVGPU NVVM LLVM Target)

set(LF_MLIR_CAPI_ARCHIVES)
foreach(component ${LF_MLIR_CAPI_COMPONENTS})
  set(target MLIRCAPI${component})
  if(NOT TARGET ${target})
    message(FATAL_ERROR "MLIR C API component ${target} not found")
  endif()
  get_target_property(archive ${target} LOCATION)
  list(APPEND LF_MLIR_CAPI_ARCHIVES ${archive})
endforeach()

add_library(lf_mlir INTERFACE)
target_include_directories(lf_mlir SYSTEM INTERFACE
  ${MLIR_INCLUDE_DIRS} ${LLVM_INCLUDE_DIRS})
separate_arguments(LF_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_options(lf_mlir INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:${LF_LLVM_DEFINITIONS}>)
target_link_libraries(lf_mlir INTERFACE
  -Wl,--start-group ${LF_MLIR_CAPI_ARCHIVES} -Wl,--end-group
  MLIR LLVM)
