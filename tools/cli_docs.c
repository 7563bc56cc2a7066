/*
 * cli_docs.c - documents made from the commands' tables (cli.h): the options
 * and named-filter tables of docs/cli.md (Markdown), the man page (troff)
 * and the bash completion script.
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
static const char *dims_list(unsigned dims)
{
    static char text[32];
    size_t n = 0;
    text[0] = '\0';
    for (int d = 1; d <= CONVOLVE_MAX_DIMS; d++)
        if (dims >> (d - 1) & 1)
            n += (size_t)snprintf(text + n, sizeof text - n, "%s%d-D", n ? ", " : "", d);
    return text;
}

void cli_markdown_filters(FILE *f)
{
    fputs("| Filter | Dimensions | What it is |\n|--------|------------|------------|\n", f);
    convolve_named_filter_info nf;
    for (size_t i = 0; convolve_named_filter_get(i, &nf) == CONVOLVE_OK; i++) {
        fprintf(f, "| `%s%s%s` | ", nf.name, nf.argument ? ":" : "",
                nf.argument ? nf.argument : "");
        fprintf(f, "%s | ", dims_list(nf.dims));
        md_cell(f, nf.summary);
        fputs(" |\n", f);
    }
}

/* ---- man page ------------------------------------------------------------------- */

/* Writes s as troff text: '-' and '\' escaped, `code` in bold, a leading
 * '.' or '\'' guarded, line breaks kept when verbatim (else spaces). */
static void roff(FILE *f, const char *s, int verbatim)
{
    int code = 0, bol = 1;
    for (; *s; s++) {
        if (*s == '`') { /* \% keeps a code word from being hyphenated */
            fputs(code ? "\\fR" : "\\fB\\%", f);
            code = !code;
            continue;
        }
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", f);
        bol = 0;
        switch (*s) {
        case '-': fputs("\\-", f); break;
        case '\\': fputs("\\e", f); break;
        case '\n':
            fputc(verbatim ? '\n' : ' ', f);
            bol = verbatim;
            break;
        default: fputc(*s, f);
        }
    }
    if (code)
        fputs("\\fR", f);
}

/* A section heading in upper case: .SH TITLE, or .SH "TWO WORDS". */
static void roff_section(FILE *f, const char *title)
{
    const char *quote = strchr(title, ' ') ? "\"" : "";
    fprintf(f, ".SH %s", quote);
    for (const char *p = title; *p; p++)
        fputc(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p, f);
    fprintf(f, "%s\n", quote);
}

static void roff_texts(FILE *f, const cli_text *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (t[i].title)
            roff_section(f, t[i].title);
        else
            fputs(".PP\n", f);
        if (t[i].note) {
            char note[256];
            snprintf(note, sizeof note, "%s", t[i].note);
            note[0] = note[0] >= 'a' && note[0] <= 'z' ? note[0] - 'a' + 'A' : note[0];
            roff(f, note, 0);
            fputs(".\n.PP\n", f);
        }
        fputs(t[i].verbatim ? ".nf\n" : "", f);
        roff(f, t[i].text, t[i].verbatim);
        fputs(t[i].verbatim ? ".fi\n" : "\n", f);
    }
}

/* The options, each a tagged paragraph; titled groups as subsections. */
static void roff_options(FILE *f, const cli_command *cmd)
{
    for (size_t g = 0; g < cmd->ngroups; g++) {
        const cli_option_group *grp = &cmd->groups[g];
        if (grp->title) {
            fputs(".SS \"", f);
            roff(f, grp->title, 0);
            if (grp->note) {
                fputs(" (", f);
                roff(f, grp->note, 0);
                fputc(')', f);
            }
            fputs("\"\n", f);
        }
        for (size_t k = 0; k < grp->count; k++) {
            const cli_option *o = &grp->options[k];
            fputs(".TP\n", f);
            if (o->short_name)
                fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
            fputs("\\fB", f);
            roff(f, "--", 0);
            roff(f, o->name, 0);
            fputs("\\fR", f);
            if (o->value_name) {
                fputs(" \\fI", f);
                roff(f, o->value_name, 0);
                fputs("\\fR", f);
            }
            fputc('\n', f);
            roff(f, o->doc ? o->doc : o->help, 0);
            fputc('\n', f);
        }
    }
}

