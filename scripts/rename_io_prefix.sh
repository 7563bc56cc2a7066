#!/usr/bin/env bash
# rename_io_prefix.sh - the mechanical rename of issue 14 that gave src/io/
# its own prefix (cvi_ -> cvio_, CVI_IO_ -> CVIO_). Kept so that a branch
# that still uses the old names can be brought up to date: run it from the
# repository root; it edits src/io/, tests/fuzz/ and docs/ in place.
set -euo pipefail
cd "$(dirname "$0")/.."
names='read_npy|read_png|read_jpeg|read_pnm|read_text|write_npy|write_png|write_jpeg|write_pnm|write_text|array_new|check_image_size|little_endian'
files=$(grep -rlE "\bcvi_($names)\b|\bCVI_IO_" src tests docs 2>/dev/null || true)
[ -z "$files" ] && exit 0
# shellcheck disable=SC2086  # a list of paths
sed -i -E "s/\bcvi_($names)\b/cvio_\1/g; s/\bCVI_IO_/CVIO_/g" $files
