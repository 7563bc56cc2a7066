#!/usr/bin/env bash
# check_format.sh [--fix] - checks that the tracked C, C++ and CUDA files
# (git ls-files) are formatted as .clang-format says, with clang-format 14
# exactly (Debian 12's clang-format package; other versions format some
# constructs differently). Exits 1 and names each file that differs;
# --fix rewrites them in place instead (`make format`).
# The program: $CLANG_FORMAT if set, else clang-format-14, else clang-format,
# if it is version 14. Without one the check is skipped (exit 0) unless
# CONVOLVE_REQUIRE_FORMAT=1 (CI), which makes it an error (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
"") ;;
--fix) fix=1 ;;
*) echo "usage: $0 [--fix]" >&2; exit 2 ;;
esac

# Files left as written (paths as git ls-files prints them).
exclude=()

version_of() { "$1" --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9]*\)\..*/\1/p'; }

cf=""
for c in ${CLANG_FORMAT:-clang-format-14 clang-format}; do
    if command -v "$c" >/dev/null 2>&1 && [ "$(version_of "$c")" = 14 ]; then
        cf=$c
        break
    fi
done
if [ -z "$cf" ]; then
    msg="clang-format 14 not found (Debian 12: apt-get install clang-format; or set CLANG_FORMAT)"
    if [ "${CONVOLVE_REQUIRE_FORMAT:-0}" = 1 ]; then
        echo "check_format: $msg" >&2
        exit 1
    fi
    echo "check_format: skipped: $msg"
    exit 0
fi

files=()
while IFS= read -r f; do
    for x in "${exclude[@]+"${exclude[@]}"}"; do
        [ "$f" = "$x" ] && continue 2
    done
    [ -f "$f" ] && files+=("$f")
done < <(git ls-files -- '*.c' '*.h' '*.cu' '*.cuh' '*.cpp' '*.hpp' '*.cc')
if ((${#files[@]} == 0)); then
    echo "check_format: no tracked C/C++/CUDA files (not a git checkout?)" >&2
    exit 1
fi

if ((fix)); then
    "$cf" -i --style=file "${files[@]}"
    echo "check_format: formatted ${#files[@]} files with $cf"
    exit 0
fi
bad=()
for f in "${files[@]}"; do
    "$cf" --dry-run -Werror --style=file "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
    printf 'check_format: not formatted: %s\n' "${bad[@]}" >&2
    echo "check_format: ${#bad[@]} of ${#files[@]} files differ from .clang-format ($cf);" \
         "run 'make format' (or: $cf -i FILE) and commit" >&2
    exit 1
fi
echo "check_format: ${#files[@]} files formatted ($cf)"
