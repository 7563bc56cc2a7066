/*
 * cli_progress.c - what `convolve INPUT OUTPUT` does while the library
 * works: the progress callback (convolve_options.progress) that shows
 * progress on standard error (on a terminal, after about a second; every
 * update with --progress; never with --quiet), gives back the pages of the
 * mapped files that are done (cli_mapped.c), and cancels the run after
 * Ctrl-C; and the SIGINT/SIGTERM/SIGHUP/SIGPIPE handling that makes Ctrl-C,
 * a closed terminal or a closed pipe leave no partial output file.
 */
#include "convolve_cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

/* Seconds before a terminal shows progress, and between two redraws. */
#define SHOW_AFTER_S 1.0
#define REDRAW_EVERY_S 0.2

static volatile sig_atomic_t g_signal;    /* the first SIGINT/SIGTERM/SIGHUP/SIGPIPE caught */
static volatile sig_atomic_t g_deferring; /* 1: a signal cancels cleanly (see cli_defer) */

static void on_signal(int sig)
{
    if (g_deferring && !g_signal) {
        g_signal = sig;
        return;
    }
    /* a pipe closed once is closed for every later write: not a second signal */
    if (sig == SIGPIPE && g_signal)
        return;
    /* not cancellable now, or a second signal: remove the temporary output
     * file, then end as the signal would have */
    const char *tmp = cli_mapped_temp_path();
    if (tmp)
        unlink(tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* SIGHUP and SIGPIPE stay ignored when they were at the start (nohup) */
    static const int k_unless_ignored[] = {SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof k_unless_ignored / sizeof k_unless_ignored[0]; i++) {
        struct sigaction old;
        if (sigaction(k_unless_ignored[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(k_unless_ignored[i], &sa, NULL);
    }
}

void cli_defer_signals(int defer)
{
    g_deferring = defer;
}

int cli_interrupted(void)
{
    return g_signal;
}

void cli_die_of_signal(void)
{
    int sig = g_signal;
    if (!sig)
        return;
    fflush(stderr);
    signal(sig, SIG_DFL);
    raise(sig);
}

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
    return g_signal != 0 || cli_mapped_failed();
}

void cli_progress_finish(cli_progress *p)
{
    if (p->show == 1 && p->drawn)
        fputc('\n', stderr);
    p->drawn = 0;
}
