/*
 * convolve.c - the `convolve` command's entry point: dispatches to the
 * subcommands (info, demo, bench, help) or to the convolution itself.
 */
#include "bench.h"
#include "convolve_cli.h"

#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return cli_fail(CLI_BAD_INPUT,
                        "no arguments; usage: convolve INPUT OUTPUT (--weights "
                        "FILE | --filter NAME[:ARGS]) [options] (see convolve --help)");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "info"))
        return cli_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "demo"))
        return cli_demo(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return cli_bench_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "help")) {
        cli_print_help(&cli_run_command, stdout);
        return CLI_OK;
    }
    return cli_run(argc, argv);
}
