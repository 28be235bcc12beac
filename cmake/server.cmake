# `kvfit serve` (issue 9): the HTTP server on GNU libmicrohttpd (Debian libmicrohttpd-dev, found by pkg-config:
# per-connection timeouts, one polling thread for every connection, suspend/resume for the workers; src/server/
# server.cpp binds the port itself, without SO_REUSEPORT) and the web page, web/dist (built by web/build.sh with
# vite, committed), embedded into the binary so that nothing is read from disk or the network at run time.
# cpp-httplib (Debian libcpp-httplib-dev, a shared library whose header must be compiled with the same defines) is
# only the tests' HTTP client: its server bakes in an 8 KiB limit on form-encoded bodies and SO_REUSEPORT.
find_package(PkgConfig REQUIRED)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_package(Threads REQUIRED)

file(GLOB_RECURSE KVFIT_WEB_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/web/dist/*)
set(KVFIT_WEB_CPP ${CMAKE_BINARY_DIR}/generated/web_files.cpp)
add_custom_command(
  OUTPUT ${KVFIT_WEB_CPP}
  COMMAND ${CMAKE_COMMAND} -DOUT=${KVFIT_WEB_CPP} -DROOT=${CMAKE_SOURCE_DIR}/web/dist -DFUNC=web_files
          "-DFILES=${KVFIT_WEB_FILES}" -P ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  DEPENDS ${KVFIT_WEB_FILES} ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  COMMENT "Embedding web/dist files"
  VERBATIM)

file(GLOB KVFIT_SERVER_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/server/*.cpp)
add_library(kvfit_server STATIC ${KVFIT_SERVER_SOURCES} ${KVFIT_WEB_CPP})
target_include_directories(kvfit_server PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(kvfit_server PUBLIC kvfit_lib PRIVATE PkgConfig::MHD Threads::Threads)

target_sources(kvfit PRIVATE ${CMAKE_SOURCE_DIR}/app/cli_serve.cpp)
target_link_libraries(kvfit PRIVATE kvfit_server)
