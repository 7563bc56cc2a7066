/*
 * convolve_doc.c - writes the documents made from the `convolve` program's
 * option tables to standard output (not installed; the tests and the build
 * run it):
 *   convolve_doc markdown-options        docs/cli.md's options of `convolve INPUT OUTPUT`
 *   convolve_doc markdown-bench-options  docs/cli.md's options of `convolve bench`
 *   convolve_doc markdown-filters        docs/cli.md's table of named filters
 *   convolve_doc man                     the man page convolve.1
 *   convolve_doc bash-completion         the bash completion script
 */
#include "bench.h"
#include "convolve_cli.h"

#include <string.h>

/* The subcommands the man page describes after `convolve INPUT OUTPUT`. */
static const cli_command *const man_commands[] = {&cli_info_command, &cli_demo_command,
                                                  &cli_bench_command};
/* The subcommands that complete their own way (demo takes the main options). */
static const cli_command *const completed_commands[] = {&cli_bench_command, &cli_info_command};

int main(int argc, char **argv)
{
    const char *what = argc == 2 ? argv[1] : "";
    if (!strcmp(what, "markdown-options"))
        cli_markdown_options(&cli_run_command, stdout);
    else if (!strcmp(what, "markdown-bench-options"))
        cli_markdown_options(&cli_bench_command, stdout);
    else if (!strcmp(what, "markdown-filters"))
        cli_markdown_filters(stdout);
    else if (!strcmp(what, "man"))
        cli_man_page(&cli_run_command, man_commands, 3, stdout);
    else if (!strcmp(what, "bash-completion"))
        cli_bash_completion(&cli_run_command, cli_subcommands, cli_subcommand_count,
                            completed_commands, 2, stdout);
    else
        return cli_error("convolve_doc", CLI_BAD_INPUT,
                         "give one of markdown-options, "
                         "markdown-bench-options, markdown-filters, man, bash-completion");
    return fflush(stdout) == 0 ? CLI_OK : CLI_RESOURCE;
}
