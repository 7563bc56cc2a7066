/*
 * convolve_cli.h - the `convolve` program's commands: the arguments of
 * `convolve INPUT OUTPUT` and its description (tools/cli_spec.c, in the tools
 * library, so that the documents generator and other programs can reuse the
 * option rows), and the subcommands (tools/cli_run.c, tools/cli_info.c,
 * tools/bench.c).
 */
#ifndef CONVOLVE_TOOLS_CONVOLVE_CLI_H
#define CONVOLVE_TOOLS_CONVOLVE_CLI_H

#include "cli.h"

/* What the options and positional arguments of `convolve INPUT OUTPUT` set. */
typedef struct cli_run_args {
    const char *input, *output;  /* the positional arguments, once parsed */
    int npos;
    const char *weights, *filter;
    convolve_options opt;
    int n_origin;
    long origin[CONVOLVE_MAX_DIMS];
    int have_dtype;
    convolve_dtype out_dtype;
    int quality;
    int time;
    long repeat;
    int force;
    const char *wisdom;
} cli_run_args;

/* The defaults: no files, library option defaults, --repeat 1. */
void cli_run_args_init(cli_run_args *a);

/* `convolve INPUT OUTPUT [options]`, and the other commands of the program,
 * described for help texts and the man page. */
extern const cli_command cli_run_command;
extern const cli_command cli_info_command;
extern const cli_command cli_demo_command;

/* The option groups of `convolve INPUT OUTPUT`: the filter (--weights,
 * --filter), then everything else; their apply functions take a
 * cli_run_args. A program that takes the same options puts these groups in
 * its own command (copied at run time) and cli_run_args first in its
 * argument struct. */
extern const cli_option_group cli_run_groups[];
extern const size_t cli_run_group_count;

/* The words accepted in place of INPUT: "info", "demo", "bench", "help". */
extern const char *const cli_subcommands[];
extern const size_t cli_subcommand_count;

/* `convolve INPUT OUTPUT [options]`: argv[0] is the program name. */
int cli_run(int argc, char **argv);
/* `convolve info`. */
int cli_info(int argc, char **argv);
/* `convolve demo [OUTPUT] [options]`: argv[0] is "demo". */
int cli_demo(int argc, char **argv);

#endif
