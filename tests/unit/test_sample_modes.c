/* test_sample_modes.c — the one table of resampling modes (ir/sample_modes.def): lookups per list,
 * canonical names, aliases only for the importer, and the lists spelled for messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "sample_modes.h"

static void test_parse(void **state) {
  (void)state;
  FcMode m;
  assert_true(fc_mode_parse(FC_ML_RESIZE_CTM, "align_corners", &m));
  assert_int_equal(m, FC_RESIZE_CTM_ALIGN_CORNERS);
  assert_string_equal(fc_mode_name(m), "align_corners");
  /* A name belongs to its list only: grid_sample's "nearest" is not resize's. */
  assert_true(fc_mode_parse(FC_ML_GRID_MODE, "nearest", &m));
  assert_int_equal(m, FC_GRID_MODE_NEAREST);
  assert_true(fc_mode_parse(FC_ML_RESIZE_MODE, "nearest", &m));
  assert_int_equal(m, FC_RESIZE_MODE_NEAREST);
  assert_false(fc_mode_parse(FC_ML_ROI_CTM, "align_corners", &m));
  assert_false(fc_mode_parse(FC_ML_RESIZE_CTM, "tf_half_pixel_for_nn", &m)); /* an importer rewrite */
  assert_false(fc_mode_parse(FC_ML_RESIZE_CTM, "", &m));
  /* Aliases: ONNX spellings the importer canonicalises; the IR holds canonical names only. */
  assert_false(fc_mode_parse(FC_ML_GRID_MODE, "linear", &m));
  assert_true(fc_mode_parse_onnx(FC_ML_GRID_MODE, "linear", &m));
  assert_int_equal(m, FC_GRID_MODE_BILINEAR);
  assert_true(fc_mode_parse_onnx(FC_ML_GRID_MODE, "cubic", &m));
  assert_string_equal(fc_mode_name(m), "bicubic");
  assert_true(fc_mode_parse_onnx(FC_ML_RESIZE_MODE, "bilinear", &m));
  assert_int_equal(m, FC_RESIZE_MODE_LINEAR);
  assert_int_equal(fc_mode_attr(FC_ML_GRID_PAD), FC_ATTR_PADDING_MODE);
  assert_int_equal(fc_mode_attr(FC_ML_RESIZE_NEAREST), FC_ATTR_NEAREST_MODE);
}

static void test_lists(void **state) {
  (void)state;
  char buf[256];
  assert_string_equal(fc_mode_list_str(FC_ML_GRID_PAD, buf, sizeof buf), "zeros|border|reflection");
  assert_string_equal(fc_mode_list_str(FC_ML_RESIZE_NEAREST, buf, sizeof buf),
                      "round_prefer_floor|round_prefer_ceil|floor|ceil");
  char tiny[8];
  fc_mode_list_str(FC_ML_RESIZE_CTM, tiny, sizeof tiny);
  assert_true(strlen(tiny) < sizeof tiny);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_lists),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
