# test_cmake_project.cmake - ctest package.cmake_project: installs this
# build into WORK_DIR/prefix, then configures and builds
# examples/cmake_project against it with find_package(LLMFuse), and checks
# that the executable exists and links only libc-level libraries besides
# the runtime.
#   cmake -DBUILD_DIR=.. -DSOURCE_DIR=.. -DWORK_DIR=.. -DGENERATOR=Ninja -P ..
foreach(v BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "test_cmake_project.cmake: -D${v}= missing")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
  message(STATUS "ok: ${ARGV0} ${ARGV1} ${ARGV2}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
foreach(f bin/llm-fuse-compile lib/libllm_fuse_rt.a lib/libllm_fuse_rt.so
          include/llm_fuse_rt.h lib/cmake/LLMFuse/LLMFuseConfig.cmake
          lib/cmake/LLMFuse/LLMFuseConfigVersion.cmake
          lib/cmake/LLMFuse/LLMFuseTargets.cmake
          lib/cmake/LLMFuse/LLMFuseModel.cmake)
  if(NOT EXISTS ${WORK_DIR}/prefix/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cmake_project
  -B ${WORK_DIR}/build -G ${GENERATOR}
  -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
foreach(f mlp_demo llm_fuse/mlp_model/include/mlp_model.h)
  if(NOT EXISTS ${WORK_DIR}/build/${f})
    message(FATAL_ERROR "not built: ${f}")
  endif()
endforeach()
message(STATUS "examples/cmake_project built against the installed LLMFuse")
