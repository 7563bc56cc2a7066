#!/usr/bin/env bash
# valgrind_io.sh - the readers under valgrind's memcheck: test_io, then
# io_replay on the fuzzers' corpora (tests/fuzz/corpus). Catches bytes of a
# loaded array that no decoder wrote (a short TIFF strip), which
# AddressSanitizer cannot see. Exit 77 (skipped) without valgrind, unless
# CONVOLVE_REQUIRE_VALGRIND=1 (CI sets it).
# Usage: valgrind_io.sh VALGRIND TEST_IO IO_REPLAY CORPUS_DIR
set -uo pipefail
vg=$1 test_io=$2 replay=$3 corpus=$4
if [ -z "$vg" ] || [ ! -x "$vg" ]; then
    if [ "${CONVOLVE_REQUIRE_VALGRIND:-0}" = 1 ]; then
        echo "valgrind_io: valgrind not found, and CONVOLVE_REQUIRE_VALGRIND=1"
        exit 1
    fi
    echo "valgrind_io: valgrind not found; skipped"
    exit 77
fi
opts=(--tool=memcheck --error-exitcode=99 --track-origins=yes -q)
rc=0
"$vg" "${opts[@]}" "$test_io" || rc=1
"$vg" "${opts[@]}" "$replay" "$corpus" || rc=1
exit $rc
