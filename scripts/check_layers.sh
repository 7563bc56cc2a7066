#!/usr/bin/env bash
# check_layers.sh - checks that the #include "..." lines of the library and
# the tools follow the layers of docs/architecture.md, and that no header
# includes itself through others. Exits 1 and names each offending include.
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
set -euo pipefail
cd "$(dirname "$0")/.."

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

# The file an include names: beside the includer, else in include/ or src/.
resolve() { # resolve INCLUDER NAME
    local dir candidate
    dir=$(dirname "$1")
    for candidate in "$dir/$2" "include/$2" "src/$2"; do
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

if [ "$failures" -gt 0 ]; then
    echo "check_layers: $failures problem(s); the layers are in docs/architecture.md"
    exit 1
fi
echo "check_layers: the includes follow the layers"
