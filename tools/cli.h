/*
 * cli.h - the tools library (libconvolve_tools.a): what every command-line
 * program of convolve shares. Exit codes and the one-line error printer;
 * strict number parsing; and the option machinery: a command is described
 * once, as tables of options (name, value, help, longer documentation, the
 * function that applies it, the words its value may take) plus the prose
 * around them, and from that one description come the parser, the --help
 * text, the options tables of docs/cli.md, the man page and the bash
 * completion. Adding an option is one table row and its apply function.
 * Uses the public API (convolve.h) only.
 */
#ifndef CONVOLVE_TOOLS_CLI_H
#define CONVOLVE_TOOLS_CLI_H

#include "convolve.h"

#include <stddef.h>
#include <stdio.h>

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* ---- exit codes and messages ------------------------------------------------ */

/* Exit codes (documented in --help, docs/cli.md and the man page). */
enum {
    CLI_OK = 0,
    CLI_BAD_INPUT = 1,    /* bad usage, options, files, filters, unsupported combinations */
    CLI_RESOURCE = 2,     /* out of memory, device failure, writing the output failed */
    CLI_INTERRUPTED = 130 /* SIGINT (Ctrl-C) cancelled the run: 128 + SIGINT */
};

/* Prints "PROGRAM: <message>" and a newline to standard error; returns code. */
int cli_error(const char *program, int code, const char *fmt, ...) CLI_PRINTF(3, 4);

/* cli_error for the `convolve` command: "convolve: <message>". */
int cli_fail(int code, const char *fmt, ...) CLI_PRINTF(2, 3);

/* The exit code for a failed library call (reading or planning; writing the
 * output maps IO to CLI_RESOURCE itself). */
int cli_exit_code(convolve_status st);

/* Parses all of s as a decimal long in [lo, hi]: 1 and *v set, or 0. */
int cli_parse_long(const char *s, long lo, long hi, long *v);
/* Parses all of s as a finite double: 1 and *v set, or 0. A number too
 * small for a double gives the nearest (subnormal or 0), as Python's float(). */
int cli_parse_finite(const char *s, double *v);

/* Seconds on the monotonic clock, for intervals. */
double cli_now_s(void);

/* ---- option tables ---------------------------------------------------------- */

/* What an option's apply function returns, besides CLI_OK and an exit code
 * (after it printed a message). */
enum {
    CLI_DONE = -1,     /* the option answered the command (--help, --version): exit 0 */
    CLI_BAD_VALUE = -2 /* the value is invalid: the parser says so ("bad value ...") */
};

/* Applies an option to the command's argument struct `target`; value is NULL
 * for a flag. Returns CLI_OK, CLI_DONE, CLI_BAD_VALUE or an exit code. */
typedef int (*cli_apply_fn)(void *target, const char *value);

/* The words an option's value may be, for completion and listings: the
 * index-th word, or NULL past the last. */
typedef const char *(*cli_words_fn)(size_t index);

/* What completes an option's value in a shell. */
typedef enum cli_complete {
    CLI_COMPLETE_NONE = 0, /* free text (a number, a list) */
    CLI_COMPLETE_FILE,     /* a file name */
    CLI_COMPLETE_DIR,      /* a folder name */
    CLI_COMPLETE_WORDS     /* one of words() */
} cli_complete;

/* Flags of an option. */
enum {
    CLI_HELP_LISTS_WORDS = 1 /* --help lists words() after the help text */
};

typedef struct cli_option {
    const char *name;       /* long name, without "--" */
    char short_name;        /* a one-letter alias ('h' for -h), or 0 */
    const char *value_name; /* "FILE", "M": takes a value; NULL: a flag */
    const char *help;       /* --help: plain text, wrapped when printed */
    const char *doc;        /* docs/cli.md and the man page: may use `code`; NULL: help */
    cli_apply_fn apply;
    cli_complete complete;
    cli_words_fn words; /* with CLI_COMPLETE_WORDS or CLI_HELP_LISTS_WORDS */
    unsigned flags;
} cli_option;

/* Options shown together under one title. */
typedef struct cli_option_group {
    const char *title; /* "Filter (exactly one)"; NULL: no title */
    const char *note;  /* printed after the title in --help, in parentheses; or NULL */
    const cli_option *options;
    size_t count;
} cli_option_group;

/* A block of prose in the usage text and the man page. */
typedef struct cli_text {
    const char *title; /* "Exit codes"; NULL: none */
    const char *note;  /* printed after the title in --help, in parentheses; or NULL */
    const char *text;  /* a paragraph (wrapped), or lines kept as they are */
    int verbatim;      /* 1: lines kept as they are */
} cli_text;

/* A command: its synopsis, prose and options. Each group's apply functions
 * get the same target; a program that adds groups to another command's keeps
 * that command's argument struct as the first member of its own. */
typedef struct cli_command {
    const char *program;     /* "convolve", "convolve bench": starts every message */
    const char *help_hint;   /* "convolve --help": where messages send the user */
    const char *synopsis;    /* usage lines, '\n' between them, each without "usage: " */
    const char *summary;     /* one line: what the command does (man page NAME) */
    const char *description; /* a paragraph after the synopsis; or NULL */
    const cli_text *before;  /* prose before the options */
    size_t nbefore;
    const cli_option_group *groups;
    size_t ngroups;
    const cli_text *after; /* prose after the options */
    size_t nafter;
    int help_column; /* where --help starts the options' help text */
    /* takes one positional argument; NULL: the command takes none */
    int (*positional)(void *target, const char *arg);
} cli_command;

/* Parses argv[1..argc-1] (GNU style: --name VALUE, --name=VALUE, -x for a
 * short alias; options and positional arguments in any order; "--" ends the
 * options; "-" is positional; a value may start with '-'), applying each
 * option to target in order. An option with a value given twice is an
 * error (a flag given twice is the flag). Returns CLI_OK, CLI_DONE (answered: exit 0),
 * or an exit code after printing one line. */
int cli_parse(const cli_command *cmd, int argc, char **argv, void *target);

/* Writes the usage text (--help). */
void cli_print_help(const cli_command *cmd, FILE *f);

/* ---- documents made from the tables (cli_docs.c) ----------------------------- */

/* The options as Markdown: for each group a "### title (note)" heading (when
 * titled) and a table | Option | Meaning |. */
void cli_markdown_options(const cli_command *cmd, FILE *f);
/* The named filters (convolve_named_filter_get) as a Markdown table. */
void cli_markdown_filters(FILE *f);

/* A man page (troff, man macros, section 1) for cmd, with the `extra`
 * commands (subcommands such as `convolve bench`) described after it. */
void cli_man_page(const cli_command *cmd, const cli_command *const *extra, size_t nextra, FILE *f);

/* A bash completion script for cmd: its options, and the values each option
 * completes; `subcommands` complete as the first argument; each `extra`
 * command completes its own options after its name (the last word of its
 * program, e.g. "bench"). */
void cli_bash_completion(const cli_command *cmd, const char *const *subcommands,
                         size_t nsubcommands, const cli_command *const *extra, size_t nextra,
                         FILE *f);

/* Word lists from the library, for cli_option.words. */
const char *cli_words_mode(size_t i);
const char *cli_words_backend(size_t i);
const char *cli_words_dtype(size_t i);
const char *cli_words_strategy(size_t i);     /* "auto", then each distinct name */
const char *cli_words_named_filter(size_t i); /* "box:R", "identity", ... */
const char *cli_words_extension(size_t i);    /* "npy", "png", ...: the library's */

#endif
