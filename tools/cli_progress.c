/*
 * cli_progress.c - what `convolve INPUT OUTPUT` does while the library
 * works: the progress callback (convolve_options.progress) that shows
 * progress on standard error (on a terminal, after about a second; every
 * update with --progress; never with --quiet), gives back the pages of the
 * mapped files that are done (cli_mapped.c), and cancels the run after
 * Ctrl-C (cli_signals.c).
 */
#include "convolve_cli.h"

#include <string.h>
#include <unistd.h>

/* Seconds before a terminal shows progress, and between two redraws. */
#define SHOW_AFTER_S 1.0
#define REDRAW_EVERY_S 0.2

void cli_progress_init(cli_progress *p, int quiet, int forced, cli_mapped_in *in,
                       cli_mapped_out *out)
{
    memset(p, 0, sizeof *p);
    p->show = quiet ? 0 : forced ? 2 : isatty(STDERR_FILENO) ? 1 : 0;
    p->in = in;
    p->out = out;
}

/* "1.2 GB/s", "340 MB/s" */
static void format_rate(char *buf, size_t size, double bytes_per_s)
{
    if (bytes_per_s >= 1e9)
        snprintf(buf, size, "%.2f GB/s", bytes_per_s / 1e9);
    else
        snprintf(buf, size, "%.0f MB/s", bytes_per_s / 1e6);
}

/* "12 s", "3 min 20 s", "2 h 05 min" */
static void format_duration(char *buf, size_t size, double s)
{
    if (s < 60)
        snprintf(buf, size, "%.0f s", s);
    else if (s < 3600)
        snprintf(buf, size, "%d min %02d s", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, size, "%d h %02d min", (int)(s / 3600), (int)(s / 60) % 60);
}

static void draw(cli_progress *p, const convolve_progress *pr)
{
    double frac = pr->rows_total ? (double)pr->rows_done / (double)pr->rows_total : 1.0;
    char rate[32] = "", left[32] = "";
    if (pr->elapsed_s > 0 && pr->bytes_done)
        format_rate(rate, sizeof rate, (double)pr->bytes_done / pr->elapsed_s);
    if (frac > 0 && frac < 1)
        format_duration(left, sizeof left, pr->elapsed_s * (1 - frac) / frac);
    char line[160];
    snprintf(line, sizeof line, "convolve: %3.0f%% (%zu/%zu slabs)%s%s%s%s", 100 * frac,
             pr->slabs_done, pr->slabs_total, rate[0] ? ", " : "", rate, left[0] ? ", " : "",
             left[0] ? left : "");
    if (left[0])
        strncat(line, " left", sizeof line - strlen(line) - 1);
    if (p->show == 1)
        fprintf(stderr, "\r%-72s", line);
    else
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
    p->drawn = 1;
    p->last_draw_s = pr->elapsed_s;
}

int cli_progress_callback(void *user, const convolve_progress *pr)
{
    cli_progress *p = user;
    p->calls++;
    cli_mapped_release(p->in, p->out, pr->rows_done, pr->rows_total);
    const int last = pr->slabs_done == pr->slabs_total;
    if (p->show == 2)
        draw(p, pr);
    else if (p->show == 1 && pr->elapsed_s >= SHOW_AFTER_S &&
             (last || !p->drawn || pr->elapsed_s - p->last_draw_s >= REDRAW_EVERY_S))
        draw(p, pr);
    return cli_interrupted() != 0 || cli_mapped_failed();
}

void cli_progress_finish(cli_progress *p)
{
    if (p->show == 1 && p->drawn)
        fputc('\n', stderr);
    p->drawn = 0;
}
