#!/usr/bin/env bash
# Installs what the AArch64 cross build and its tests under qemu need on Debian 12 (amd64 host):
# the cross compiler, qemu-user, the arm64 -dev packages through Debian multiarch, and XNNPACK +
# pthreadpool for arm64 unpacked into a private folder (docs/platforms.md, "Linux AArch64").
# Idempotent and quiet when everything is already there.
set -euo pipefail

# Debian's libxnnpack and libpthreadpool packages are not Multi-Arch: installing the arm64 ones
# would remove the amd64 ones the x86 build needs. Their arm64 .debs are unpacked here instead and
# the toolchain file (cmake/toolchains/aarch64-linux-gnu.cmake) searches this folder too.
DEPS=${ONYX_ARM64_DEPS:-/opt/onyx-arm64}

HOST_PACKAGES=(g++-aarch64-linux-gnu qemu-user)
# Multi-Arch: same; they install beside their amd64 versions (apt may update amd64 packages to the
# version of their arm64 twin). protoc stays the amd64 one (same version as the arm64 libprotobuf).
# libcpuinfo-dev:arm64 clashes with the amd64 one over a CMake file; XNNPACK needs only the
# library.
ARM64_PACKAGES=(libc6:arm64 libstdc++6:arm64 libprotobuf-dev:arm64 libtbb-dev:arm64
  libhwy-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 libcpuinfo0:arm64)
# Unpacked into $DEPS (not installed).
PRIVATE_DEBS=(libxnnpack-dev libxnnpack0 libpthreadpool-dev libpthreadpool0)

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
updated=0
apt_update() {
  if [ $updated -eq 0 ]; then
    $SUDO apt-get update -qq
    updated=1
  fi
}

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup_arm64: adding the arm64 architecture (multiarch)"
  $SUDO dpkg --add-architecture arm64
  apt_update
fi

missing=()
for p in "${HOST_PACKAGES[@]}" "${ARM64_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_arm64: installing apt packages: ${missing[*]}"
  apt_update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The unpacked folder is tagged with the package versions; a Debian update re-unpacks it.
want=""
for p in "${PRIVATE_DEBS[@]}"; do
  v=$(apt-cache policy "$p:arm64" | awk '/Candidate:/ {print $2}')
  if [ -z "$v" ] || [ "$v" = "(none)" ]; then
    apt_update
    v=$(apt-cache policy "$p:arm64" | awk '/Candidate:/ {print $2}')
  fi
  want+="$p=$v "
done
if [ "$(cat "$DEPS/.versions" 2>/dev/null)" != "$want" ]; then
  echo "setup_arm64: unpacking arm64 ${PRIVATE_DEBS[*]} into $DEPS"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  chmod 777 "$tmp"  # apt downloads as its _apt user
  (cd "$tmp" && apt-get download -qq $(printf '%s:arm64 ' "${PRIVATE_DEBS[@]}"))
  $SUDO rm -rf "$DEPS"
  $SUDO mkdir -p "$DEPS"
  for deb in "$tmp"/*.deb; do
    $SUDO dpkg -x "$deb" "$DEPS"
  done
  echo "$want" | $SUDO tee "$DEPS/.versions" >/dev/null
fi
