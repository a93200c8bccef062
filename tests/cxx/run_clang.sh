#!/bin/sh
# Builds the C++ header's tests with clang++ (C++20, libstdc++) against the
# library the project built, and runs them.  Usage:
#   run_clang.sh SOURCE_DIR LIBRARY WORK_DIR
set -eu
src=$1
lib=$2
work=$3
command -v clang++ >/dev/null || { echo "clang++ is missing (./x installs clang)" >&2; exit 1; }
mkdir -p "$work"
# shellcheck disable=SC2046
clang++ -std=c++20 -Wall -Wextra -Wpedantic -Werror -I"$src/include" \
	$(pkg-config --cflags cmocka) -o "$work/test_syncband_hpp_clang" \
	"$src/tests/cxx/test_syncband_hpp.cpp" "$lib" $(pkg-config --libs cmocka) -pthread
"$work/test_syncband_hpp_clang"
