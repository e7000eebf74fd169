# Header-only dependencies found by their config packages (Debian's) or, on a machine without them
# (the GPU device machine, which has no package registry), by their headers under
# CMAKE_PREFIX_PATH / CMAKE_INCLUDE_PATH, e.g. the .deps/ folder scripts/device_deps.sh fills.
function(shardscope_header_only package target header)
  find_package(${package} QUIET CONFIG)
  if(TARGET ${target})
    return()
  endif()
  find_path(${package}_HEADER_DIR ${header})
  if(NOT ${package}_HEADER_DIR)
    message(FATAL_ERROR "${package} not found (${header}). Install it with scripts/setup.sh, or put its "
                        "headers on CMAKE_INCLUDE_PATH (scripts/device_deps.sh does that for the GPU machine).")
  endif()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  target_include_directories(${target} SYSTEM INTERFACE ${${package}_HEADER_DIR})
  message(STATUS "shardscope: ${package} from headers in ${${package}_HEADER_DIR}")
endfunction()
