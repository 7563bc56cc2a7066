/*
 * convolve_doc.c - writes the documents made from the `convolve` program's
 * option tables to standard output (not installed; the tests and the build
 * run it):
 *   convolve_doc markdown-options        docs/cli.md's options of `convolve INPUT OUTPUT`
 *   convolve_doc markdown-bench-options  docs/cli.md's options of `convolve bench`
 *   convolve_doc markdown-filters        docs/cli.md's table of named filters
 */
#include "bench.h"
#include "convolve_cli.h"

#include <string.h>

int main(int argc, char **argv)
{
    const char *what = argc == 2 ? argv[1] : "";
    if (!strcmp(what, "markdown-options"))
        cli_markdown_options(&cli_run_command, stdout);
    else if (!strcmp(what, "markdown-bench-options"))
        cli_markdown_options(&cli_bench_command, stdout);
    else if (!strcmp(what, "markdown-filters"))
        cli_markdown_filters(stdout);
    else
        return cli_error("convolve_doc", CLI_BAD_INPUT, "give one of markdown-options, "
                         "markdown-bench-options, markdown-filters");
    return fflush(stdout) == 0 ? CLI_OK : CLI_RESOURCE;
}
