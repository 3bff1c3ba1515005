# Generates build_info.cc on every build (only rewritten when its content
# changes), so `strata version` names the commit the binary was built from.
set(STRATA_BUILD_INFO_CC ${CMAKE_BINARY_DIR}/generated/build_info.cc)
add_custom_target(strata_build_info_gen
  COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
    -DOUTPUT=${STRATA_BUILD_INFO_CC}
    -DVERSION=${PROJECT_VERSION}
    -DCUDA_HEADERS=${STRATA_HAVE_CUDA_HEADERS}
    -DSANITIZE=${STRATA_SANITIZE}
    -P ${CMAKE_SOURCE_DIR}/cmake/write_build_info.cmake
  BYPRODUCTS ${STRATA_BUILD_INFO_CC}
  COMMENT "Stamping build info")
