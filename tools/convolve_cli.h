/*
 * convolve_cli.h - the `convolve` program's commands: the arguments of
 * `convolve INPUT OUTPUT` and `convolve INPUT... --output-dir DIR` and their
 * description (tools/cli_spec.c, in the tools library, so that the documents
 * generator and other programs can reuse the option rows), the steps the
 * single-file and batch forms share (tools/cli_run.c), the batch form
 * (tools/cli_batch.c) and the subcommands (tools/cli_info.c, tools/bench.c).
 */
#ifndef CONVOLVE_TOOLS_CONVOLVE_CLI_H
#define CONVOLVE_TOOLS_CONVOLVE_CLI_H

#include "cli.h"

/* What the options and positional arguments of `convolve INPUT OUTPUT` and
 * `convolve INPUT... --output-dir DIR` set. */
typedef struct cli_run_args {
    const char *input, *output;  /* the single-file form's files, once checked */
    const char **pos;            /* the positional arguments, in order (malloc'd) */
    size_t npos, pos_cap;
    const char *weights, *filter;
    convolve_options opt;
    int n_origin;
    long origin[CONVOLVE_MAX_DIMS];
    int have_dtype;
    convolve_dtype out_dtype;
    int quality;
    int time;
    long repeat;
    int have_repeat;
    int force;
    const char *wisdom;
    /* many files (cli_batch.c) */
    const char *output_dir;      /* --output-dir: NULL for the single-file form */
    const char *suffix;          /* --suffix, or NULL */
    const char *format;          /* --format: an extension without the dot, or NULL */
    const char *inputs_from;     /* --inputs-from: a file of names, "-" for stdin */
    long jobs;                   /* --jobs: 0 for one per CPU */
    int have_jobs;
} cli_run_args;

/* The defaults: no files, library option defaults, --repeat 1. */
void cli_run_args_init(cli_run_args *a);
/* Frees what parsing allocated (the list of positional arguments). */
void cli_run_args_free(cli_run_args *a);

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

/* `convolve INPUT OUTPUT [options]` and `convolve INPUT... --output-dir DIR
 * [options]`: argv[0] is the program name. */
int cli_run(int argc, char **argv);

/* ---- what the single-file form and the batch share (tools/cli_run.c) ------------
 * Each function that can fail writes one line (without "convolve: ") into
 * msg[CLI_MSG_SIZE] and returns the exit code; CLI_OK on success. */
#define CLI_MSG_SIZE 4096

/* Weights read from a --weights file, before they meet an input. */
typedef struct cli_weights {
    const char *path;
    int text;                    /* a text file (may have fewer dimensions) */
    int ndim;
    size_t shape[CONVOLVE_MAX_DIMS];
    double *data;                /* malloc'd, C order */
} cli_weights;

/* Reads the --weights file (.npy by content or name, else text). */
int cli_weights_read(convolve_context *ctx, const char *path, cli_weights *w, char *msg);
void cli_weights_free(cli_weights *w);

/* The filter (--weights as read into w, or --filter) and the options (with
 * --origin spread over the axes) for an input of ndim dimensions. */
int cli_filter_for(convolve_context *ctx, const cli_run_args *a, const cli_weights *w, int ndim,
                   convolve_filter **f, convolve_options *o, char *msg);

/* The result's element type when written in format f from input type t. */
convolve_dtype cli_output_dtype(const cli_run_args *a, convolve_format f, convolve_dtype t);

/* Can format f, for file path, hold the input's layout with element type t? */
int cli_check_output(convolve_context *ctx, const char *path, convolve_format f,
                     const convolve_layout *in, convolve_dtype t, char *msg);

/* 1 if the two paths name the same existing file (or are the same string). */
int cli_same_file(const char *p, const char *q);

/* Writes into msg (CLI_MSG_SIZE bytes); returns code. */
int cli_msg(char *msg, int code, const char *fmt, ...) CLI_PRINTF(3, 4);

/* `convolve INPUT... --output-dir DIR`, once the options are parsed and
 * checked (tools/cli_batch.c). */
int cli_batch(cli_run_args *a);
/* `convolve info`. */
int cli_info(int argc, char **argv);
/* `convolve demo [OUTPUT] [options]`: argv[0] is "demo". */
int cli_demo(int argc, char **argv);

#endif
