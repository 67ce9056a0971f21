/* check_cpu.c — a library user on a CPU that lacks what the model was compiled for: model_check_cpu
 * says what is missing, model_run refuses with -1 before running, and frt_model_run returns
 * FRT_ERR_UNSUPPORTED with the same message. Prints one line per step for FileCheck. */
#include <stdio.h>
#include <stdlib.h>

#include "flowrt.h"
#include "model.h"

int main(void) {
  char msg[512];
  int rc = model_check_cpu(msg, sizeof msg);
  printf("check_cpu: %d %s\n", rc, msg);
  void *ws = aligned_alloc(64, model_workspace_size());
  static float a[60], b[60], y[60];
  const void *inputs[] = {a, b};
  void *outputs[] = {y};
  y[0] = 42.0f;
  printf("run: %d, output untouched: %d\n", model_run(inputs, outputs, ws, NULL), y[0] == 42.0f);
  FrtError err = {0};
  FrtStatus st = frt_model_run(&model_model, inputs, outputs, ws, NULL, &err);
  printf("frt_model_run: %s %s\n", st == FRT_ERR_UNSUPPORTED ? "unsupported" : "other", err.msg);
  free(ws);
  return 0;
}
