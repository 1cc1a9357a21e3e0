# LLMFusePackage.cmake - installs the LLMFuse CMake package
# (find_package(LLMFuse): llm-fuse-compile, libllm_fuse_rt,
# llm_fuse_add_model) and tests it on examples/cmake_project.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(LF_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/LLMFuse)
set_target_properties(llm_fuse_rt PROPERTIES EXPORT_NAME runtime)
set_target_properties(llm_fuse_rt_static PROPERTIES EXPORT_NAME runtime_static)

install(EXPORT LLMFuseTargets NAMESPACE LLMFuse::
  DESTINATION ${LF_PACKAGE_DIR})
configure_package_config_file(
  ${CMAKE_SOURCE_DIR}/cmake/LLMFuseConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/LLMFuseConfig.cmake
  INSTALL_DESTINATION ${LF_PACKAGE_DIR})
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/cmake/LLMFuseConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_BINARY_DIR}/cmake/LLMFuseConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/LLMFuseConfigVersion.cmake
  ${CMAKE_SOURCE_DIR}/cmake/LLMFuseModel.cmake
  DESTINATION ${LF_PACKAGE_DIR})

# Install into a scratch prefix, then configure and build the example
# project against it (CPU only: it must link; running it needs a GPU).
add_test(NAME package.cmake_project
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${CMAKE_BINARY_DIR}
    -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
    -DWORK_DIR=${CMAKE_BINARY_DIR}/package-test
    -DGENERATOR=${CMAKE_GENERATOR}
    -P ${CMAKE_SOURCE_DIR}/cmake/test_cmake_project.cmake)
set_tests_properties(package.cmake_project PROPERTIES TIMEOUT 300)
