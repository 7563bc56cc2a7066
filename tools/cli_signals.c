/*
 * cli_signals.c - the SIGINT/SIGTERM/SIGHUP/SIGPIPE handling of `convolve
 * INPUT OUTPUT` that makes Ctrl-C, a closed terminal or a closed pipe leave
 * no partial output file: a signal while the run can cancel is remembered
 * (the progress callback cancels, cli_progress.c); otherwise the temporary
 * output file named here (cli_mapped.c) is removed and the process ends of
 * the signal.
 */
#include "convolve_cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

/* The temporary file a signal handler must remove (NULL when none). */
static const char *volatile g_temp_path;
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
    const char *tmp = g_temp_path;
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

int cli_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int e = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return e;
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

void cli_signals_temp_path(const char *path)
{
    g_temp_path = path;
}

const char *cli_signals_get_temp_path(void)
{
    return g_temp_path;
}
