# EnzymePy toolchain file: build every C and C++ target of a project with
# enzyme-cc / enzyme-c++, static libraries included (their objects carry
# bitcode, so a function in a library can be differentiated from the
# executable that links it).
#
#   cmake -S . -B build -DCMAKE_TOOLCHAIN_FILE=$(python -m enzyme_py --toolchain)
#
# (installed as <prefix>/lib/cmake/EnzymePy/EnzymePyToolchain.cmake; in a source
# checkout it is toolchain/EnzymePy.cmake.)  The drivers are looked for next to
# this file's installation, then on PATH; set ENZYMEPY_CC / ENZYMEPY_CXX (in the
# environment or with -D) to name them yourself.  To differentiate only some
# targets of an ordinary project, use find_package(EnzymePy) and
# enzymepy_target() instead.

# CMake reads a toolchain file several times (once per try_compile); keep it
# idempotent and pass the choice on to the try_compile projects.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ENZYMEPY_CC ENZYMEPY_CXX)

get_filename_component(_enzymepy_tc_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
foreach(_enzymepy_tc IN ITEMS CC CXX)
  if(_enzymepy_tc STREQUAL "CC")
    set(_enzymepy_tc_name enzyme-cc)
  else()
    set(_enzymepy_tc_name enzyme-c++)
  endif()
  if(NOT ENZYMEPY_${_enzymepy_tc} AND DEFINED ENV{ENZYMEPY_${_enzymepy_tc}})
    set(ENZYMEPY_${_enzymepy_tc} "$ENV{ENZYMEPY_${_enzymepy_tc}}")
  endif()
  if(NOT ENZYMEPY_${_enzymepy_tc})
    # Installed beside this file (<prefix>/lib/cmake/EnzymePy, or inside the
    # Python package at <env>/lib/pythonX.Y/site-packages/enzyme_py/share/
    # cmake/EnzymePy with the scripts in <env>/bin), else on PATH.
    # (In a source checkout, toolchain/EnzymePy.cmake, there is no prefix:
    # only PATH.)
    set(_enzymepy_tc_hints "")
    if(CMAKE_CURRENT_LIST_DIR MATCHES "/lib/cmake/EnzymePy$")
      list(APPEND _enzymepy_tc_hints "${_enzymepy_tc_prefix}/bin")
    endif()
    if(CMAKE_CURRENT_LIST_DIR MATCHES "/enzyme_py/share/cmake/EnzymePy$")
      list(APPEND _enzymepy_tc_hints "${_enzymepy_tc_prefix}/../../../../bin"
                                     "${_enzymepy_tc_prefix}/../../../bin")
    endif()
    find_program(ENZYMEPY_${_enzymepy_tc} ${_enzymepy_tc_name}
      HINTS ${_enzymepy_tc_hints} NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
    find_program(ENZYMEPY_${_enzymepy_tc} ${_enzymepy_tc_name} NO_CMAKE_FIND_ROOT_PATH)
  endif()
  if(NOT ENZYMEPY_${_enzymepy_tc})
    message(FATAL_ERROR "EnzymePy toolchain: ${_enzymepy_tc_name} not found (looked in "
      "${_enzymepy_tc_prefix}/bin and on PATH). Install EnzymePy "
      "(python -m pip install enzyme-py) and activate its environment, or set "
      "ENZYMEPY_${_enzymepy_tc}.")
  endif()
endforeach()
unset(_enzymepy_tc)
unset(_enzymepy_tc_name)
unset(_enzymepy_tc_hints)
unset(_enzymepy_tc_prefix)

set(CMAKE_C_COMPILER "${ENZYMEPY_CC}")
set(CMAKE_CXX_COMPILER "${ENZYMEPY_CXX}")
