# Every dependency is a Debian package (launch/bootstrap.sh installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(B2 REQUIRED IMPORTED_TARGET libb2)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# Debian ships cpp-httplib as a shared library; the header alone does not link.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED)  # mutual TLS on links and the rendezvous (wire/tls.h)

# CUDA is optional at build time: the driver is loaded with dlopen at run time,
# the header only supplies types. STRATA_USE_CUDA_HEADERS=OFF builds as if
# they were absent (to check that configuration).
option(STRATA_USE_CUDA_HEADERS "Use the CUDA headers when they are found" ON)
find_path(STRATA_CUDA_INCLUDE_DIR cuda.h
  PATHS ENV CUDA_HOME /usr/local/cuda
  PATH_SUFFIXES include
  NO_DEFAULT_PATH)
if(STRATA_CUDA_INCLUDE_DIR AND STRATA_USE_CUDA_HEADERS)
  set(STRATA_HAVE_CUDA_HEADERS ON)
  message(STATUS "CUDA headers: ${STRATA_CUDA_INCLUDE_DIR}")
else()
  set(STRATA_HAVE_CUDA_HEADERS OFF)
  message(STATUS "CUDA headers: not found (CUDA transfers will not be built)")
endif()
