#!/usr/bin/env bash
# check_layers_test.sh CC - proves that scripts/check_layers.sh fails where
# it should, on copies: a CPU file that includes a header of src/cuda (found
# through the library's include path, not beside it); object files that call
# each other round; a backend's object calling into the core, and a tool's
# calling past the public API. The tree itself must pass (the CTest
# check_layers).
set -euo pipefail
cc=${1:-cc}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

expect_fail() { # expect_fail WHAT PATTERN ARGS...
    local what=$1 pattern=$2 out
    shift 2
    if out=$(bash "$here/scripts/check_layers.sh" "$@" 2>&1); then
        echo "check_layers_test: $what: passed, should have failed"
        failures=$((failures + 1))
    elif ! grep -q -- "$pattern" <<<"$out"; then
        echo "check_layers_test: $what: failed without naming '$pattern':"
        echo "$out"
        failures=$((failures + 1))
    fi
}

# a copy of the sources the include check reads
tree=$work/tree
mkdir -p "$tree"
(cd "$here" && find include src tools bench python -type f \( -name '*.c' -o -name '*.h' \
     -o -name '*.cu' -o -name '*.cuh' \) -exec cp --parents {} "$tree" \;)
bash "$here/scripts/check_layers.sh" --root "$tree" >/dev/null ||
    { echo "check_layers_test: the copy should pass"; failures=$((failures + 1)); }
cp "$tree/src/cpu/reference.c" "$work/reference.c"
printf '#include "plan.h"\n' >>"$tree/src/cpu/reference.c"
expect_fail "a CPU file including src/cuda/plan.h" \
    "src/cpu/reference.c (cpu) includes src/cuda/plan.h (cuda)" --root "$tree"
cp "$work/reference.c" "$tree/src/cpu/reference.c"

# object files (of sources in the copy, as the check wants): two CPU files
# calling each other, a CPU file calling the core, a tool calling the core
b=$work/build/CMakeFiles
mkdir -p "$b/convolve_objects.dir/src/cpu" "$b/convolve_cli.dir/tools"
printf 'void cvcpu_b(void);\nvoid cvcpu_a(void) { cvcpu_b(); }\n' >"$tree/src/cpu/a.c"
printf 'void cvcpu_a(void);\nvoid cvi_registry(void);\nvoid cvcpu_b(void) { cvcpu_a(); cvi_registry(); }\n' \
    >"$tree/src/cpu/b.c"
printf 'void cvi_registry(void) {}\n' >"$tree/src/registry.c"
printf 'void cvi_registry(void);\nint main(void) { cvi_registry(); return 0; }\n' >"$tree/tools/t.c"
for src in src/cpu/a.c src/cpu/b.c src/registry.c; do
    "$cc" -c "$tree/$src" -o "$b/convolve_objects.dir/$src.o"
done
"$cc" -c "$tree/tools/t.c" -o "$b/convolve_cli.dir/tools/t.c.o"
expect_fail "two CPU objects calling each other" "src/cpu/b.c -> src/cpu/a.c (cvcpu_a)" \
    --root "$tree" "$work/build"
expect_fail "a CPU object calling the core" \
    "src/cpu/b.c (cpu) calls cvi_registry of src/registry.c (core)" --root "$tree" "$work/build"
expect_fail "a tool calling the core" "tools/t.c (tools) calls cvi_registry" --root "$tree" \
    "$work/build"

if [ "$failures" -gt 0 ]; then
    echo "check_layers_test: $failures failure(s)"
    exit 1
fi
echo "check_layers_test: check_layers refuses each of the 4 cases"
