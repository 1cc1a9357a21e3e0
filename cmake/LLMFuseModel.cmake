# LLMFuseModel.cmake - llm_fuse_add_model(), installed with the LLMFuse
# package: compiles a model file ahead of time, inside the user's build,
# into a library target.
#
#   llm_fuse_add_model(<target> <model.mlir>
#     [ARCH sm_80|sm_90|sm_90a]          GPU the kernels are for (sm_90)
#     [FORMAT auto|ptx|cubin|fatbin]     kernel embedding (auto)
#     [NO_LLM_FUSE]                      skip the llm-fuse pass
#     [LLM_FUSE_OPTIONS "<options>"]     options of the llm-fuse pass
#     [HEADER <name.h>]                  header name (<target>.h)
#     [RUNTIME STATIC|SHARED])           libllm_fuse_rt to link (STATIC)
#
# <target> is a static library holding the compiled object; linking it
# brings the header's directory and the runtime library. The header
# declares <entry>_run() and friends for each public function of the model
# (see the header's comment for the device-memory argument convention).
# The object is rebuilt when the model or llm-fuse-compile changes.
function(llm_fuse_add_model target model)
  cmake_parse_arguments(ARG "NO_LLM_FUSE"
    "ARCH;FORMAT;LLM_FUSE_OPTIONS;HEADER;RUNTIME" "" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
      "llm_fuse_add_model(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET LLMFuse::llm-fuse-compile)
    message(FATAL_ERROR "llm_fuse_add_model: find_package(LLMFuse) first")
  endif()
  if(NOT ARG_ARCH)
    set(ARG_ARCH sm_90)
  endif()
  if(NOT ARG_ARCH MATCHES "^sm_(80|90|90a)$")
    message(FATAL_ERROR "llm_fuse_add_model(${target}): ARCH must be sm_80, "
      "sm_90 or sm_90a, not ${ARG_ARCH}")
  endif()
  if(NOT ARG_FORMAT)
    set(ARG_FORMAT auto)
  endif()
  if(NOT ARG_HEADER)
    set(ARG_HEADER ${target}.h)
  endif()
  if(NOT ARG_RUNTIME)
    set(ARG_RUNTIME STATIC)
  endif()
  if(ARG_RUNTIME STREQUAL "STATIC")
    set(runtime LLMFuse::runtime_static)
  elseif(ARG_RUNTIME STREQUAL "SHARED")
    set(runtime LLMFuse::runtime)
  else()
    message(FATAL_ERROR "llm_fuse_add_model(${target}): RUNTIME must be "
      "STATIC or SHARED")
  endif()

  get_filename_component(model_path "${model}" ABSOLUTE
    BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/llm_fuse/${target}")
  set(object "${dir}/${target}.o")
  set(header "${dir}/include/${ARG_HEADER}")
  set(args --chip ${ARG_ARCH} --format ${ARG_FORMAT})
  if(ARG_NO_LLM_FUSE)
    list(APPEND args --no-llm-fuse)
  endif()
  if(ARG_LLM_FUSE_OPTIONS)
    list(APPEND args --llm-fuse-options "${ARG_LLM_FUSE_OPTIONS}")
  endif()

  add_custom_command(
    OUTPUT "${object}" "${header}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}/include"
    COMMAND LLMFuse::llm-fuse-compile "${model_path}" -o "${object}"
            --header "${header}" ${args}
    DEPENDS "${model_path}" LLMFuse::llm-fuse-compile
    COMMENT "llm-fuse-compile ${model} (${ARG_ARCH}) for ${target}"
    VERBATIM)
  set_source_files_properties("${object}" PROPERTIES
    EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(${target} STATIC "${object}" "${header}")
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${target} PUBLIC "${dir}/include")
  target_link_libraries(${target} PUBLIC ${runtime})
endfunction()
