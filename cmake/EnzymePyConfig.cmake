# EnzymePyConfig.cmake — find_package(EnzymePy) support.
#
#   find_package(EnzymePy 0.1 REQUIRED)
#   add_executable(app main.c)                 # main.c calls __enzyme_autodiff
#   target_link_libraries(app PRIVATE EnzymePy::Enzyme)
#   enzymepy_target(app)                       # only `app` goes through enzyme-cc
#
# Where CMake finds this file:
#   * a prefix install (Homebrew, Spack, Nix, `cmake --install`,
#     `pip install --prefix`): <prefix>/lib/cmake/EnzymePy/ — found through
#     CMAKE_PREFIX_PATH, or automatically when <prefix>/bin is on PATH;
#   * a pip install into a virtual environment: <venv>/lib/cmake/EnzymePy/
#     (the wheel's data scheme), found automatically while the venv is active;
#   * inside the Python package: -DEnzymePy_DIR="$(python -m enzyme_py --cmake-dir)".
#
# Result variables:
#   EnzymePy_FOUND, EnzymePy_VERSION (and _MAJOR/_MINOR/_PATCH)
#   EnzymePy_C_COMPILER     absolute path of enzyme-cc
#   EnzymePy_CXX_COMPILER   absolute path of enzyme-c++
#   EnzymePy_INCLUDE_DIR    the directory holding enzyme.h
#   EnzymePy_TOOLCHAIN_FILE the whole-project toolchain file (EnzymePyToolchain.cmake)
# Cache variables (set them to override the search):
#   EnzymePy_CC_EXECUTABLE, EnzymePy_CXX_EXECUTABLE
# Imported targets:
#   EnzymePy::Enzyme        INTERFACE library carrying the enzyme.h include directory
#   EnzymePy::enzyme-cc, EnzymePy::enzyme-c++   the compiler drivers (executables)
# Functions:
#   enzymepy_target(<target>... [NO_DEPENDENCIES])
#     Compile and link <target> with enzyme-cc / enzyme-c++ (through the
#     C/CXX compiler and linker launcher properties), leaving the project's
#     compiler alone for every other target.  Static and object libraries
#     that <target> links (transitively, resolved at the end of configuration)
#     are compiled with enzyme-cc too, so functions living in them can be
#     differentiated; the resulting objects are ordinary native objects that
#     also carry bitcode, so other targets still link them normally.
#     NO_DEPENDENCIES leaves the linked libraries as they are.
#     Needs CMake >= 3.21 and a Makefile or Ninja generator.

if(CMAKE_VERSION VERSION_LESS 3.15)
  set(EnzymePy_FOUND FALSE)
  set(EnzymePy_NOT_FOUND_MESSAGE "EnzymePy needs CMake 3.15 or newer (this is ${CMAKE_VERSION})")
  return()
endif()
cmake_policy(PUSH)
cmake_policy(VERSION 3.15...3.31)

include("${CMAKE_CURRENT_LIST_DIR}/EnzymePyConfigVersion.cmake")
set(EnzymePy_VERSION "${PACKAGE_VERSION}")
string(REPLACE "." ";" _enzymepy_parts "${EnzymePy_VERSION}")
list(GET _enzymepy_parts 0 EnzymePy_VERSION_MAJOR)
list(GET _enzymepy_parts 1 EnzymePy_VERSION_MINOR)
list(GET _enzymepy_parts 2 EnzymePy_VERSION_PATCH)
unset(_enzymepy_parts)
# Leave no PACKAGE_* behind: find_package would otherwise mistake them for
# the next package's version check results.
unset(PACKAGE_VERSION)
unset(PACKAGE_VERSION_COMPATIBLE)
unset(PACKAGE_VERSION_EXACT)
unset(PACKAGE_VERSION_UNSUITABLE)

if(EnzymePy_FIND_COMPONENTS)
  foreach(_enzymepy_comp IN LISTS EnzymePy_FIND_COMPONENTS)
    if(EnzymePy_FIND_REQUIRED_${_enzymepy_comp})
      set(EnzymePy_FOUND FALSE)
      set(EnzymePy_NOT_FOUND_MESSAGE "EnzymePy has no component '${_enzymepy_comp}'")
      cmake_policy(POP)
      return()
    endif()
  endforeach()
