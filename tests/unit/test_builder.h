/* test_builder.h — a module built in memory by a unit test: its builder (every op located at node "n")
 * and diagnostics, and the step that makes the built values the graph's outputs and verifies the module.
 * Include after cmocka.h and ir.h; static inline, so a test may use only some of it. */
#ifndef FLOWC_TEST_BUILDER_H
#define FLOWC_TEST_BUILDER_H

typedef struct T {
  FcModule *m;
  FcBuilder b;
  FcDiag d;
} T;

static inline void t_init(T *t) {
  t->m = fc_module_create("test");
  fc_diag_init(&t->d);
  fc_builder_init(&t->b, t->m->graph, &t->d);
  t->b.loc = "n";
}

/* Sets the graph's outputs to v[0..n) (each must have been built) and fails the test unless it verifies. */
static inline void outputs(T *t, FcValue *const *v, int n) {
  assert_int_equal(fc_b_status(&t->b), FC_OK);
  for (int i = 0; i < n; i++) assert_non_null(v[i]);
  fc_graph_set_outputs(t->m->graph, v, NULL, n);
  FcDiag d;
  fc_diag_init(&d);
  if (fc_verify(t->m, &d) != FC_OK) fail_msg("module built by the test does not verify: %s", d.msg);
}

#ifdef FLOWC_PASSES_H
/* Runs the registered pass `pass` on the module for target tg and fails the test unless it succeeds and the
 * module then verifies. */
static inline void t_run_pass(T *t, const char *pass, const FcTarget *tg) {
  FcPassContext pc = {.target = tg, .opt_level = 2, .diag = &t->d};
  fc_arena_init(&pc.scratch);
  const FcPassInfo *p = fc_pass_lookup(pass);
  assert_non_null(p);
  FcStatus st = p->fn(t->m, &pc);
  fc_arena_free(&pc.scratch);
  if (st != FC_OK) fail_msg("pass %s failed: %s", pass, t->d.msg);
  FcDiag d;
  fc_diag_init(&d);
  if (fc_verify(t->m, &d) != FC_OK) fail_msg("verifier after %s: %s", pass, d.msg);
}
#endif

#endif /* FLOWC_TEST_BUILDER_H */
