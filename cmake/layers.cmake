# The layers of src/ as CMake targets, read from the `layers` block of docs/design.md:
#
#   ```layers
#   core:
#   gguf: core
#   ...
#   cli: engine server tools ...
#   ```
#
# One line per layer, bottom first: its folder under src/, then the layers it uses directly,
# each of which must be listed above it. Every layer but the last is a static library
# kite_<name>; the last is the program (the kite command), whose sources and include
# sandbox come in KITE_LAYER_<name>_SOURCES and the target kite_<name>_deps. A layer's
# include path holds links to its own folder and to those of the layers below it that it
# may reach (what it uses, and what they use), and nothing else: an include that runs
# upward is "file not found". kite_all_layers gives tests and fuzz targets every layer.

# kite_read_layers(FILE OUT): the block's lines in OUT, bottom first.
function(kite_read_layers file out)
  file(READ "${file}" text)
  if(NOT text MATCHES "```layers\n([^`]*)```")
    message(FATAL_ERROR "${file} has no ```layers block")
  endif()
  string(REPLACE "\n" ";" lines "${CMAKE_MATCH_1}")
  set(result "")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(NOT line STREQUAL "")
      list(APPEND result "${line}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# The include sandbox of a layer: build/layers/<name>/<layer> -> src/<layer> for each reachable.
function(kite_layer_sandbox name reachable out)
  set(dir "${CMAKE_BINARY_DIR}/layers/${name}")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  foreach(layer IN LISTS reachable)
    file(CREATE_LINK "${CMAKE_SOURCE_DIR}/src/${layer}" "${dir}/${layer}" SYMBOLIC)
  endforeach()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

function(kite_add_layers lines)
  set(defined "")
  list(LENGTH lines count)
  math(EXPR last "${count} - 1")
  set(index 0)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^([a-z_]+):(.*)$")
      message(FATAL_ERROR "docs/design.md: a layers line is `name: uses...`, not `${line}`")
    endif()
    set(name "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" uses)
    separate_arguments(uses UNIX_COMMAND "${uses}")
    if(NOT IS_DIRECTORY "${CMAKE_SOURCE_DIR}/src/${name}")
      message(FATAL_ERROR "docs/design.md names layer ${name}, but src/${name} does not exist")
    endif()
    set(reachable "${name}")
    foreach(dep IN LISTS uses)
      if(NOT dep IN_LIST defined)
        message(FATAL_ERROR "layer ${name} uses ${dep}, which is not a layer below it")
      endif()
      list(APPEND reachable ${dep} ${KITE_REACH_${dep}})
    endforeach()
    list(REMOVE_DUPLICATES reachable)
    set(KITE_REACH_${name} "${reachable}" PARENT_SCOPE)
    set(KITE_REACH_${name} "${reachable}")
    kite_layer_sandbox(${name} "${reachable}" sandbox)
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/${name}/*.cpp")
    list(TRANSFORM uses PREPEND kite_)
    if(index EQUAL last)
      set(KITE_LAYER_${name}_SOURCES "${sources}" PARENT_SCOPE)
      add_library(kite_${name}_deps INTERFACE)
      target_include_directories(kite_${name}_deps INTERFACE "${sandbox}")
      target_link_libraries(kite_${name}_deps INTERFACE ${uses})
    else()
      add_library(kite_${name} STATIC ${sources})
      target_include_directories(kite_${name} PUBLIC "${sandbox}")
      target_link_libraries(kite_${name} PUBLIC ${uses})
      list(APPEND libraries kite_${name})
    endif()
    list(APPEND defined ${name})
    math(EXPR index "${index} + 1")
  endforeach()
  kite_layer_sandbox(all "${defined}" sandbox)
  add_library(kite_all_layers INTERFACE)
  target_include_directories(kite_all_layers INTERFACE "${sandbox}")
  target_link_libraries(kite_all_layers INTERFACE ${libraries})
endfunction()
