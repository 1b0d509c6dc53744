# install.cmake: what `cmake --install` puts where, the pkg-config files,
# the CMake package (find_package(libpprof)) and the Debian packages
# (cpack -G DEB; scripts/package.sh). Components: lib (libpprof0), dev
# (libpprof-dev), tools (libpprof-tools).
include(CMakePackageConfigHelpers)

set(PPROF_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/libpprof)

install(TARGETS pprof EXPORT libpprofTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev)
install(TARGETS ${PPROF_LIBRARIES} EXPORT libpprofTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES include/pprof.h include/pprof_stats.h include/pprof_server.h include/pprof_mhd.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(TARGETS libpprof-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
if(TARGET pprof-demo)
  install(TARGETS pprof-demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()
install(FILES README.md CHANGELOG.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT lib)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT lib)

set_target_properties(pprof_static PROPERTIES EXPORT_NAME pprof_static)
install(EXPORT libpprofTargets NAMESPACE libpprof:: DESTINATION ${PPROF_CMAKEDIR} COMPONENT dev)
configure_package_config_file(cmake/libpprofConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/libpprofConfig.cmake INSTALL_DESTINATION ${PPROF_CMAKEDIR})
# 0.x: a minor version may change the API (CHANGELOG.md).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/libpprofConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/libpprofConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/libpprofConfigVersion.cmake DESTINATION ${PPROF_CMAKEDIR} COMPONENT dev)

# pkg-config: libpprof (the shared library; --static adds what libpprof.a
# needs), libpprof-static (libpprof.a with its hooks) and
# libpprof-static-nohooks (libpprof_nohooks.a).
set(PC_REQUIRES "libmicrohttpd libprotobuf-c zlib libdw gnutls")
set(PC_SYSLIBS "-lpthread -ldl -lrt -lm")
set(pc_variants "libpprof|Go-compatible /debug/pprof profiling for C and C++ programs|-L\${libdir} -lpprof|Requires.private|Libs.private: ${PC_SYSLIBS}")
list(APPEND pc_variants "libpprof-static|libpprof as a static library, with its malloc and lock hooks|\${libdir}/libpprof.a ${PC_SYSLIBS}|Requires|")
if(PPROF_NOHOOKS_ARCHIVE)
  list(APPEND pc_variants "libpprof-static-nohooks|libpprof as a static library, without malloc or lock hooks|\${libdir}/libpprof_nohooks.a ${PC_SYSLIBS}|Requires|")
endif()
foreach(v ${pc_variants})
  string(REPLACE "|" ";" f "${v}")
  list(GET f 0 PC_NAME)
  list(GET f 1 PC_DESCRIPTION)
  list(GET f 2 PC_LIBS)
  list(GET f 3 PC_REQUIRES_FIELD)
  list(GET f 4 PC_LIBS_PRIVATE)
  # The prefix is filled in at install time, so `cmake --install --prefix`
  # elsewhere gives a .pc file that points there.
  set(PC_PREFIX "@PC_PREFIX@")
  configure_file(cmake/libpprof.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pc/${PC_NAME}.pc.in @ONLY)
  install(CODE "set(PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    configure_file(${CMAKE_CURRENT_BINARY_DIR}/pc/${PC_NAME}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pc/${PC_NAME}.pc @ONLY)"
    COMPONENT dev)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pc/${PC_NAME}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endforeach()

# Debian packages (scripts/package.sh configures with CMAKE_INSTALL_PREFIX=/usr).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME libpprof)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "libpprof maintainers <maintainers@libpprof.invalid>")
# Each package's description is its own: a summary line, then the body
# without leading spaces (CPackDeb indents it by one). No package-wide
# summary is set, since CPackDeb would put it before every description.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libpprof0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS
  "libc6 (>= 2.36), libmicrohttpd12 (>= 0.9.75), libprotobuf-c1 (>= 1.4.1), zlib1g (>= 1:1.2.13), libdw1 (>= 0.188), libgnutls30 (>= 3.7.9)")
# loaded only to fetch debug files from debuginfod (docs/symbols.md)
set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "libcurl3-gnutls (>= 7.88)")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_LIB_DESCRIPTION "Go-compatible /debug/pprof profiling for C and C++ programs
Linked into a program, or loaded with LD_PRELOAD, libpprof serves CPU,
heap, allocation, mutex, block, thread and custom profiles over HTTP in
the format of Go's net/http/pprof, for go tool pprof and continuous
profilers.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libpprof-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(PPROF_DEB_VERSION "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "libpprof0 (= ${PPROF_DEB_VERSION}), libmicrohttpd-dev, libprotobuf-c-dev, zlib1g-dev, libdw-dev, libgnutls28-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "Go-compatible /debug/pprof profiling for C and C++ (development files)
Headers, static libraries (with and without the malloc and lock hooks),
pkg-config files and the CMake package of libpprof, which serves
Go-compatible profiles from inside C and C++ programs.")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME libpprof-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libc6 (>= 2.36), libpprof0 (= ${PPROF_DEB_VERSION}), libmicrohttpd12 (>= 0.9.75)")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "launcher and demo service for libpprof profiling
libpprof-run starts any dynamically linked program with libpprof preloaded
and its Go-compatible /debug/pprof endpoint on; pprof-demo is a small
service to try the endpoint and go tool pprof on.")
# Debian's per-package documents (scripts/package.sh turns them on): the
# copyright file and changelog.Debian.gz in /usr/share/doc/<package>, and
# lintian overrides; the library package gets an ldconfig trigger instead
# of maintainer scripts that run ldconfig.
option(PPROF_DEBIAN_DOCS "install the Debian packages' own documents" OFF)
if(PPROF_DEBIAN_DOCS)
  set(deb_dir ${CMAKE_CURRENT_BINARY_DIR}/debian)
  configure_file(packaging/debian/changelog.in ${deb_dir}/changelog @ONLY)
  execute_process(COMMAND gzip -9nf ${deb_dir}/changelog RESULT_VARIABLE gz_rc)
  if(NOT gz_rc EQUAL 0)
    message(FATAL_ERROR "gzip of ${deb_dir}/changelog failed")
  endif()
  foreach(pc lib|libpprof0 dev|libpprof-dev tools|libpprof-tools)
    string(REPLACE "|" ";" pc "${pc}")
    list(GET pc 0 comp)
    list(GET pc 1 PKG)
    install(FILES packaging/debian/copyright DESTINATION share/doc/${PKG} COMPONENT ${comp})
    install(FILES ${deb_dir}/changelog.gz DESTINATION share/doc/${PKG}
      RENAME changelog.Debian.gz COMPONENT ${comp})
    if(NOT comp STREQUAL dev)
      configure_file(packaging/debian/overrides.in ${deb_dir}/overrides/${PKG} @ONLY)
      install(FILES ${deb_dir}/overrides/${PKG} DESTINATION share/lintian/overrides COMPONENT ${comp})
    endif()
  endforeach()
  set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/triggers)
endif()
include(CPack)
