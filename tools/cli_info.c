/*
 * cli_info.c - `convolve info` (version, backends, strategies, the GPU) and
 * `convolve demo` (blurs the bundled photo with gaussian:2).
 */
#include "convolve_cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CONVOLVE_DATA_DIR
#define CONVOLVE_DATA_DIR ""
#endif
#ifndef CONVOLVE_INSTALL_DATA_DIR
#define CONVOLVE_INSTALL_DATA_DIR ""
#endif

#define DEMO_PHOTO "grace_hopper.jpg"
#define DEMO_OUTPUT "grace_hopper_blurred.png"
#define DEMO_FILTER "gaussian:2"

int cli_info(int argc, char **argv)
{
    if (argc > 1)
        return cli_fail(CLI_BAD_INPUT, "info takes no arguments (got '%s')", argv[1]);
    printf("convolve %s (library %s)\n", CONVOLVE_VERSION_STRING, convolve_version_string());
    printf("backends: cpu (built), cuda (%s)\n",
           convolve_backend_built(CONVOLVE_BACKEND_CUDA) ? "built" : "not built");
    printf("strategies:\n");
    for (size_t i = 0, n = convolve_strategy_count(); i < n; i++) {
        convolve_strategy_info s;
        if (convolve_strategy_get(i, &s) != CONVOLVE_OK)
            continue;
        char dims[16] = "";
        for (int d = 1; d <= 3; d++)
            if (s.dims >> (d - 1) & 1) {
                size_t len = strlen(dims);
                snprintf(dims + len, sizeof dims - len, "%s%d-D", len ? "," : "", d);
            }
        printf("  %-20s %-5s %-12s %s\n", s.name, convolve_backend_name(s.backend), dims,
               s.summary ? s.summary : "");
    }
    convolve_context *ctx = NULL;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return cli_fail(CLI_RESOURCE, "out of memory");
    /* the current device, then every device of the host */
    convolve_device_info dev;
    int count = 0;
    convolve_status st = convolve_device_query(ctx, &dev);
    if (st == CONVOLVE_OK)
        st = convolve_device_count(ctx, &count);
    if (st != CONVOLVE_OK) {
        int rc = cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
        convolve_context_free(ctx);
        return rc;
    }
    if (dev.available)
        printf("gpu: %s, %.1f GiB, compute capability %d.%d, %d multiprocessors "
               "(%d device%s)\n",
               dev.name, (double)dev.total_memory / (1024.0 * 1024 * 1024), dev.compute_major,
               dev.compute_minor, dev.multiprocessors, dev.device_count,
               dev.device_count == 1 ? "" : "s");
    else
        printf("gpu: none (%s); --backend auto runs on the CPU\n",
               dev.reason[0] ? dev.reason : "no reason given");
    printf("devices: %d\n", count);
    for (int i = 0; i < count; i++) {
        convolve_device_info d;
        if ((st = convolve_device_query_index(ctx, i, &d)) != CONVOLVE_OK) {
            printf("  %d: cannot be queried (%s)\n", i, convolve_last_error(ctx));
            continue;
        }
        if (d.available)
            printf("  %d: %s, %.1f GiB, compute capability %d.%d, %d multiprocessors\n", i, d.name,
                   (double)d.total_memory / (1024.0 * 1024 * 1024), d.compute_major,
                   d.compute_minor, d.multiprocessors);
        else
            printf("  %d: not usable (%s)\n", i, d.reason[0] ? d.reason : "no reason given");
    }
    convolve_context_free(ctx);
    return CLI_OK;
}

/* Looks for the demo photo; returns a malloc'd path, or NULL. */
static char *find_photo(char *tried, size_t tried_size)
{
    const char *env = getenv("CONVOLVE_DATA_DIR");
    const char *dirs[3] = {env, CONVOLVE_DATA_DIR, CONVOLVE_INSTALL_DATA_DIR};
    tried[0] = '\0';
    for (int i = 0; i < 3; i++) {
        if (!dirs[i] || !*dirs[i])
            continue;
        size_t len = strlen(dirs[i]) + sizeof DEMO_PHOTO + 1;
        char *p = malloc(len);
        if (!p)
            return NULL;
        snprintf(p, len, "%s/%s", dirs[i], DEMO_PHOTO);
        if (access(p, R_OK) == 0)
            return p;
        size_t t = strlen(tried);
        snprintf(tried + t, tried_size - t, "%s%s", t ? ", " : "", dirs[i]);
        free(p);
    }
    return NULL;
}

int cli_demo(int argc, char **argv)
{
    /* demo [OUTPUT] [options]: options go to the convolution as given */
    const char *output = DEMO_OUTPUT;
    int first_opt = 1;
    if (argc > 1 && argv[1][0] != '-') {
        output = argv[1];
        first_opt = 2;
    }
    for (int i = first_opt; i < argc; i++)
        if (!strncmp(argv[i], "--weights", 9) || !strncmp(argv[i], "--filter", 8))
            return cli_fail(CLI_BAD_INPUT, "demo always uses --filter %s", DEMO_FILTER);
        else if (!strncmp(argv[i], "--output-dir", 12) || !strncmp(argv[i], "--inputs-from", 13))
            return cli_fail(CLI_BAD_INPUT, "demo writes one file: give its name, not %.*s",
                            argv[i][2] == 'o' ? 12 : 13, argv[i]);
    char tried[1024];
    char *photo = find_photo(tried, sizeof tried);
    if (!photo)
        return cli_fail(CLI_BAD_INPUT,
                        "cannot find the demo photo %s (looked in: %s); set "
                        "CONVOLVE_DATA_DIR to the folder that holds it",
                        DEMO_PHOTO, tried[0] ? tried : "nowhere");
    int n = 0;
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args) {
        free(photo);
        return cli_fail(CLI_RESOURCE, "out of memory");
    }
    args[n++] = "convolve";
    args[n++] = photo;
    args[n++] = (char *)output;
    args[n++] = "--filter";
    args[n++] = DEMO_FILTER;
    for (int i = first_opt; i < argc; i++)
        args[n++] = argv[i];
    int rc = cli_run(n, args);
    if (rc == CLI_OK)
        printf("convolve demo: blurred %s with --filter %s; wrote %s\n", photo, DEMO_FILTER,
               output);
    free(args);
    free(photo);
    return rc;
}
