#!/bin/sh
# Instructions per round of bench/cxx_await.cc's modes under callgrind:
# the difference between a run of 2N and one of N rounds, over N, so that
# start-up and the loop's set-up cancel out.  Usage: cxx_await.sh BINARY [N]
set -eu
bin=$1
n=${2:-10000}
count() { # MODE ROUNDS
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 |
		sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
for mode in c-ready cxx-ready c-pending cxx-pending \
	c-lock-ready cxx-lock-ready c-lock-pending cxx-lock-pending; do
	a=$(count $mode "$n")
	b=$(count $mode $((2 * n)))
	echo "$mode $(((b - a) / n))"
done