static void roff_synopsis(FILE *f, const char *synopsis)
{
    for (const char *s = synopsis; *s;) {
        size_t len = strcspn(s, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)len, s);
        roff(f, line, 0);
        fputs("\n.br\n", f);
        s += len + (s[len] == '\n');
    }
}

void cli_man_page(const cli_command *cmd, const cli_command *const *extra, size_t nextra, FILE *f)
{
    fputs(".\\\" Made by convolve_doc man from the option tables (tools/); do not edit.\n", f);
    fprintf(f, ".TH CONVOLVE 1 \"\" \"convolve %s\" \"User Commands\"\n",
            convolve_version_string());
    fputs(".SH NAME\n", f);
    roff(f, cmd->program, 0);
    fputs(" \\- ", f);
    roff(f, cmd->summary, 0);
    fputs("\n.SH SYNOPSIS\n.nh\n.ad l\n", f);
    roff_synopsis(f, cmd->synopsis);
    fputs(".ad\n.hy\n.SH DESCRIPTION\n", f);
    roff(f, cmd->description, 0);
    fputc('\n', f);
    roff_texts(f, cmd->before, cmd->nbefore);
    fputs(".SH OPTIONS\n", f);
    roff_options(f, cmd);
    fputs(".SH \"NAMED FILTERS\"\n", f);
    convolve_named_filter_info nf;
    for (size_t i = 0; convolve_named_filter_get(i, &nf) == CONVOLVE_OK; i++) {
        fputs(".TP\n\\fB", f);
        roff(f, nf.name, 0);
        fputs("\\fR", f);
        if (nf.argument)
            fprintf(f, ":\\fI%s\\fR", nf.argument);
        fputc('\n', f);
        roff(f, nf.summary, 0);
        fputs(" (", f);
        roff(f, dims_list(nf.dims), 0);
        fputs(")\n", f);
    }
    roff_texts(f, cmd->after, cmd->nafter);
    fputs(".SH COMMANDS\n", f);
    for (size_t i = 0; i < nextra; i++) {
        const cli_command *x = extra[i];
        fputs(".SS \"", f);
        roff(f, x->synopsis, 0);
        fputs("\"\n", f);
        roff(f, x->description, 0);
        fputc('\n', f);
        if (x->ngroups) {
            fputs(".PP\nOptions:\n", f);
            roff_options(f, x);
        }
        for (size_t k = 0; k < x->nafter; k++) {
            fputs(".PP\n", f);
            if (x->after[k].title) {
                roff(f, x->after[k].title, 0);
                fputs(": ", f);
            }
            roff(f, x->after[k].text, x->after[k].verbatim);
            fputc('\n', f);
        }
    }
    fputs(".SH \"SEE ALSO\"\n"
          "The library's header \\fBconvolve.h\\fR; docs/cli.md, docs/semantics.md and "
          "docs/errors.md in the source tree.\n",
          f);
}

/* ---- bash completion ------------------------------------------------------------ */

/* The words of o for compgen: a spec "box:R" completes as "box:". */
static void bash_words(FILE *f, const cli_option *o)
{
    for (size_t i = 0; o->words(i); i++) {
        const char *w = o->words(i), *colon = strchr(w, ':');
        fprintf(f, "%s%.*s", i ? " " : "", colon ? (int)(colon - w + 1) : (int)strlen(w), w);
    }
}

/* "--a --b -h" */
static void bash_option_list(FILE *f, const cli_command *cmd)
{
    const char *sep = "";
    for (size_t g = 0; g < cmd->ngroups; g++)
        for (size_t k = 0; k < cmd->groups[g].count; k++) {
            const cli_option *o = &cmd->groups[g].options[k];
            fprintf(f, "%s--%s", sep, o->name);
            if (o->short_name)
                fprintf(f, " -%c", o->short_name);
            sep = " ";
        }
}

/* 1 if some word of o is a spec with an argument ("box:R"). */
static int has_spec_words(const cli_option *o)
{
    for (size_t i = 0; o->words && o->words(i); i++)
        if (strchr(o->words(i), ':'))
            return 1;
    return 0;
}

