# Finds every third-party library csrun uses. All of them come from Debian packages
# (scripts/setup.sh installs them); nothing is downloaded or vendored. A missing one
# stops the configure step with the name of the package that provides it.

macro(csrun_require package debian_package)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR
      "csrun needs ${package}, which was not found. Install the Debian package "
      "'${debian_package}' (scripts/setup.sh installs every dependency).")
  endif()
endmacro()

csrun_require(CLI11 libcli11-dev CONFIG)
csrun_require(yaml-cpp libyaml-cpp-dev CONFIG)
csrun_require(nlohmann_json nlohmann-json3-dev CONFIG)
csrun_require(spdlog libspdlog-dev CONFIG)
csrun_require(Eigen3 libeigen3-dev CONFIG)
csrun_require(cppzmq cppzmq-dev CONFIG)
csrun_require(HDF5 libhdf5-dev COMPONENTS C CXX)
# The runtime's matrix products go to OpenBLAS's cblas_sgemm, which measures 1.4x faster than
# Eigen's own GEMM here. Named explicitly so the build
# never silently links the reference BLAS that Debian's libblas3 also provides.
find_package(Threads REQUIRED)
set(BLA_VENDOR OpenBLAS)
csrun_require(BLAS libopenblas-dev)
# bfloat16 products on CPUs with AMX go to oneDNN's matmul (lib/runtime/onednn_gemm.hpp). Debian
# builds it with GCC's OpenMP runtime, whose omp_set_num_threads csrun calls: that library by its
# run-time name, which every build (GCC or Clang) links the same way.
csrun_require(dnnl libdnnl-dev CONFIG)
find_library(CSRUN_ONEDNN_OPENMP NAMES libgomp.so.1 gomp)
if(NOT CSRUN_ONEDNN_OPENMP)
  message(FATAL_ERROR "csrun needs GCC's OpenMP runtime, which oneDNN uses. Install the Debian "
                      "package 'libgomp1' (scripts/setup.sh installs every dependency).")
endif()
# Chains of elementwise nodes are compiled to AVX-512 or AVX2 code when a step is loaded
# (lib/runtime/compiled_chain.hpp) with Xbyak, a header-only assembler.
find_path(CSRUN_XBYAK_INCLUDE_DIR xbyak/xbyak.h)
if(NOT CSRUN_XBYAK_INCLUDE_DIR)
  message(FATAL_ERROR "csrun needs Xbyak, which was not found. Install the Debian package "
                      "'libxbyak-dev' (scripts/setup.sh installs every dependency).")
endif()
# "VERSION = 0x6680 /* 0xABCD = A.BC(.D) */": 6.68.
file(STRINGS "${CSRUN_XBYAK_INCLUDE_DIR}/xbyak/xbyak.h" csrun_xbyak_version_line
     REGEX "VERSION = 0x[0-9a-fA-F]+")
string(REGEX REPLACE ".*VERSION = 0x([0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F]).*" "\\1.\\2"
       CSRUN_XBYAK_VERSION "${csrun_xbyak_version_line}")
add_library(csrun_xbyak INTERFACE)
target_include_directories(csrun_xbyak SYSTEM INTERFACE ${CSRUN_XBYAK_INCLUDE_DIR})
if(CSRUN_BUILD_TESTS)
  csrun_require(Catch2 catch2 CONFIG)
endif()

# HDF5's CMake module sets variables, not a target: wrap them in one.
add_library(csrun_hdf5 INTERFACE)
target_include_directories(csrun_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(csrun_hdf5 INTERFACE ${HDF5_LIBRARIES})
target_compile_definitions(csrun_hdf5 INTERFACE ${HDF5_DEFINITIONS})
