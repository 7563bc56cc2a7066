/*
 * cli.h - what the parts of the `convolve` command share: exit codes, the
 * error printer, and the subcommands (tools/convolve.c dispatches to them).
 */
#ifndef CONVOLVE_TOOLS_CLI_H
#define CONVOLVE_TOOLS_CLI_H

#include "convolve.h"

#include <stdio.h>

/* Exit codes (documented in --help and docs/cli.md). */
enum {
    CLI_OK = 0,
    CLI_BAD_INPUT = 1,  /* bad usage, options, files, filters, unsupported combinations */
    CLI_RESOURCE = 2    /* out of memory, device failure, writing the output failed */
};

/* Prints "convolve: <message>" and a newline to standard error; returns code. */
int cli_fail(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The exit code for a failed library call (reading or planning; writing the
 * output maps IO to CLI_RESOURCE itself). */
int cli_exit_code(convolve_status st);

/* The usage text. */
void cli_usage(FILE *f);

/* `convolve INPUT OUTPUT [options]`: argv[0] is the program name. */
int cli_run(int argc, char **argv);
/* `convolve info`. */
int cli_info(int argc, char **argv);
/* `convolve demo [OUTPUT] [options]`: argv[0] is "demo". */
int cli_demo(int argc, char **argv);

#endif