endif()

# The layouts this file is installed in, all relative to this directory:
#   <prefix>/lib/cmake/EnzymePy            -> <prefix>/{bin,include}
#   <site-packages>/enzyme_py/share/cmake/EnzymePy -> enzyme_py/include, and the
#       scripts in <env>/bin, <env>/lib/pythonX.Y/site-packages being 4 levels up
#       (3 for Debian's /usr/lib/python3/dist-packages)
#   <checkout>/cmake                       -> <checkout>/include, enzyme-cc on PATH
get_filename_component(_enzymepy_up3 "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
get_filename_component(_enzymepy_up1 "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

find_path(EnzymePy_INCLUDE_DIR enzyme.h
  HINTS "${_enzymepy_up3}/include" "${_enzymepy_up1}/include"
  NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
mark_as_advanced(EnzymePy_INCLUDE_DIR)

set(_enzymepy_bin_hints "")
if(CMAKE_CURRENT_LIST_DIR MATCHES "/lib/cmake/EnzymePy$")
  list(APPEND _enzymepy_bin_hints "${_enzymepy_up3}/bin")   # a prefix install
endif()
if(CMAKE_CURRENT_LIST_DIR MATCHES "/enzyme_py/share/cmake/EnzymePy$")
  # Inside the Python package: the scripts are in the environment's bin/.
  list(APPEND _enzymepy_bin_hints
    "${_enzymepy_up3}/../../../../bin"   # <env>/lib/pythonX.Y/site-packages
    "${_enzymepy_up3}/../../../bin")     # /usr/lib/python3/dist-packages
endif()
foreach(_enzymepy_tool IN ITEMS CC CXX)
  if(_enzymepy_tool STREQUAL "CC")
    set(_enzymepy_name enzyme-cc)
  else()
    set(_enzymepy_name enzyme-c++)
  endif()
  # The drivers installed with this file win over any others on PATH.
  find_program(EnzymePy_${_enzymepy_tool}_EXECUTABLE ${_enzymepy_name}
    HINTS ${_enzymepy_bin_hints} NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  find_program(EnzymePy_${_enzymepy_tool}_EXECUTABLE ${_enzymepy_name} NO_CMAKE_FIND_ROOT_PATH)
  mark_as_advanced(EnzymePy_${_enzymepy_tool}_EXECUTABLE)
endforeach()
unset(_enzymepy_tool)
unset(_enzymepy_name)
unset(_enzymepy_bin_hints)

set(_enzymepy_missing "")
if(NOT EnzymePy_INCLUDE_DIR)
  list(APPEND _enzymepy_missing "enzyme.h (looked in ${_enzymepy_up3}/include and ${_enzymepy_up1}/include)")
endif()
if(NOT EnzymePy_CC_EXECUTABLE)
  list(APPEND _enzymepy_missing "enzyme-cc (looked next to this package and on PATH: set EnzymePy_CC_EXECUTABLE to name it)")
endif()
if(NOT EnzymePy_CXX_EXECUTABLE)
  list(APPEND _enzymepy_missing "enzyme-c++ (looked next to this package and on PATH: set EnzymePy_CXX_EXECUTABLE to name it)")
endif()
unset(_enzymepy_up1)
unset(_enzymepy_up3)
if(_enzymepy_missing)
  string(REPLACE ";" "\n  " _enzymepy_missing "${_enzymepy_missing}")
  set(EnzymePy_FOUND FALSE)
  string(CONCAT EnzymePy_NOT_FOUND_MESSAGE
    "EnzymePy ${EnzymePy_VERSION} at ${CMAKE_CURRENT_LIST_DIR} is incomplete; not found:\n"
    "  ${_enzymepy_missing}\n"
    "Install EnzymePy with pip (python -m pip install enzyme-py) and activate its "
    "environment, or put its bin/ directory on PATH.")
  unset(_enzymepy_missing)
  cmake_policy(POP)
  return()
endif()
unset(_enzymepy_missing)

set(EnzymePy_C_COMPILER "${EnzymePy_CC_EXECUTABLE}")
set(EnzymePy_CXX_COMPILER "${EnzymePy_CXX_EXECUTABLE}")
set(EnzymePy_TOOLCHAIN_FILE "${CMAKE_CURRENT_LIST_DIR}/EnzymePyToolchain.cmake")
if(NOT EXISTS "${EnzymePy_TOOLCHAIN_FILE}")
  # A source checkout keeps it in toolchain/.
  get_filename_component(EnzymePy_TOOLCHAIN_FILE
    "${CMAKE_CURRENT_LIST_DIR}/../toolchain/EnzymePy.cmake" ABSOLUTE)
endif()
set(_enzymepy_launcher "${CMAKE_CURRENT_LIST_DIR}/enzymepy-launch.sh")
if(NOT EXISTS "${_enzymepy_launcher}")
  get_filename_component(_enzymepy_launcher
    "${CMAKE_CURRENT_LIST_DIR}/../toolchain/enzymepy-launch.sh" ABSOLUTE)
endif()
# Global, so enzymepy_target works in any directory, whichever one called
# find_package.
set_property(GLOBAL PROPERTY _ENZYMEPY_LAUNCHER "${_enzymepy_launcher}")
unset(_enzymepy_launcher)

if(NOT TARGET EnzymePy::Enzyme)
  add_library(EnzymePy::Enzyme INTERFACE IMPORTED)
  set_target_properties(EnzymePy::Enzyme PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${EnzymePy_INCLUDE_DIR}")
endif()
if(NOT TARGET EnzymePy::enzyme-cc)
  add_executable(EnzymePy::enzyme-cc IMPORTED)
  set_target_properties(EnzymePy::enzyme-cc PROPERTIES IMPORTED_LOCATION "${EnzymePy_C_COMPILER}")
endif()
if(NOT TARGET EnzymePy::enzyme-c++)
  add_executable(EnzymePy::enzyme-c++ IMPORTED)
  set_target_properties(EnzymePy::enzyme-c++ PROPERTIES IMPORTED_LOCATION "${EnzymePy_CXX_COMPILER}")
endif()

# The launcher command for one language: the shell script drops the project's
# compiler (and any words of CMAKE_<LANG>_COMPILER_ARG1) from the command line
# CMake builds and runs the EnzymePy driver with the rest.
function(_enzymepy_launcher lang tool out)
  set(_skip 1)
  if(DEFINED CMAKE_${lang}_COMPILER_ARG1 AND NOT "${CMAKE_${lang}_COMPILER_ARG1}" STREQUAL "")
    separate_arguments(_arg1 UNIX_COMMAND "${CMAKE_${lang}_COMPILER_ARG1}")
    list(LENGTH _arg1 _n)
    math(EXPR _skip "${_skip} + ${_n}")
  endif()
  get_property(_script GLOBAL PROPERTY _ENZYMEPY_LAUNCHER)
  set(${out} "/bin/sh;${_script};${_skip};${tool}" PARENT_SCOPE)
endfunction()

function(_enzymepy_apply target)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  get_property(_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  foreach(_lang IN ITEMS C CXX)
    if(NOT _lang IN_LIST _langs)
      continue()
    endif()
    if(_lang STREQUAL "C")
      _enzymepy_launcher(C "${EnzymePy_CC_EXECUTABLE}" _launch)
    else()
      _enzymepy_launcher(CXX "${EnzymePy_CXX_EXECUTABLE}" _launch)
    endif()
    set_property(TARGET ${target} PROPERTY ${_lang}_COMPILER_LAUNCHER "${_launch}")
    if(_type STREQUAL "EXECUTABLE" OR _type STREQUAL "SHARED_LIBRARY"
       OR _type STREQUAL "MODULE_LIBRARY")
      set_property(TARGET ${target} PROPERTY ${_lang}_LINKER_LAUNCHER "${_launch}")
    endif()
  endforeach()
endfunction()

# Static and object libraries built by this project that `target` links,
# transitively (through LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES).
function(_enzymepy_collect target out)
  set(_todo ${target})
  set(_seen "")
  set(_libs "")
  while(_todo)
    list(POP_FRONT _todo _t)
    if(_t IN_LIST _seen)
      continue()
    endif()
    list(APPEND _seen ${_t})
    set(_deps "")
    foreach(_prop IN ITEMS LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(_v ${_t} ${_prop})
      if(_v)
        list(APPEND _deps ${_v})
      endif()
    endforeach()
    foreach(_d IN LISTS _deps)
      # Static libraries list private dependencies as $<LINK_ONLY:dep>.
      if(_d MATCHES "^\\$<LINK_ONLY:([^>$]+)>$")
        set(_d "${CMAKE_MATCH_1}")
      endif()
      if(NOT TARGET "${_d}")
        continue()
      endif()
      get_target_property(_aliased ${_d} ALIASED_TARGET)
      if(_aliased)
        set(_d ${_aliased})
      endif()
      get_target_property(_imported ${_d} IMPORTED)
      get_target_property(_type ${_d} TYPE)
      if(NOT _imported AND (_type STREQUAL "STATIC_LIBRARY" OR _type STREQUAL "OBJECT_LIBRARY"))
        list(APPEND _libs ${_d})
      endif()
      if(NOT _imported)
        list(APPEND _todo ${_d})
      endif()
    endforeach()
  endwhile()
  list(REMOVE_DUPLICATES _libs)
  set(${out} "${_libs}" PARENT_SCOPE)
endfunction()

function(_enzymepy_finalize)
  get_property(_targets GLOBAL PROPERTY _ENZYMEPY_DEPENDENT_TARGETS)
  foreach(_t IN LISTS _targets)
    _enzymepy_collect(${_t} _libs)
    foreach(_lib IN LISTS _libs)
      _enzymepy_apply(${_lib})
    endforeach()
  endforeach()
endfunction()

function(enzymepy_target)
  cmake_parse_arguments(PARSE_ARGV 0 _arg "NO_DEPENDENCIES" "" "")
  if(NOT _arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "enzymepy_target: name at least one target")
  endif()
  if(CMAKE_VERSION VERSION_LESS 3.21)
    message(FATAL_ERROR "enzymepy_target needs CMake 3.21 or newer (linker launchers); "
      "this is CMake ${CMAKE_VERSION}. Use the toolchain file instead: "
      "-DCMAKE_TOOLCHAIN_FILE=${EnzymePy_TOOLCHAIN_FILE}")
  endif()
  if(NOT CMAKE_GENERATOR MATCHES "Makefiles|Ninja")
    message(FATAL_ERROR "enzymepy_target works with the Makefile and Ninja generators "
      "(compiler launchers); with '${CMAKE_GENERATOR}' use the toolchain file: "
      "-DCMAKE_TOOLCHAIN_FILE=${EnzymePy_TOOLCHAIN_FILE}")
  endif()
  if(CMAKE_HOST_WIN32)
    message(FATAL_ERROR "enzymepy_target needs a POSIX shell; on Windows use the toolchain file")
  endif()
  get_property(_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST _langs AND NOT "CXX" IN_LIST _langs)
    message(FATAL_ERROR "enzymepy_target: enable C or CXX in project() first")
  endif()
  foreach(_t IN LISTS _arg_UNPARSED_ARGUMENTS)
    if(NOT TARGET ${_t})
      message(FATAL_ERROR "enzymepy_target: '${_t}' is not a target")
    endif()
    get_target_property(_imported ${_t} IMPORTED)
    if(_imported)
      message(FATAL_ERROR "enzymepy_target: '${_t}' is an imported target; it is not built here")
    endif()
    _enzymepy_apply(${_t})
    if(NOT _arg_NO_DEPENDENCIES)
      set_property(GLOBAL APPEND PROPERTY _ENZYMEPY_DEPENDENT_TARGETS ${_t})
    endif()
  endforeach()
  # Libraries may be linked after this call: resolve them once the whole
  # project is configured.
  get_property(_deferred GLOBAL PROPERTY _ENZYMEPY_FINALIZE_DEFERRED)
  if(NOT _deferred AND NOT _arg_NO_DEPENDENCIES)
    set_property(GLOBAL PROPERTY _ENZYMEPY_FINALIZE_DEFERRED TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _enzymepy_finalize)
  endif()
endfunction()

cmake_policy(POP)
