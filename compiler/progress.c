/* progress.c — the progress line of `flowc build` and `flowc run` on a terminal.
 *
 * The compiler reports phases through a callback (FcProgress); LLVM's optimiser or the object emission
 * can run for a minute without calling back, so drawing cannot wait for the next report. A small thread
 * therefore owns the line: it wakes four times a second and, once the delay has passed, redraws the
 * current phase with the elapsed seconds (`\r`, the text, then ESC [K to erase what a longer previous
 * line left). A report that changes the phase redraws at once, so a phase shorter than the thread's
 * period still shows. Reports and drawing share one mutex; the line is erased when the compile ends.
 * The line reads like "flowc: 12 s  codegen: kernel 340 of 1200" or "flowc: 30 s  LLVM optimisation
 * (1200 kernels)".
 */
#include "progress.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct FcProgressLine {
  FILE *f;
  double delay_s, t0;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t wake;
  bool finished, drawn;
  const char *phase, *item; /* the current report (string literals or pass names: static storage) */
  int step, total;
  int kernels;              /* the last codegen total, shown during the phases after it */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Draws the line; the caller holds the mutex. */
static void draw(FcProgressLine *p) {
  double t = now_s() - p->t0;
  if (p->finished || !p->phase || t < p->delay_s) return;
  char what[160];
  if (p->item && p->total) snprintf(what, sizeof what, "%s: %s (%d of %d)", p->phase, p->item, p->step, p->total);
  else if (p->total) snprintf(what, sizeof what, "%s: kernel %d of %d", p->phase, p->step, p->total);
  else if (p->kernels) snprintf(what, sizeof what, "%s (%d kernel%s)", p->phase, p->kernels, p->kernels > 1 ? "s" : "");
  else snprintf(what, sizeof what, "%s", p->phase);
  fprintf(p->f, "\rflowc: %.0f s  %s\033[K", t, what);
  fflush(p->f);
  p->drawn = true;
}

static void *draw_loop(void *arg) {
  FcProgressLine *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->finished) {
    draw(p);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 250 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->wake, &p->mu, &until);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

FcProgressLine *fc_progress_line_start(FILE *f, bool enabled, double delay_s) {
  if (!enabled) return NULL;
  FcProgressLine *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->f = f;
  p->delay_s = delay_s;
  p->t0 = now_s();
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  if (pthread_create(&p->thread, NULL, draw_loop, p) != 0) {
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return NULL; /* no line then: the compile itself goes on */
  }
  return p;
}

static void report(void *ctx, const char *phase, const char *item, int step, int total) {
  FcProgressLine *p = ctx;
  pthread_mutex_lock(&p->mu);
  bool changed = !p->phase || strcmp(p->phase, phase) != 0;
  if (changed && p->phase && p->total && strcmp(p->phase, "codegen") == 0) p->kernels = p->total;
  p->phase = phase;
  p->item = item;
  p->step = step;
  p->total = total;
  if (changed) draw(p);
  pthread_mutex_unlock(&p->mu);
}

FcProgress fc_progress_line_hook(FcProgressLine *p) { return p ? (FcProgress){report, p} : (FcProgress){0}; }

void fc_progress_line_phase(FcProgressLine *p, const char *phase) {
  if (p) report(p, phase, NULL, 0, 0);
}

void fc_progress_line_finish(FcProgressLine *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  bool was = p->finished;
  p->finished = true;
  pthread_cond_signal(&p->wake);
  pthread_mutex_unlock(&p->mu);
  if (was) return;
  pthread_join(p->thread, NULL);
  if (p->drawn) {
    fputs("\r\033[K", p->f);
    fflush(p->f);
  }
}

void fc_progress_line_free(FcProgressLine *p) {
  if (!p) return;
  fc_progress_line_finish(p);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
