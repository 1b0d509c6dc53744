# aarch64-linux-gnu.cmake: a CMake toolchain file for cross-building
# libpprof for arm64 on a Debian x86-64 machine, with Debian's cross
# compiler (gcc-aarch64-linux-gnu) and the :arm64 packages of the
# dependencies installed through multiarch (scripts/test-arm64.sh).
#   cmake -S . -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The programs it builds run here under qemu-aarch64-static.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and headers: the arm64 ones only; programs (protoc-c): the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config reads the arm64 .pc files of the multiarch packages.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# ctest runs the test programs through the emulator.
find_program(PP_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(PP_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${PP_QEMU_AARCH64})
endif()
