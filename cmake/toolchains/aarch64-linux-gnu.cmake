# Cross build for Linux AArch64 on a Debian amd64 host (scripts/setup_arm64.sh installs what it
# needs; docs/platforms.md, "Linux AArch64"). Libraries come from Debian multiarch
# (/usr/lib/aarch64-linux-gnu) and, for XNNPACK and pthreadpool, from the folder the setup script
# unpacks them into. Test binaries run under qemu-user: the CPU model comes from QEMU_CPU
# (neoverse-n1: NEON only; max: SVE and SVE2), the default being qemu's own.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(ONYX_ARM64_DEPS "$ENV{ONYX_ARM64_DEPS}")
if(NOT ONYX_ARM64_DEPS)
  set(ONYX_ARM64_DEPS /opt/onyx-arm64)
endif()
list(APPEND CMAKE_PREFIX_PATH ${ONYX_ARM64_DEPS}/usr)

# Host programs (protoc, python) from the host; libraries and CMake packages for aarch64 only.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# The arm64 dynamic loader and libraries are installed by multiarch under / (libc6:arm64), so
# qemu needs no -L prefix; the private XNNPACK folder is reached through the build RPATH.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
