/* diag.c — status codes and one-line diagnostics.
 *
 * Library code never prints or exits on bad input: it records the first error in an FcDiag and returns
 * its status; the CLI prints "flowc: error: <file>: <msg>" and exits 1. Internal bugs go through fc_die
 * (FC_ASSERT), which stays on in release builds, prints file:line and aborts.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fc_diag_init(FcDiag *d) {
  d->status = FC_OK;
  d->msg[0] = '\0';
}

/* Messages must stay on one line: newlines and tabs from input strings become spaces. */
static void flatten_line(char *s) {
  for (; *s; s++)
    if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
}

FcStatus fc_verror(FcDiag *d, FcStatus st, const char *fmt, va_list ap) {
  if (d && d->status == FC_OK) {
    d->status = st;
    int n = vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    /* A message cut off at the buffer's end (a long list of unsupported ops) says so. */
    if (n >= (int)sizeof d->msg) memcpy(d->msg + sizeof d->msg - 4, "...", 4);
    flatten_line(d->msg);
  }
  return st;
}

FcStatus fc_error(FcDiag *d, FcStatus st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fc_verror(d, st, fmt, ap);
  va_end(ap);
  return st;
}

FcStatus fc_error_node(FcDiag *d, FcStatus st, const char *node, const char *op, const char *fmt, ...) {
  if (!d || d->status != FC_OK) return st;
  char what[sizeof d->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fc_error(d, st, "node '%s' (%s): %s", node ? node : "", op ? op : "?", what);
}

const char *fc_status_name(FcStatus st) {
  switch (st) {
  case FC_OK: return "ok";
  case FC_ERR_INPUT: return "invalid input";
  case FC_ERR_UNSUPPORTED: return "unsupported";
  case FC_ERR_LIMIT: return "limit exceeded";
  case FC_ERR_IO: return "i/o error";
  case FC_ERR_INTERNAL: return "internal error";
  }
  return "?";
}

void fc_die(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "flowc: internal error at %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}
