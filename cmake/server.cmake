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

file(GLOB_RECURSE KVFIT_WEB_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/web/dist/*)
set(KVFIT_WEB_CPP ${PROJECT_BINARY_DIR}/generated/web_files.cpp)
add_custom_command(
  OUTPUT ${KVFIT_WEB_CPP}
  COMMAND ${CMAKE_COMMAND} -DOUT=${KVFIT_WEB_CPP} -DROOT=${PROJECT_SOURCE_DIR}/web/dist -DFUNC=web_files
          "-DFILES=${KVFIT_WEB_FILES}" -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
  DEPENDS ${KVFIT_WEB_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
  COMMENT "Embedding web/dist files"
  VERBATIM)

file(GLOB KVFIT_SERVER_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/server/*.cpp)
add_library(kvfit_server STATIC ${KVFIT_SERVER_SOURCES} ${KVFIT_WEB_CPP})
target_link_libraries(kvfit_server PUBLIC kvfit_internal PRIVATE PkgConfig::MHD Threads::Threads)

# The server runs in its own executable, kvfit-serve (app/serve_main.cpp), beside kvfit: `kvfit serve` executes it,
# so that kvfit itself never maps the server's libraries (libmicrohttpd, GnuTLS) at start-up.
add_executable(kvfit-serve ${PROJECT_SOURCE_DIR}/app/serve_main.cpp ${PROJECT_SOURCE_DIR}/app/cli_serve.cpp)
target_link_libraries(kvfit-serve PRIVATE kvfit_server CLI11::CLI11)
add_dependencies(kvfit kvfit-serve)
target_compile_definitions(kvfit PRIVATE KVFIT_WITH_SERVER=1)