/* The completion of cmd's words after its name: the value of the option
 * before the cursor (files, words, or nothing for a value to type), else its
 * options (for "-..."), else files when it takes positional arguments. */
static void bash_command(FILE *f, const cli_command *cmd, const char *indent)
{
    const char *sep = "";
    fprintf(f, "%scase $prev in\n%s", indent, indent);
    for (size_t g = 0; g < cmd->ngroups; g++) /* values to type: one arm */
        for (size_t k = 0; k < cmd->groups[g].count; k++) {
            const cli_option *o = &cmd->groups[g].options[k];
            if (o->value_name && o->complete == CLI_COMPLETE_NONE) {
                fprintf(f, "%s--%s", sep, o->name);
                sep = "|";
            }
        }
    fprintf(f, "%s)\n%s    return ;;\n", *sep ? "" : "--", indent);
    for (size_t g = 0; g < cmd->ngroups; g++)
        for (size_t k = 0; k < cmd->groups[g].count; k++) {
            const cli_option *o = &cmd->groups[g].options[k];
            if (!o->value_name || o->complete == CLI_COMPLETE_NONE)
                continue;
            fprintf(f, "%s--%s)\n%s    COMPREPLY=($(compgen ", indent, o->name, indent);
            if (o->complete == CLI_COMPLETE_WORDS && o->words) {
                fputs("-W \"", f);
                bash_words(f, o);
                fputs("\"", f);
            } else if (o->complete == CLI_COMPLETE_DIR) {
                fputs("-d", f);
            } else {
                fputs("-f", f);
            }
            fputs(" -- \"$cur\"))\n", f);
            if (has_spec_words(o)) /* "box:" waits for its argument */
                fprintf(f,
                        "%s    [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *: ]] && "
                        "compopt -o nospace\n",
                        indent);
            fprintf(f, "%s    return ;;\n", indent);
        }
    fprintf(f, "%sesac\n%sif [[ $cur == -* ]]; then\n%s    COMPREPLY=($(compgen -W \"", indent,
            indent, indent);
    bash_option_list(f, cmd);
    fprintf(f, "\" -- \"$cur\"))\n%s    return\n%sfi\n", indent, indent);
    if (cmd->positional)
        fprintf(f, "%sCOMPREPLY+=($(compgen -f -- \"$cur\"))\n", indent);
}

/* The last word of a program name: "bench" for "convolve bench". */
static const char *last_word(const char *program)
{
    const char *space = strrchr(program, ' ');
    return space ? space + 1 : program;
}

void cli_bash_completion(const cli_command *cmd, const char *const *subcommands,
                         size_t nsubcommands, const cli_command *const *extra, size_t nextra,
                         FILE *f)
{
    fprintf(f,
            "# bash completion for %s. Made by convolve_doc bash-completion from the option\n"
            "# tables (tools/); do not edit.\n\n_%s()\n{\n",
            cmd->program, cmd->program);
    fputs("    local cur=${COMP_WORDS[COMP_CWORD]} prev=\n"
          "    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
          "    # --opt=VALUE: bash splits the word at '='\n"
          "    if [[ $cur == = ]]; then\n"
          "        cur=\n"
          "    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then\n"
          "        prev=${COMP_WORDS[COMP_CWORD - 2]}\n"
          "    fi\n"
          "    COMPREPLY=()\n"
          "    case ${COMP_WORDS[1]} in\n",
          f);
    for (size_t i = 0; i < nextra; i++) {
        fprintf(f, "    %s)\n        if ((COMP_CWORD > 1)); then\n", last_word(extra[i]->program));
        bash_command(f, extra[i], "            ");
        fputs("            return\n        fi ;;\n", f);
    }
    fputs("    esac\n", f);
    bash_command(f, cmd, "    ");
    fputs("    if ((COMP_CWORD == 1)); then\n        COMPREPLY+=($(compgen -W \"", f);
    for (size_t i = 0; i < nsubcommands; i++)
        fprintf(f, "%s%s", i ? " " : "", subcommands[i]);
    fprintf(f, "\" -- \"$cur\"))\n    fi\n}\ncomplete -o filenames -F _%s %s\n", cmd->program,
            cmd->program);
}
