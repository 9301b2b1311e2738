# Checks, at configure time, every program and Python module that the tests, the benchmarks and
# the template builder run, so that a package missing from scripts/install-deps.sh fails here
# with its name (scripts/fresh-check.sh --ci, run by .ci/run on a fresh minbase root), not as a
# test that skips or fails minutes later. The libraries are checked by find_package in the
# top-level CMakeLists.txt.
#
# Each entry is "<program or python:module>|<Debian package>". Keep it beside install-deps.sh:
# a package added there for a test belongs here too. -DASB_CHECK_TEST_DEPS=OFF skips the check
# (a developer machine without, say, Node.js still builds and runs the other tests).
option(ASB_CHECK_TEST_DEPS "Fail the configure step when a test dependency is missing" ON)
if(NOT ASB_CHECK_TEST_DEPS)
  return()
endif()

set(ASB_TEST_DEPS
  # the sandboxes and the template builder
  "mmdebstrap|mmdebstrap" "mkfs.ext4|e2fsprogs" "mkfs.xfs|xfsprogs" "losetup|mount"
  "findmnt|util-linux" "zstd|zstd" "xz|xz-utils" "ip|iproute2" "nft|nftables"
  "dnsmasq|dnsmasq-base" "curl|curl" "ps|procps"
  # yardsticks of the benchmarks
  "bwrap|bubblewrap"
  # the fuzz targets (scripts/fuzz.sh) and the format check (scripts/check-format.sh)
  "clang++|clang" "clang-format|clang-format"
  # the TypeScript SDK and MCP suites
  "node|nodejs" "npm|npm"
  # preview URLs in a real browser (tests/e2e/test_preview.py)
  "chromium|chromium"
  # Python modules of the e2e suites and the SDK's install test, under Debian's interpreter
  "python:jsonschema|python3-jsonschema" "python:yaml|python3-yaml"
  "python:websockets|python3-websockets" "python:prometheus_client|python3-prometheus-client"
  "python:pip|python3-pip" "python:venv|python3-venv" "python:ensurepip|python3-venv"
  "python:setuptools|python3-setuptools" "python:wheel|python3-wheel")

set(_asb_missing "")
foreach(entry IN LISTS ASB_TEST_DEPS)
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 what)
  list(GET parts 1 package)
  if(what MATCHES "^python:(.+)$")
    set(module "${CMAKE_MATCH_1}")
    execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import ${module}"
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT rc EQUAL 0)
      list(APPEND _asb_missing "Python module ${module} for ${Python3_EXECUTABLE} (Debian package ${package})")
    endif()
  else()
    string(MAKE_C_IDENTIFIER "ASB_PROG_${what}" var)
    find_program(${var} "${what}" PATHS /usr/sbin /sbin)
    if(NOT ${var})
      list(APPEND _asb_missing "program ${what} (Debian package ${package})")
    endif()
  endif()
endforeach()
if(_asb_missing)
  list(JOIN _asb_missing "\n  " _asb_list)
  message(FATAL_ERROR "missing test dependencies; scripts/install-deps.sh must install them:\n"
                      "  ${_asb_list}\n"
                      "(or configure with -DASB_CHECK_TEST_DEPS=OFF to build without them)")
endif()
