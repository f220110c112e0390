# The shared libkiln and `cmake --install`:
#
#   PREFIX/lib/libkiln.so[.0[.0.1.0]]       every layer and every op family
#   PREFIX/include/kiln/*.h                 the public headers
#   PREFIX/lib/cmake/kiln/kilnConfig.cmake  find_package(kiln): the target kiln::kiln
#   PREFIX/lib/pkgconfig/kiln.pc            pkg-config --cflags --libs kiln
#
# libkiln is linked from the objects of every layer of src/layers.txt's [layers] section and
# of every op family: the objects the in-tree programs link through the static layer
# libraries, compiled once. Taking objects rather than archives leaves nothing out for want of
# a reference, so the op registrars are all in and run when the library loads: a program that
# links libkiln sees every op.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_library(libkiln SHARED)
add_library(kiln::kiln ALIAS libkiln)
foreach(t ${KILN_OP_FAMILY_TARGETS})
  target_sources(libkiln PRIVATE $<TARGET_OBJECTS:${t}>)
endforeach()
foreach(layer IN LISTS KILN_LAYERS)
  get_target_property(type kiln_${layer} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    target_sources(libkiln PRIVATE $<TARGET_OBJECTS:kiln_${layer}>)
  endif()
endforeach()
# For the layers' own dependencies (oneDNN, ONNX, ...): their archives add nothing, every
# object is in already.
target_link_libraries(libkiln PRIVATE kiln_${KILN_TOP_LAYER})
target_include_directories(libkiln INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(libkiln INTERFACE cxx_std_20)
set_target_properties(libkiln PROPERTIES
  OUTPUT_NAME kiln
  EXPORT_NAME kiln
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  # Its dependencies are system libraries; $ORIGIN keeps any lookup inside the prefix (and,
  # in the build tree, next to itself), so nothing installed points into build/.
  INSTALL_RPATH "$ORIGIN"
  BUILD_WITH_INSTALL_RPATH ON)
# -Bsymbolic-functions: internal calls bind inside the library, as in the statically linked CLI.
# -z defs: a symbol left undefined fails the link here, not the program that loads libkiln
# (not under sanitizers, whose runtime a shared library may leave to the program).
target_link_options(libkiln PRIVATE LINKER:-Bsymbolic-functions)
if(KILN_SANITIZE STREQUAL "")
  target_link_options(libkiln PRIVATE LINKER:-z,defs)
endif()

set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(TARGETS libkiln EXPORT kilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})
configure_package_config_file(cmake/kilnConfig.cmake.in ${PROJECT_BINARY_DIR}/kilnConfig.cmake
  INSTALL_DESTINATION ${KILN_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
  DESTINATION ${KILN_CMAKE_DIR})
# The .pc names the prefix relative to itself, so an installed tree can move.
file(RELATIVE_PATH KILN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" KILN_PC_TO_PREFIX "${KILN_PC_TO_PREFIX}")
configure_file(cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
