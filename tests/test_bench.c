/*
 * test_bench.c - `convolve bench` (tools/bench.c, linked from the tools
 * library, so no CLI is needed): on the CPU backend its table and its JSON
 * come out, with the chapter's reduction table computed; bad options are
 * refused; with a usable GPU a short CUDA run over every 2-D strategy
 * completes.
 */
#include "bench.h"
#include "harness.h"

#include <unistd.h>

/* Runs cli_bench_main on a NULL-terminated argument list with stdout
 * captured into buf; returns its exit code. */
static int run_captured(const char *const *args, char *buf, size_t size)
{
    char *argv[32];
    int argc = 0;
    for (; args[argc]; argc++)
        argv[argc] = (char *)args[argc];
    argv[argc] = NULL;
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(STDOUT_FILENO);
    if (!tmp || saved < 0)
        return -1;
    dup2(fileno(tmp), STDOUT_FILENO);
    int rc = cli_bench_main(argc, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, size - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
    return rc;
}

int main(void)
{
    static char out[1 << 16];
    const char *json[] = {"bench",      "--backend", "cpu",    "--shape", "64x64",  "--radius", "1",
                          "--strategy", "reference", "--runs", "20",      "--json", NULL};
    int rc = run_captured(json, out, sizeof out);
    CHECK(rc == 0, "json run exit %d:\n%s", rc, out);
    CHECK(strstr(out, "\"strategy\": \"reference\"") && strstr(out, "\"median_ms\": ") &&
              strstr(out, "\"supported\": true") && strstr(out, "\"tiled_reduction\""),
          "json output lacks fields:\n%s", out);
    CHECK(strstr(out, "{\"mask\": 5, \"tile\": 8, \"ratio\": 11.11}") &&
              strstr(out, "{\"mask\": 9, \"tile\": 64, \"ratio\": 64}"),
          "reduction table wrong:\n%s", out);
    printf("%s", out);

    const char *text[] = {"bench",  "--backend=cpu", "--shape", "300", "--radius",
                          "0..2,5", "--runs",        "20",      NULL};
    rc = run_captured(text, out, sizeof out);
    CHECK(rc == 0, "1-D text run exit %d:\n%s", rc, out);
    CHECK(strstr(out, "reference") && strstr(out, "median ms") && strstr(out, "OUT_TILE"),
          "text output lacks its table:\n%s", out);
    printf("%s", out);

    const char *bad[][8] = {
        {"bench", "--runs", "5", NULL},        {"bench", "--shape", "0x4", NULL},
        {"bench", "--shape", "2x3x4x5", NULL}, {"bench", "--radius", "3..1", NULL},
        {"bench", "--dtype", "int7", NULL},    {"bench", "--frobnicate", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = run_captured(bad[i], out, sizeof out);
        CHECK(rc == 1, "'%s %s' should be refused (exit 1: usage), got %d", bad[i][1],
              bad[i][2] ? bad[i][2] : "", rc);
    }

    convolve_context *ctx;
    convolve_device_info dev;
    convolve_context_create(&ctx);
    convolve_device_query(ctx, &dev);
    convolve_context_free(ctx);
    if (convolve_backend_built(CONVOLVE_BACKEND_CUDA) && dev.available) {
        const char *gpu[] = {"bench",  "--shape", "256x256", "--radius",
                             "1,2,16", "--runs",  "20",      NULL};
        rc = run_captured(gpu, out, sizeof out);
        CHECK(rc == 0, "CUDA run exit %d:\n%s", rc, out);
        CHECK(strstr(out, "tiled-in") && strstr(out, "cannot serve"),
              "CUDA run should list tiled-in and its refusal at r=16:\n%s", out);
        printf("%s", out);
    } else {
        printf("test_bench: no usable GPU (%s); the CUDA run is skipped\n",
               convolve_backend_built(CONVOLVE_BACKEND_CUDA) ? dev.reason : "built without CUDA");
    }
    return h_finish("test_bench");
}
