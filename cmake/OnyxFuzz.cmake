# ONYX_FUZZ: the libFuzzer harnesses of tests/fuzz, built in the sanitizer tree itself so one
# clang build serves both the ASan + UBSan test suites and the fuzzers (scripts/test.sh).
#
# Every target gets -fsanitize=fuzzer-no-link (coverage counters and comparison hooks, no main);
# only the harness executables link libFuzzer (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt), so
# the GoogleTest suites of the same tree keep their own main(). The kernels library, which the
# gcc sanitizer build left uninstrumented to share Release objects through ccache, gets ASan +
# UBSan too (tests/fuzz/CMakeLists.txt): a fuzzed run's out-of-bounds access happens in a kernel,
# and clang objects cannot come from the gcc cache anyway.
if(ONYX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ONYX_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(NOT ONYX_SANITIZE)
    message(FATAL_ERROR "ONYX_FUZZ needs ONYX_SANITIZE=ON (the harnesses run under ASan + UBSan)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
