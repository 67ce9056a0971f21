/* progress.h — the command line's progress line for long compiles (compiler/progress.c).
 *
 * The library reports through FcProgress (codegen/target.h); this reporter is the callback the CLI hands
 * it. It draws one line on a terminal, redrawn in place, once a compile has run for a delay (2 s by
 * default), and clears it when the compile ends, so short compiles and every non-terminal output stay
 * exactly as they were.
 */
#ifndef FLOWC_PROGRESS_H
#define FLOWC_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

#include "target.h"

typedef struct FcProgressLine FcProgressLine;

/* A reporter drawing on `f` after `delay_s` seconds, or NULL (report nothing) when !enabled or out of
 * memory. The CLI enables it when stderr is a terminal and --quiet was not given. */
FcProgressLine *fc_progress_line_start(FILE *f, bool enabled, double delay_s);
/* The FcProgress to put into the pipeline and codegen options ({NULL, NULL} for a NULL reporter). */
FcProgress fc_progress_line_hook(FcProgressLine *p);
/* Reports a phase from the CLI itself ("import"). */
void fc_progress_line_phase(FcProgressLine *p, const char *phase);
/* Ends the report: erases the line (if one was drawn), so that whatever is printed next (IR, messages,
 * the model's output) starts on a clean line; later reports are ignored. Idempotent; NULL is fine. */
void fc_progress_line_finish(FcProgressLine *p);
/* Finishes and frees. NULL is fine. */
void fc_progress_line_free(FcProgressLine *p);

#endif
