# `cmake --install`: the library (libkvfit.a), its public headers (include/kvfit: the library's API only; the
# fixture writers and the server live in src/kvfit), the CMake package (kvfitConfig.cmake, its version file and
# the exported target kvfit::kvfit), kvfit.pc for pkg-config, and the kvfit and kvfit-serve programs.
# A consumer: find_package(kvfit CONFIG REQUIRED) + target_link_libraries(app PRIVATE kvfit::kvfit) and
# #include <kvfit/kvfit.h>; or `pkg-config --cflags --libs kvfit` (C++20). tests/package/ builds both.
include(CMakePackageConfigHelpers)

install(TARGETS kvfit_lib EXPORT kvfitTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kvfit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(TARGETS kvfit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET kvfit-serve)
  install(TARGETS kvfit-serve RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(KVFIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kvfit)
install(EXPORT kvfitTargets NAMESPACE kvfit:: DESTINATION ${KVFIT_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kvfitConfig.cmake.in ${PROJECT_BINARY_DIR}/kvfitConfig.cmake
                              INSTALL_DESTINATION ${KVFIT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kvfitConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kvfitConfig.cmake ${PROJECT_BINARY_DIR}/kvfitConfigVersion.cmake
        DESTINATION ${KVFIT_CMAKE_DIR})

# kvfit.pc: libdir and includedir relative to the prefix the package is installed under (pcfiledir), so that a
# staged or relocated install (DESTDIR, --prefix at install time) still points at its own files.
file(RELATIVE_PATH KVFIT_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" KVFIT_PC_TO_PREFIX "${KVFIT_PC_TO_PREFIX}")
set(KVFIT_PC_DL "")
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND KVFIT_PC_DL " -l${lib}")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/kvfit.pc.in ${PROJECT_BINARY_DIR}/kvfit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kvfit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
