/*
 * convolve.c - the `convolve` command's entry point: dispatches to the
 * subcommands (info, demo, bench) or to the convolution itself, and holds the
 * usage text, the error printer and the exit-code mapping.
 */
#include "bench.h"
#include "cli.h"

#include <stdarg.h>
#include <string.h>

int cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("convolve: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

int cli_exit_code(convolve_status st)
{
    switch (st) {
    case CONVOLVE_OK:
        return CLI_OK;
    case CONVOLVE_ERROR_OUT_OF_MEMORY:
    case CONVOLVE_ERROR_DEVICE:
    case CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY:
    case CONVOLVE_ERROR_INTERNAL:
        return CLI_RESOURCE;
    case CONVOLVE_ERROR_BACKEND_UNAVAILABLE:
        /* asking a CPU-only build for CUDA is a usage error; a GPU that
         * cannot be used is a device failure */
        return convolve_backend_built(CONVOLVE_BACKEND_CUDA) ? CLI_RESOURCE : CLI_BAD_INPUT;
    default:
        return CLI_BAD_INPUT;
    }
}

void cli_usage(FILE *f)
{
    fputs(
        "usage: convolve INPUT OUTPUT (--weights FILE | --filter NAME[:ARGS]) [options]\n"
        "       convolve info | demo [OUTPUT] [options] | bench [options] | --help | --version\n"
        "\n"
        "Convolves (or correlates) a 1-D signal, 2-D image or 3-D volume with\n"
        "scipy.ndimage's semantics, on the CPU or an NVIDIA GPU.\n"
        "\n"
        "Files (format by extension; on input also by magic number):\n"
        "  .npy              float32, float64, uint8, uint16; 1 to 3 dimensions\n"
        "  .png              8/16-bit gray, gray+alpha, RGB, RGBA (weights apply per channel)\n"
        "  .jpg .jpeg        8-bit gray or RGB\n"
        "  .pgm .ppm .pnm    P2 P3 P5 P6, 8 or 16 bits (written as P5/P6)\n"
        "  .tif .tiff        8/16-bit, float32/64; gray, RGB(A); pages are a 3-D stack\n"
        "\n"
        "Filter (exactly one):\n"
        "  --weights FILE    .npy with as many dimensions as the input, or a text file of\n"
        "                    whitespace-separated numbers, a line a row, a blank line between\n"
        "                    planes; text with fewer dimensions gets leading axes of 1\n"
        "  --filter SPEC     box:R  gaussian:SIGMA  sobel-x  sobel-y  laplacian  sharpen\n"
        "                    emboss  identity\n"
        "\n"
        "Options (--opt VALUE or --opt=VALUE; negative numbers are values; -- ends options):\n"
        "  --mode M          reflect (default), constant, nearest, mirror, wrap\n"
        "  --cval V          the value outside the input in constant mode (default 0)\n"
        "  --origin O[,O[,O]]  shift of the filter per axis, as scipy; one value for all axes\n"
        "  --correlate       correlate instead of convolve (the weights are not flipped)\n"
        "  --backend B       auto (default), cpu, cuda\n"
        "  --strategy NAME   a strategy from `convolve info` (default auto)\n"
        "  --autotune        time the strategies that serve and keep the fastest\n"
        "  --wisdom FILE     remember what --autotune measured in FILE, per device and\n"
        "                    problem class, and reuse it (implies --autotune)\n"
        "  --output-dtype T  float32, float64, uint8, uint16 (default: the input's; float data\n"
        "                    written to PNG/JPEG/PGM/PPM defaults to uint8). Integers are\n"
        "                    rounded to nearest (ties to even) and saturated.\n"
        "  --threads N       CPU threads (default 0: all)\n"
        "  --quality Q       JPEG quality 1..100 (default 95)\n"
        "  --time            print `time_ms: <median> (n=<N>)` on standard error: the time of\n"
        "                    the convolution alone (no file I/O, no planning)\n"
        "  --repeat N        run the convolution N times for --time (default 1)\n"
        "  --force           allow OUTPUT to be the input file\n"
        "  -h, --help        this text;   --version   the version\n"
        "\n"
        "The output is written to a temporary file renamed over OUTPUT when complete: a\n"
        "failed run leaves any old OUTPUT untouched.\n"
        "\n"
        "Exit codes: 0 success; 1 bad input or usage (options, unreadable or malformed\n"
        "files, bad filters or origins, unsupported combinations); 2 resource or device\n"
        "failure (out of memory, CUDA error, writing the output failed).\n"
        "\n"
        "Examples:\n"
        "  convolve photo.jpg blurred.png --filter gaussian:2\n"
        "  convolve scan.png edges.png --filter sobel-x --mode nearest\n"
        "  convolve signal.npy out.npy --weights taps.txt --mode wrap --correlate\n"
        "  convolve volume.npy out.npy --weights k.npy --mode constant --cval -1 --origin=-1,0,1\n"
        "  convolve big.npy out.npy --filter box:3 --backend cuda --time --repeat 20\n"
        "  convolve demo\n",
        f);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return cli_fail(CLI_BAD_INPUT, "no arguments; usage: convolve INPUT OUTPUT (--weights "
                        "FILE | --filter NAME[:ARGS]) [options] (see convolve --help)");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "info"))
        return cli_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "demo"))
        return cli_demo(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return convolve_bench_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "help")) {
        cli_usage(stdout);
        return CLI_OK;
    }
    return cli_run(argc, argv);
}
