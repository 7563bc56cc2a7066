#!/usr/bin/env bash
# check_layers.sh [--root DIR] [BUILD_DIR] - checks that the #include "..."
# lines of the library and the tools follow the layers of
# docs/architecture.md, and that no header includes itself through others;
# given a build folder, that the calls between its object files do too: the
# symbols each object uses and defines (nm) go one way between modules, and
# no object file calls, through others, back into itself. Exits 1 and names
# each offending include or call. --root: the source tree (default: the one
# this script is in; the tests check a copy).
#
# Modules and what each may include (besides itself):
#   public   include/convolve.h, include/convolve_mpi.h      -
#   math     src/kernel_math.h                               -
#   shared   src/problem.h, src/backend.h, src/bytes.h,      public math
#            src/stream.h
#   core     the other files of src/                         public math shared
#   cpu      src/cpu/                                        public math shared
#   cuda     src/cuda/*.c and the headers only they use      public math shared kernels
#   kernels  src/cuda/*.cu, *.cuh, and their plain-C faces   public math shared
#            kernels.h, fast_*.h, gen.h, gen_params.h
#   io       src/io/                                         public math shared
#   mpi      src/mpi/ (libconvolve_mpi, on the public API)   public math
#   tools    tools/, bench/                                  public tools
#   python   python/ (the package's C extension)             public
# So control flows one way: the core reaches the backends only through the
# tables of shared's backend.h, the backends reach the kernels through their
# launchers, io stands apart, and the tools and the Python package see the
# public header only.
#
# Calls (symbols of the object files), by the module of the file that
# defines them:
#   shared   src/bytes.c, error.c, layout.c, problem.c, stream.c: what the
#            shared headers declare; they call only each other (and public)
#   public   any convolve_* function: callable from every module
#   core     calls shared, and a backend only through its table
#            (cvcpu_backend, cvcu_backend)
#   cpu, io  call shared
#   cuda     calls shared and kernels
#   kernels  call shared
#   tools, mpi   call public only (and themselves)
# and over all object files, the calls make no circle (file A calls B, B
# calls A, directly or through others), public calls included.
set -euo pipefail
root="$(dirname "$0")/.."
build=""
while [ $# -gt 0 ]; do
    case "$1" in
    --root) root="$2"; shift 2 ;;
    *) build=$(realpath "$1"); shift ;;
    esac
done
cd "$root"

