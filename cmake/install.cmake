# `cmake --install build --prefix PREFIX` lays ridge out as a package:
#
#   PREFIX/bin/ridge                         the command-line tool
#   PREFIX/lib/libridge_inject.so            the tracer `ridge trace` injects (found as ../lib from bin/)
#   PREFIX/<libdir>/libridge_*.a             the static libraries behind ridge::ridge
#   PREFIX/include/ridge/                    the public headers (ridge/ridge.hpp includes them all)
#   PREFIX/<libdir>/cmake/ridge/             ridgeConfig.cmake, its version file, the exported targets
#   PREFIX/share/ridge/catalog.json          the datasheet catalog (compiled in; a template for RIDGE_CATALOG)
#
# A consumer writes  find_package(ridge CONFIG REQUIRED)  and links  ridge::ridge  (see examples/).
# Included at the end of the top-level CMakeLists.txt, after every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RIDGE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ridge CACHE STRING
    "Where ridgeConfig.cmake goes, relative to the install prefix")

# ---- the libraries and the umbrella target --------------------------------------------------
# Every library ridge::ridge links, plus the umbrella itself; optional parts only where built.
set(_ridge_exported)
foreach(_t ridge_core ridge_history ridge_gpu ridge_trace ridge_report ridge_gpt2_host ridge_gpt2 ridge)
  if(TARGET ${_t})
    list(APPEND _ridge_exported ${_t})
  endif()
endforeach()
# The public headers use C++20 (<span>, ...): consumers compile them as C++20 too.
target_compile_features(ridge_core PUBLIC cxx_std_20)

install(TARGETS ${_ridge_exported} EXPORT ridgeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ridge DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

# ---- the tool and its injection library -----------------------------------------------------
# Installed binaries keep the paths of the CUDA libraries they were linked against (cuBLAS,
# CUPTI), as the build tree's do, so they start without LD_LIBRARY_PATH.
if(TARGET ridge_cli)
  set_target_properties(ridge_cli PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS ridge_cli EXPORT ridgeTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
if(TARGET ridge_inject)
  # The CLI looks for it in ../lib next to its own binary (tools/ridge: find_inject_library), so it
  # goes to lib/ whatever the platform's libdir is (lib64, lib/x86_64-linux-gnu).
  get_target_property(_ridge_inject_rpath ridge_inject BUILD_RPATH)
  if(_ridge_inject_rpath)
    set_target_properties(ridge_inject PROPERTIES INSTALL_RPATH "${_ridge_inject_rpath}")
  endif()
  set_target_properties(ridge_inject PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS ridge_inject LIBRARY DESTINATION lib COMPONENT runtime)
endif()

if(TARGET ridge_mpi)
  # Looked for beside the binary and in ../lib (mpi_plugin_candidates).
  set_target_properties(ridge_mpi PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS ridge_mpi LIBRARY DESTINATION lib COMPONENT runtime)
endif()

install(FILES ${PROJECT_SOURCE_DIR}/data/catalog.json DESTINATION ${CMAKE_INSTALL_DATADIR}/ridge COMPONENT runtime)

# ---- the CMake package ----------------------------------------------------------------------
install(EXPORT ridgeTargets NAMESPACE ridge:: DESTINATION ${RIDGE_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ridge-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/package/ridgeConfig.cmake
  INSTALL_DESTINATION ${RIDGE_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# 0.x: a minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/package/ridgeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/package/ridgeConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/package/ridgeConfigVersion.cmake
        DESTINATION ${RIDGE_INSTALL_CMAKEDIR} COMPONENT dev)
