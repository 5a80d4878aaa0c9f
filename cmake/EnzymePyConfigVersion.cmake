# EnzymePyConfigVersion.cmake — which find_package(EnzymePy <version>) requests
# this installation satisfies.
#
# Compatibility: the same major version, and while the major version is 0, the
# same minor version too (0.x releases may change the interface); the installed
# version must be at least the one requested.  A version range
# (find_package(EnzymePy 0.1...1.0)) is satisfied by any version inside it.
# EnzymePy is architecture independent (Python and scripts), so no pointer-size
# check.  The version must match pyproject.toml (tests/cmake checks it).

set(PACKAGE_VERSION "0.1.0")

if(PACKAGE_FIND_VERSION_RANGE)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION_RANGE_MIN STREQUAL "INCLUDE"
     AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MIN)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
  if(PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE"
     AND PACKAGE_VERSION VERSION_GREATER PACKAGE_FIND_VERSION_MAX)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif(PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE"
         AND PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MAX)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
elseif(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)     # no version requested
else()
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _enzymepy_have "${PACKAGE_VERSION}")
  set(_enzymepy_have_major "${CMAKE_MATCH_1}")
  set(_enzymepy_have_minor "${CMAKE_MATCH_2}")
  if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL _enzymepy_have_major)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif(_enzymepy_have_major STREQUAL "0"
         AND PACKAGE_FIND_VERSION MATCHES "^[0-9]+\\.[0-9]+"   # a minor was requested
         AND NOT PACKAGE_FIND_VERSION_MINOR STREQUAL _enzymepy_have_minor)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
  if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
  unset(_enzymepy_have)
  unset(_enzymepy_have_major)
  unset(_enzymepy_have_minor)
endif()