module_of() {
    case "$1" in
    include/convolve.h | include/convolve_mpi.h) echo public ;;
    src/kernel_math.h) echo math ;;
    src/problem.h | src/backend.h | src/bytes.h | src/stream.h) echo shared ;;
    src/cpu/*) echo cpu ;;
    src/cuda/*.cu | src/cuda/*.cuh | src/cuda/kernels.h | src/cuda/fast_*.h | src/cuda/gen.h | \
        src/cuda/gen_params.h) echo kernels ;;
    src/cuda/*) echo cuda ;;
    src/io/*) echo io ;;
    src/mpi/*) echo mpi ;;
    src/*) echo core ;;
    tools/* | bench/*) echo tools ;;
    python/*) echo python ;;
    *) echo other ;;
    esac
}

allowed() { # allowed FROM TO
    [ "$1" = "$2" ] && return 0
    case "$1:$2" in
    *:public) [ "$1" != math ] ;;
    shared:math | core:math | cpu:math | cuda:math | kernels:math | io:math | mpi:math) return 0 ;;
    core:shared | cpu:shared | cuda:shared | kernels:shared | io:shared) return 0 ;;
    cuda:kernels) return 0 ;;
    *) return 1 ;;
    esac
}

# The file an include names: beside the includer, else on the library's
# include path (include/, src/, src/cuda/: every library file has all three).
resolve() { # resolve INCLUDER NAME
    local dir candidate
    dir=$(dirname "$1")
    for candidate in "$dir/$2" "include/$2" "src/$2" "src/cuda/$2"; do
        if [ -f "$candidate" ]; then
            realpath --relative-to=. "$candidate"
            return
        fi
    done
}

failures=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
while IFS= read -r file; do
    from=$(module_of "$file")
    while IFS= read -r name; do
        target=$(resolve "$file" "$name")
        [ -n "$target" ] || continue # a system header
        to=$(module_of "$target")
        echo "$file $target" >>"$edges"
        if ! allowed "$from" "$to"; then
            echo "check_layers: $file ($from) includes $target ($to)"
            failures=$((failures + 1))
        fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find include src tools bench python -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
             -o -name '*.cuh' \) | sort)

# tsort reports a loop when headers include each other in a circle
if ! loops=$(tsort "$edges" 2>&1 >/dev/null) || [ -n "$loops" ]; then
    echo "check_layers: circular includes: $loops"
    failures=$((failures + 1))
fi

# ---- calls: the symbols of the build's object files ------------------------

link_module_of() {
    case "$1" in
    src/bytes.c | src/error.c | src/layout.c | src/problem.c | src/stream.c) echo shared ;;
    *) module_of "$1" ;;
    esac
}

link_allowed() { # link_allowed FROM TO SYMBOL
    [ "$1" = "$2" ] && return 0
    case "$3" in convolve_*) return 0 ;; esac
    case "$1:$2" in
    core:shared | cpu:shared | cuda:shared | kernels:shared | io:shared) return 0 ;;
    cuda:kernels) return 0 ;;
    core:cpu) [ "$3" = cvcpu_backend ] ;;
    core:cuda) [ "$3" = cvcu_backend ] ;;
    *) return 1 ;;
    esac
}

# Calls known to go round, left as they are: "FILE CALLED-FILE reason". None.
known_exceptions=""

checked_calls=""
if [ -n "$build" ]; then
    syms=$(mktemp)
    calls=$(mktemp)
    trap 'rm -f "$edges" "$syms" "$calls"' EXIT
    # object files of the library, the tools and the MPI layer, by source:
    # .../convolve_objects.dir/src/cpu/fast.c.o is src/cpu/fast.c
    nobjects=0
    while IFS= read -r obj; do
        src=${obj#*.dir/}
        src=${src%.o}
        # (objects of sources since removed may linger in a build folder)
        [ -f "$src" ] && [ "$(module_of "$src")" != other ] || continue
        nobjects=$((nobjects + 1))
        nm -P "$obj" 2>/dev/null | awk -v f="$src" '
            $2 == "U" { print "U", f, $1; next }
            $2 ~ /^[A-TV-Z]$/ { print "D", f, $1 }'
    done < <(find "$build/CMakeFiles" -name '*.o' \( -path '*/convolve_objects.dir/*' -o \
                 -path '*/convolve_tools.dir/*' -o -path '*/convolve_cli.dir/*' -o \
                 -path '*/convolve_mpi.dir/*' -o -path '*/convolve_mpi_cli.dir/*' \) | sort) >"$syms"
    if [ "$nobjects" -eq 0 ]; then
        echo "check_layers: no object files of the library under $build/CMakeFiles (build first)"
        exit 1
    fi
    # "FILE CALLED-FILE SYMBOL" for each symbol a file uses that another defines
    awk '$1 == "D" { def[$3] = def[$3] " " $2; next }
         { use[NR] = $2 " " $3 }
         END { for (i in use) { split(use[i], u, " "); n = split(def[u[2]], d, " ");
                   for (k = 1; k <= n; k++) if (d[k] != u[1]) print u[1], d[k], u[2] } }' \
        <(grep '^D' "$syms"; grep '^U' "$syms") | sort -u >"$calls"
    graph=$(mktemp)
    trap 'rm -f "$edges" "$syms" "$calls" "$graph"' EXIT
    while read -r from to sym; do
        if grep -q "^$from $to " <<<"$known_exceptions"; then
            continue
        fi
        echo "$from $to" >>"$graph"
        mf=$(link_module_of "$from")
        mt=$(link_module_of "$to")
        if ! link_allowed "$mf" "$mt" "$sym"; then
            echo "check_layers: $from ($mf) calls $sym of $to ($mt)"
            failures=$((failures + 1))
        fi
    done <"$calls"
    if ! loops=$(tsort "$graph" 2>&1 >/dev/null) || [ -n "$loops" ]; then
        echo "check_layers: calls go round; the calls among the files of the circle:"
        members=$(printf '%s\n' "$loops" | grep -v 'input contains a loop' | sed 's/^tsort: //')
        while read -r from to sym; do
            # (here-strings, not pipes: with pipefail, grep -q leaving at its
            # first match could fail a pipe whose writer had more to write)
            if grep -qx -- "$from" <<<"$members" && grep -qx -- "$to" <<<"$members"; then
                echo "    $from -> $to ($sym)"
            fi
        done <"$calls"
        failures=$((failures + 1))
    fi
    checked_calls=" and the calls of $nobjects object files"
fi

if [ "$failures" -gt 0 ]; then
    echo "check_layers: $failures problem(s); the layers are in docs/architecture.md"
    exit 1
fi
echo "check_layers: the includes$checked_calls follow the layers"
