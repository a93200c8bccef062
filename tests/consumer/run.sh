#!/bin/sh
# Installs the build tree into a scratch prefix, then builds an outside
# program against it with CMake (shared and static) and with pkg-config
# (shared and static), and runs each.  Usage: run.sh BUILD_DIR WORK_DIR
set -eu
build=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

gen=
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
# shellcheck disable=SC2086
cmake -S "$here" -B "$work/cmake" $gen -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH=$(dirname "$(find "$prefix" -name 'libsyncband.so' | head -n 1)") \
	"$work/cmake/consumer_shared"
if ldd "$work/cmake/consumer_static" | grep -q libsyncband; then
	echo "consumer_static links libsyncband dynamically" >&2
	exit 1
fi
"$work/cmake/consumer_static"
if [ -x "$work/cmake/consumer_uring" ]; then
	LD_LIBRARY_PATH=$(dirname "$(find "$prefix" -name 'libsyncband.so' | head -n 1)") \
		"$work/cmake/consumer_uring"
	"$work/cmake/consumer_uring_static"
fi

pcdir=$(dirname "$(find "$prefix" -name syncband.pc | head -n 1)")
export PKG_CONFIG_PATH=$pcdir
cc=${CC:-cc}
# shellcheck disable=SC2046
$cc -std=c11 -Wall -Werror -o "$work/pc_shared" "$here/main.c" $(pkg-config --cflags --libs syncband)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir syncband) "$work/pc_shared"
# shellcheck disable=SC2046
$cc -std=c11 -Wall -Werror -static -o "$work/pc_static" "$here/main.c" $(pkg-config --static --cflags --libs syncband)
"$work/pc_static"
# pkg-config and the installed header say the same version.
header_version=$(sed -n 's/^#define SYNCBAND_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
	"$prefix/include/syncband/version.h" | paste -sd.)
pc_version=$(pkg-config --modversion syncband)
[ "$header_version" = "$pc_version" ] || {
	echo "version.h says $header_version, pkg-config says $pc_version" >&2
	exit 1
}
if [ -f "$pcdir/syncband-uring.pc" ]; then
	# shellcheck disable=SC2046
	$cc -std=c11 -Wall -Werror -o "$work/pc_uring" "$here/main_uring.c" \
		$(pkg-config --cflags --libs syncband-uring)
	LD_LIBRARY_PATH=$(pkg-config --variable=libdir syncband) "$work/pc_uring"
	# shellcheck disable=SC2046
	$cc -std=c11 -Wall -Werror -static -o "$work/pc_uring_static" "$here/main_uring.c" \
		$(pkg-config --static --cflags --libs syncband-uring)
	"$work/pc_uring_static"
fi
echo "install-tree consumer: cmake shared+static, pkg-config shared+static (core and uring): ok"
