#!/bin/sh
# enzymepy-launch.sh SKIP DRIVER COMPILER... ARGS...
#
# The compiler/linker launcher behind enzymepy_target() (EnzymePyConfig.cmake).
# CMake runs `<launcher> <project compiler> <args>`; this drops the SKIP words of
# the project's compiler command and runs the EnzymePy driver (enzyme-cc or
# enzyme-c++) on the arguments instead, so one target is built through
# EnzymePy while the rest of the project keeps its compiler.
if [ "$#" -lt 2 ]; then
  echo "enzymepy-launch.sh: usage: enzymepy-launch.sh SKIP DRIVER COMPILER ARGS..." >&2
  exit 2
fi
skip=$1
driver=$2
shift 2
while [ "$skip" -gt 0 ] && [ "$#" -gt 0 ]; do
  shift
  skip=$((skip - 1))
done
exec "$driver" "$@"
