/*
 * cli_docs.c - documents made from the commands' tables (cli.h): the options
 * and named-filter tables of docs/cli.md (Markdown).
 */
#include "cli.h"

#include <string.h>

/* Writes s into a Markdown table cell: '|' escaped, and '*' outside `code`;
 * line breaks as spaces. */
static void md_cell(FILE *f, const char *s)
{
    for (int code = 0; *s; s++) {
        code ^= *s == '`';
        if (*s == '|' || (*s == '*' && !code))
            fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
}

void cli_markdown_options(const cli_command *cmd, FILE *f)
{
    for (size_t g = 0; g < cmd->ngroups; g++) {
        const cli_option_group *grp = &cmd->groups[g];
        if (g)
            fputc('\n', f);
        if (grp->title)
            fprintf(f, "### %s%s%s%s\n\n", grp->title, grp->note ? " (" : "",
                    grp->note ? grp->note : "", grp->note ? ")" : "");
        fputs("| Option | Meaning |\n|--------|---------|\n", f);
        for (size_t k = 0; k < grp->count; k++) {
            const cli_option *o = &grp->options[k];
            fputs("| ", f);
            if (o->short_name)
                fprintf(f, "`-%c`, ", o->short_name);
            fputc('`', f);
            fprintf(f, "--%s%s", o->name, o->value_name ? " " : "");
            if (o->value_name)
                md_cell(f, o->value_name);
            fputs("` | ", f);
            md_cell(f, o->doc ? o->doc : o->help);
            fputs(" |\n", f);
        }
    }
}

/* "1-D, 2-D, 3-D" for a dims mask. */
static void dims_list(FILE *f, unsigned dims)
{
    for (int d = 1, first = 1; d <= CONVOLVE_MAX_DIMS; d++)
        if (dims >> (d - 1) & 1) {
            fprintf(f, "%s%d-D", first ? "" : ", ", d);
            first = 0;
        }
}

void cli_markdown_filters(FILE *f)
{
    fputs("| Filter | Dimensions | What it is |\n|--------|------------|------------|\n", f);
    convolve_named_filter_info nf;
    for (size_t i = 0; convolve_named_filter_get(i, &nf) == CONVOLVE_OK; i++) {
        fprintf(f, "| `%s%s%s` | ", nf.name, nf.argument ? ":" : "",
                nf.argument ? nf.argument : "");
        dims_list(f, nf.dims);
        fputs(" | ", f);
        md_cell(f, nf.summary);
        fputs(" |\n", f);
    }
}
