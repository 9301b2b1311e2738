#!/bin/sh
# The link launcher of agent-sandbox (RULE_LAUNCH_LINK, src/cli/CMakeLists.txt): runs the link
# command CMake made, with the shared C libraries below taken from their static archives instead.
#
# Why: every `agent-sandbox` process (each `run`, each CLI verb) paid ~1.8 ms before main() for
# the dynamic loader to map and relocate libarchive and what it pulls in (libxml2, ICU, nettle,
# lzma, lz4, bz2, acl), libcrypto, libsqlite3, zlib, zstd and libseccomp: `agent-sandbox version`
# took 5.2 ms with them shared, 3.4 ms static (100 runs each). sandboxd links the same archives
# statically already (src/sandboxd/CMakeLists.txt); glibc, libstdc++, spdlog and fmt stay shared
# (Debian ships no static spdlog or fmt, and they need the shared libstdc++).
#
# How: the shared objects and -lzstd are dropped from the command line and the archives appended
# as one group after everything, so each of our static libraries that needs one finds it.
set -eu
for arg in "$@"; do
  shift
  case "$arg" in
    */libarchive.so | */libarchive.so.* | */libz.so | */libz.so.* | */libcrypto.so | \
      */libcrypto.so.* | */libsqlite3.so | */libsqlite3.so.* | */libseccomp.so | \
      */libseccomp.so.* | -lzstd) ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec "$@" -Wl,-Bstatic -Wl,--start-group -larchive -lnettle -lacl -llzma -lzstd -llz4 -lbz2 \
  -lz -lxml2 -licuuc -licudata -lcrypto -lsqlite3 -lseccomp -Wl,--end-group -Wl,-Bdynamic \
  -ldl -lpthread
