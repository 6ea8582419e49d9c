# ARCHETYPE_FUZZ=ON: every library and program compiled for libFuzzer's
# coverage (fuzzer-no-link) and under AddressSanitizer + UBSan, so the fuzz
# targets in this folder see inside the code they call. Included by the top
# CMakeLists.txt before the libraries; clang only (gcc has no libFuzzer).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ARCHETYPE_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ (tools/fuzz.sh does)")
endif()
# UB aborts like a crash: libFuzzer only keeps inputs that stop the process.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
# Programs other than the fuzz targets (archrun, the tests) still link.
add_link_options(-fsanitize=address,undefined)
