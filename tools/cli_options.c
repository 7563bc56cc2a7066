/*
 * cli_options.c - the option machinery's parser and --help printer: both
 * walk a command's tables (cli.h), so an option exists, parses and is
 * explained from its one row.
 */
#include "cli.h"

#include <string.h>

#define HELP_WIDTH 80

/* Finds an option by long name; NULL if none. */
static const cli_option *find_option(const cli_command *cmd, const char *name, size_t len)
{
    for (size_t g = 0; g < cmd->ngroups; g++)
        for (size_t k = 0; k < cmd->groups[g].count; k++) {
            const cli_option *o = &cmd->groups[g].options[k];
            if (strlen(o->name) == len && !strncmp(o->name, name, len))
                return o;
        }
    return NULL;
}

static const cli_option *find_short(const cli_command *cmd, char c)
{
    for (size_t g = 0; g < cmd->ngroups; g++)
        for (size_t k = 0; k < cmd->groups[g].count; k++)
            if (cmd->groups[g].options[k].short_name == c)
                return &cmd->groups[g].options[k];
    return NULL;
}

/* Applies o with val; turns CLI_BAD_VALUE into the generic message. */
static int apply(const cli_command *cmd, const cli_option *o, const char *val, void *target)
{
    int rc = o->apply(target, val);
    if (rc == CLI_BAD_VALUE)
        return cli_error(cmd->program, CLI_BAD_INPUT, "bad value '%s' for --%s (see %s)", val,
                         o->name, cmd->help_hint);
    return rc;
}

/* Options with a value that one command line gave (a value option given
 * twice is refused: the second would silently replace the first). */
#define CLI_MAX_SEEN 64

int cli_parse(const cli_command *cmd, int argc, char **argv, void *target)
{
    int only_positional = 0;
    const cli_option *seen[CLI_MAX_SEEN];
    const char *seen_value[CLI_MAX_SEEN];
    size_t nseen = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_positional || arg[0] != '-' || !strcmp(arg, "-")) {
            int rc = cmd->positional ? cmd->positional(target, arg)
                                     : cli_error(cmd->program, CLI_BAD_INPUT,
                                                 "unexpected "
                                                 "argument '%s' (see %s)",
                                                 arg, cmd->help_hint);
            if (rc != CLI_OK)
                return rc;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_positional = 1;
            continue;
        }
        const cli_option *o;
        const char *val = NULL, *eq = NULL;
        if (arg[1] != '-') {
            o = arg[2] == '\0' ? find_short(cmd, arg[1]) : NULL;
            if (!o)
                return cli_error(cmd->program, CLI_BAD_INPUT,
                                 "unknown option '%s' (options "
                                 "are long: see %s)",
                                 arg, cmd->help_hint);
        } else {
            const char *name = arg + 2;
            eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            if (!(o = find_option(cmd, name, len)))
                return cli_error(cmd->program, CLI_BAD_INPUT, "unknown option '%.*s' (see %s)",
                                 (int)(len + 2), arg, cmd->help_hint);
        }
        if (o->value_name) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return cli_error(cmd->program, CLI_BAD_INPUT, "option '--%s' needs a value",
                                 o->name);
        } else if (eq) {
            return cli_error(cmd->program, CLI_BAD_INPUT, "option '--%s' takes no value", o->name);
        }
        if (o->value_name) {
            for (size_t k = 0; k < nseen; k++)
                if (seen[k] == o)
                    return cli_error(cmd->program, CLI_BAD_INPUT,
                                     "--%s is given twice ('%s', "
                                     "then '%s'); give it once",
                                     o->name, seen_value[k], val);
            if (nseen < CLI_MAX_SEEN) {
                seen[nseen] = o;
                seen_value[nseen++] = val;
            }
        }
        int rc = apply(cmd, o, val, target);
        if (rc != CLI_OK)
            return rc;
    }
    return CLI_OK;
}

/* ---- --help ---------------------------------------------------------------------- */

/* Writes text word by word from column *col, wrapping at HELP_WIDTH to
 * column indent; '\n' in text forces a break. */
static void wrap(FILE *f, const char *text, int *col, int indent)
{
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fprintf(f, "\n%*s", indent, "");
            *col = indent;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t len = strcspn(p, " \n");
        int fresh = *col == indent;
        if (!fresh && *col + 1 + (int)len > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            *col = indent;
            fresh = 1;
        }
        if (!fresh) {
            fputc(' ', f);
            (*col)++;
        }
        fwrite(p, 1, len, f);
        *col += (int)len;
        p += len;
    }
}

/* Appends the option's value words, two spaces apart, wrapping as wrap(). */
static void list_words(FILE *f, const cli_option *o, int *col, int indent)
{
    int gap = *col > indent ? 2 : 0;
    for (size_t i = 0; o->words(i); i++, gap = 2) {
        const char *w = o->words(i);
        int len = (int)strlen(w);
        if (*col + gap + len > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            *col = indent;
            gap = 0;
        }
        fprintf(f, "%*s%s", gap, "", w);
        *col += gap + len;
    }
}

static void print_option(FILE *f, const cli_option *o, int column)
{
    char label[96];
    int n = o->short_name ? snprintf(label, sizeof label, "-%c, ", o->short_name) : 0;
    snprintf(label + n, sizeof label - (size_t)n, "--%s%s%s", o->name, o->value_name ? " " : "",
             o->value_name ? o->value_name : "");
    fprintf(f, "  %s", label);
    int col = 2 + (int)strlen(label);
    if (col + 2 > column) { /* a long label: the help follows on its line, after wrap()'s
                               blank and this one */
        fputc(' ', f);
        col++;
    } else {
        fprintf(f, "%*s", column - col, "");
        col = column;
    }
    wrap(f, o->help, &col, column);
    if (o->flags & CLI_HELP_LISTS_WORDS && o->words)
        list_words(f, o, &col, column);
    fputc('\n', f);
}

static void print_text(FILE *f, const cli_text *t)
{
    fputc('\n', f);
    int col = 0;
    if (t->title)
        col = fprintf(f, "%s%s%s%s:", t->title, t->note ? " (" : "", t->note ? t->note : "",
                      t->note ? ")" : "");
    if (t->verbatim) {
        fputs(t->title ? "\n" : "", f);
        fputs(t->text, f);
        return;
    }
    wrap(f, t->text, &col, 0);
    fputc('\n', f);
}

void cli_print_help(const cli_command *cmd, FILE *f)
{
    const char *s = cmd->synopsis;
    for (int first = 1; *s; first = 0) {
        size_t len = strcspn(s, "\n");
        fprintf(f, "%s%.*s\n", first ? "usage: " : "       ", (int)len, s);
        s += len + (s[len] == '\n');
    }
    if (cmd->description) {
        int col = 0;
        fputc('\n', f);
        wrap(f, cmd->description, &col, 0);
        fputc('\n', f);
    }
    for (size_t i = 0; i < cmd->nbefore; i++)
        print_text(f, &cmd->before[i]);
    for (size_t g = 0; g < cmd->ngroups; g++) {
        const cli_option_group *grp = &cmd->groups[g];
        fputc('\n', f);
        if (grp->title)
            fprintf(f, "%s%s%s%s:\n", grp->title, grp->note ? " (" : "", grp->note ? grp->note : "",
                    grp->note ? ")" : "");
        for (size_t k = 0; k < grp->count; k++)
            print_option(f, &grp->options[k], cmd->help_column);
    }
    for (size_t i = 0; i < cmd->nafter; i++)
        print_text(f, &cmd->after[i]);
}
