# The Python extension module _kite: nanobind bindings (python/bindings/) linked with the same
# layer libraries as the kite command, so Python runs the engine the CLI and the server run.
# The interpreter comes from Python_EXECUTABLE (scikit-build-core sets it), else from the
# project's .venv, else from PATH; nanobind's CMake files come from that interpreter.
if(NOT Python_EXECUTABLE AND EXISTS "${CMAKE_SOURCE_DIR}/.venv/bin/python")
  set(Python_EXECUTABLE "${CMAKE_SOURCE_DIR}/.venv/bin/python")
endif()
set(kite_python_required "")
if(KITE_PYTHON STREQUAL "ON")
  set(kite_python_required REQUIRED)
endif()
find_package(Python 3.9 COMPONENTS Interpreter Development.Module ${kite_python_required})
if(Python_FOUND)
  execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
    OUTPUT_VARIABLE nanobind_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(nanobind_ROOT)
  find_package(nanobind CONFIG ${kite_python_required})
endif()
if(NOT nanobind_FOUND)
  if(KITE_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "KITE_PYTHON=ON needs nanobind: pip install -r python/requirements.txt")
  endif()
  message(STATUS "Python module: off (nanobind not found)")
  return()
endif()
message(STATUS "Python module: on (${Python_EXECUTABLE})")

file(GLOB KITE_BINDING_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/bindings/*.cpp)
# NB_STATIC: nanobind's runtime linked into the module, one file to install.
nanobind_add_module(_kite NB_STATIC ${KITE_BINDING_SOURCES})
target_link_libraries(_kite PRIVATE kite_all_layers)
# nanobind's runtime is its own code: the project's -Werror does not judge its warnings.
target_compile_options(nanobind-static PRIVATE -Wno-error)
target_include_directories(_kite PRIVATE ${CMAKE_SOURCE_DIR}/python/bindings)
# nanobind's headers declare zero-size arrays (a GNU extension) for functions of no arguments.
target_compile_options(_kite PRIVATE -Wno-pedantic)
set_target_properties(_kite PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python)
if(SKBUILD)
  install(TARGETS _kite LIBRARY DESTINATION kite)
endif()
