/* test_eval_structure.c — unit tests of the reference evaluators of the structural ops
 * (ir/eval_data.c, ir/eval_index.c, ir/eval_nn.c, ir/eval_sample.c).
 *
 * Each test builds a small graph with FcBuilder (constants in, one op), evaluates it through fc_op_eval
 * and compares with values computed independently at development time and pasted below: numpy for
 * data movement, gathers, scatters, einsum and det; direct Python loops over the ONNX definitions for
 * conv, conv_transpose and the pools; ONNX's own numpy reference (onnx/backend/test/case/node/resize.py)
 * for resize; Python ports of ONNX's reference kernels for grid_sample and roi_align, themselves checked
 * against PyTorch's values in ONNX's test cases. Small cases (topk, one_hot, reverse_sequence, integer
 * wraparound, f16 rounding) are worked out by hand in the comments beside them.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eval_struct.h"
#include "ew_program.h"
#include "ir.h"

/* ---- expected values (generated, see the file comment) ------------------------------------------- */

static const float mm_a[] = {0, 2, -1, -1, 3, 3, 3, 4, 4, 3, 2, 0};
static const float mm_b[] = {-4, 3, -4, 3, 2, -1};
static const float mm_y[] = {-10, 7, -2, 3, -20, 17, -20, 15};
static const float cv_x[] = {1, 4, 4, 3, 1, -4, -4, -2, 4, 2, 0, 3, -1, -1, 4, -1, -4, -3, -4, -4, 2, 3, 3, -1, -4,
    3, 3, 3, -4, 1, 0, -1, -3, -1, -3, -1, 0, -1, -3, 1, -3, -2, -1, -2, -2, 1, 3, -1, -4, -1, 0, 1, -1, -4, 0, 4,
    2, 3, -2, 3, -1, 4, 2, 2, 1, 2, 1, 3, -3, 1, 0, 0, -4, 2, -2, 2, 4, -2, 0, -3, 2, -3, 1, -3, 2, 4, 2, 1, 3, 1,
    0, 2, 4, -3, 1, 1, 4, -1, 3, 3};
static const float cv_w[] = {0, 3, 1, 2, -2, -4, 1, -1, -4, 1, 3, -3, 4, 0, -4, -2, -4, 3, 2, -2, 1, -3, -4, -4, -3,
    -3, 1, -1, -2, -4, 0, 4, 3, -3, 0, -1, 2, 3, -3, -4, -2, 3, -4, -4, 4, -2, -4, 1, 1, -4, -4, 4, 0, 1, -3, 0, -4,
    3, -2, -4, -1, 4, -1, 3, -3, -4, -3, 0, 2, -3, -4, -3};
static const float cv_b[] = {-4, -3, 4, 0};
static const float cv_y[] = {-13, 8, -8, 24, 5, -4, 12, -40, 19, -3, 1, -18, 22, 0, -10, 6, -6, -7, -21, 10, -60,
    -11, -7, -4};
static const int32_t cv1_x[] = {-3, 2, 4, 1, -2, 0, 3, 0, -3, -2, 4, 1, -2, 2, -2, 1, 3, 3, 1, 1, 2, -4, 2, 0, 2,
    -2, 2, 4, 3, -4, 1, 4, 3, 3, 2, -2, 1, 2, -3, -1, 0, -4};
static const int32_t cv1_w[] = {-1, 1, 2, 0, -4, 0, -3, 1, -2, 0, 4, 3, 1, 3, 1, -1, 3, 2};
static const int32_t cv1_y[] = {-2, 26, -31, 10, -13, 20, 17, 12, -4, 25, -25, 11, -13, 9, 5, 27};
static const float cv3_x[] = {-2, -1, -3, -3, 4, 0, -2, -3, 3, -4, 4, 4, -3, -2, -1, -4, -3, -3, 1, 1, 2, -4, -1,
    -2, 0, -2, 4, 0, -4, -4, -2, 2, -1, 1, 0, 2, 0, 4, -2, 0, 2, 1, -1, 1, -2, 2, 0, -1, -2, 1, 3, 1, 4, 1, -2, -4,
    -1, -2, -2, 0, -1, 0, 4, 3, -4, -2, 3, 4, 4, 0, -4, 0};
static const float cv3_w[] = {-3, 3, 0, -4, -3, -4, 2, -2, -4, -2, 0, 0, -3, -4, -4, -2, -1, 3, 2, -1, 1, 2, 4, 2,
    3, -1, 4, 1, 2, 0, -2, 3};
static const float cv3_y[] = {-23.5, 18.5, 0.5, -16.5, -24.5, 0.5, -8.5, 10.5, 28.5, -8.5, -0.5, 4.5, 11, -18, 1,
    -14, -8, -41, -21, -11, -25, -24, -3, -5};
static const float ct_x[] = {2, 4, 2, -3, -4, 3, 2, 4, 1, 0, -1, -4, 3, 0, -4, 4, 1, -4, 3, 1, -3, 1, 0, -3, 2, 1,
    2, 4, 1, 0, 2, -4, 2, -2, -1, -3};
static const float ct_w[] = {2, 3, -4, -4, 0, 3, -4, -2, 2, -3, -2, -2, 4, 3, -2, 0, 3, 3, -3, -4, -3, 4, 3, 0};
static const float ct_b[] = {2, -3};
static const float ct_y[] = {-6, 2, -6, -16, 2, -11, -14, 2, 6, 2, -16, 2, -7, -4, 2, 4, 32, 2, 33, 2, 20, 2, 5, 18,
    2, 18, -18, 2, 2, 2, -16, 2, -15, 6, 2, 0, 28, 2, 30, 2, 2, 2, -18, -12, 2, -17, -10, 2, 10, 2, -6, 2, 0, 0, 2,
    12, 10, 2, 13, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, -21, -3, 13, -8, -3, 1, 3, -3, -3, -3, 16, -3, 1, 15, -3, 16,
    -30, -3, -29, -3, -11, -3, 5, 9, -3, -19, -3, -3, 5, -3, 20, -3, 14, -8, -3, 4, 11, -3, 6, -3, -1, -3, -11, -2,
    -3, -7, 2, -3, -15, -3, -3, -3, 3, -3, -3, 0, -6, -3, 3, -3, -3, -3, -3, -3, -3, -3, -3, -3, -3, -3};
static const float mp_x[] = {-1, 11, -6, 50, 4, 60, 47, 93, 19, 22, 53, 89, 76, 27, -4, 73, 51, 16, 80, 23, 33, 63,
    -9, 8, 3, 81, -11, 20, 36, -5, 84, 43, 62, -8, 9, 48, -13, 12, -19, 98, 91, -15, 92, -12, 14, 54, 74, 25, 75,
    44, 17, 13, 29, -10, 0, 72, 1, 77, 87, 78, 46, 95, 85, 21, 99, 83, 6, 79, 71, 65, 18, 82, 28, -14, 45, 70, 34,
    88, -7, 24, 40, 59, -20, 42, 49, 57, 86, -17, 38, 55, 90, -16, 61, 32, -3, -2, 30, -18, 94, 66, 68, 39, 97, 96,
    37, 56, 10, 5, 35, 41, 69, 2, 58, 15, 7, 31, 26, 67, 52, 64};
static const float mp_y[] = {47, 53, 53, 80, 53, 53, 80, 36, 36, 84, 91, 91, 92, 91, 91, 75, 87, 87, 85, 99, 99, 71,
    71, 34, 86, 86, 38, 94, 94, 68, 97, 94, 68, 69, 69, 58};
static const int64_t mp_i[] = {6, 10, 10, 18, 10, 10, 18, 28, 28, 30, 40, 40, 42, 40, 40, 48, 58, 58, 62, 64, 64,
    68, 68, 76, 86, 86, 88, 98, 98, 100, 102, 98, 100, 110, 110, 112};
static const float mp2_y[] = {76, 27, 73, 80, 93, 63, 76, 81, 73, 80, 33, 63, 92, 62, 74, 75, 44, 98, 92, 72, 87,
    75, 44, 29, 46, 95, 99, 6, 79, 65, 49, 86, 70, -7, 40, 59, 97, 96, 56, 35, 94, 68, 97, 96, 67, 35, 69, 58};
static const int64_t mp2_i[] = {2, 7, 17, 3, 6, 18, 2, 9, 17, 3, 13, 18, 32, 40, 52, 33, 38, 46, 32, 39, 54, 33, 38,
    53, 60, 65, 80, 61, 66, 76, 64, 74, 77, 63, 73, 78, 92, 97, 107, 93, 101, 111, 92, 97, 109, 93, 103, 113};
static const float ap_x[] = {4, -4, 1, -1, 0, 1, 4, -4, 1, -1, 1, -4, -3, 3, 3, 3, -2, -1, 2, 0, 4, -2, 3, 1, 3, -2,
    -1, -4, -2, 0, -1, 1, 2, -1, 4, 0};
static const float ap_y1[] = {0, -0.666666687, 0, 0.25, 0, 0.833333313, -0.666666687, -1.25, 0.333333343,
    0.333333343, 0.333333343, 0.25, 0.166666672, -0.833333313, -0.5, 0};
static const float ap_y0[] = {0, -1.33333337, 0, 1, 0, 0.833333313, -0.666666687, -2.5, 1, 0.666666687, 0.666666687,
    1, 0.25, -0.833333313, -0.5, 0};
static const float ap_yd[] = {1.25, -1.25, 0.5, -1.25, 1.25, 0.25, 0.5, 0.5, 1.25, -1.25, 0.5, -1.25, 0.5, -1.5,
    -0.75, -1, 1.75, -0.5, 3.25, -0.5, 0.5, -1.5, -0.75, -1};
static const int32_t tr_y[] = {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19,
    23};
static const int32_t sl_y[] = {17, 19, 9, 11, 1, 3};
static const int32_t pad_reflect[] = {4, 5, 6, 5, 4, 5, 6, 5, 4, 5, 6, 5, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 4, 5,
    6, 5, 4, 5, 6, 5, 4, 5, 6, 5, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 4, 5, 6, 5, 4, 5, 6, 5, 4, 5, 6, 5, 1, 2, 3,
    2, 1, 2, 3, 2, 1, 2, 3, 2, 4, 5, 6, 5, 4, 5, 6, 5, 4, 5, 6, 5};
static const int32_t pad_edge[] = {1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3, 1, 1, 1,
    1, 1, 2, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 6, 6, 6, 6, 6, 6, 4, 4, 4, 4,
    4, 5, 6, 6, 6, 6, 6, 6, 4, 4, 4, 4, 4, 5, 6, 6, 6, 6, 6, 6};
static const int32_t pad_wrap[] = {6, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 6, 4, 5,
    6, 4, 5, 6, 4, 5, 6, 4, 5, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5, 3, 1, 2, 3,
    1, 2, 3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5};
static const int32_t pad_crop[] = {9, 9, 9, 9, 2, 3, 9, 9, 5, 6, 9, 9};
static const float ga_y[] = {0, 4.5, 3, 0, 6, 10.5, 9, 6, 12, 16.5, 15, 12};
static const int64_t ge_y[] = {9, 10, 2, 0, 4, 2};
static const float gnd_y[] = {7, 0, 23, 13};
static const float se_none[] = {-5, 20, 3, 4, 5, 6, 7, 3};
static const float se_add[] = {-4, 32, 3, 4, 5, 6, 7, 13.5};
static const float se_mul[] = {-5, 400, 3, 4, 5, 6, 7, 24};
static const float se_max[] = {1, 20, 3, 4, 5, 6, 7, 8};
static const float se_min[] = {-5, 2, 3, 4, 5, 6, 7, 0.5};
static const int32_t snd_none[] = {5, 6, 7, 8, 4, 5, 6, 7, -1, -1, 10, 2};
static const int32_t snd_add[] = {5, 7, 9, 11, 4, 5, 6, 7, 8, 10, 23, 17};
static const int32_t snd_mul[] = {0, 6, 14, 24, 4, 5, 6, 7, -8, -18, 300, 88};
static const int32_t snd_max[] = {5, 6, 7, 8, 4, 5, 6, 7, 8, 9, 10, 11};
static const int32_t snd_min[] = {0, 1, 2, 3, 4, 5, 6, 7, -1, -1, 3, 2};
static const float rs_x[] = {-1.75, -0.5, 0.75, 2, 3.25, 4.5, 5.75, 7, 8.25, 9.5, 10.75, 12};
static const float rs_nearest_hp[] = {-1.75, -1.75, -0.5, -0.5, -0.5, 0.75, 0.75, 2, 2, -1.75, -1.75, -0.5, -0.5,
    -0.5, 0.75, 0.75, 2, 2, 3.25, 3.25, 4.5, 4.5, 4.5, 5.75, 5.75, 7, 7, 8.25, 8.25, 9.5, 9.5, 9.5, 10.75, 10.75,
    12, 12, 8.25, 8.25, 9.5, 9.5, 9.5, 10.75, 10.75, 12, 12};
static const float rs_nearest_floor_ac[] = {-1.75, -1.75, -0.5, -0.5, 0.75, 0.75, 2, -1.75, -1.75, -0.5, -0.5, 0.75,
    0.75, 2, 3.25, 3.25, 4.5, 4.5, 5.75, 5.75, 7, 3.25, 3.25, 4.5, 4.5, 5.75, 5.75, 7, 8.25, 8.25, 9.5, 9.5, 10.75,
    10.75, 12};
static const float rs_nearest_ceil_hp[] = {4.5, 5.75, 7, 9.5, 10.75, 12};
static const float rs_nearest_rpc_asym[] = {-1.75, -0.5, -0.5, 0.75, 0.75, 2, 2, 2, 3.25, 4.5, 4.5, 5.75, 5.75, 7,
    7, 7, 3.25, 4.5, 4.5, 5.75, 5.75, 7, 7, 7, 8.25, 9.5, 9.5, 10.75, 10.75, 12, 12, 12, 8.25, 9.5, 9.5, 10.75,
    10.75, 12, 12, 12, 8.25, 9.5, 9.5, 10.75, 10.75, 12, 12, 12};
static const float rs_nearest_rpf_asym[] = {-1.75, -1.75, -0.5, -0.5, 0.75, 0.75, 2, 2, -1.75, -1.75, -0.5, -0.5,
    0.75, 0.75, 2, 2, 3.25, 3.25, 4.5, 4.5, 5.75, 5.75, 7, 7, 3.25, 3.25, 4.5, 4.5, 5.75, 5.75, 7, 7, 8.25, 8.25,
    9.5, 9.5, 10.75, 10.75, 12, 12, 8.25, 8.25, 9.5, 9.5, 10.75, 10.75, 12, 12};
static const float rs_linear_down[] = {0.333333135, 2.41666627};
static const float rs_linear_ac[] = {-1.75, -1, -0.25, 0.5, 1.25, 2, 0.25, 1, 1.75, 2.5, 3.25, 4, 2.25, 3, 3.75,
    4.5, 5.25, 6, 4.25, 5, 5.75, 6.5, 7.25, 8, 6.25, 7, 7.75, 8.5, 9.25, 10, 8.25, 9, 9.75, 10.5, 11.25, 12};
static const float rs_linear_pt[] = {-1.54166663, 0.125, 1.79166663};
static const float rs_cubic_ex[] = {-2.13303399, -1.26884067, -0.203947365, 0.860946, 1.72513914, 0.25473699,
    1.11893022, 2.18382359, 3.24871683, 4.11291027, 4.13412857, 4.99832153, 6.06321526, 7.1281085, 7.99230146,
    7.68169022, 8.54588318, 9.6107769, 10.6756706, 11.5398636};
static const float rs_cubic_asym[] = {-1.75, -0.0370370373, 1.67592597, 1.58984375, 3.30280662, 5.01576948, 6.21875,
    7.9317131, 9.64467621, 8.77734375, 10.4903069, 12.20327};
static const float rs_crop[] = {0.62500006, 1.1875, 1.75, 2.3125, 2.875, 3.62500024, 4.1875, 4.75, 5.3125, 5.875,
    6.62500048, 7.18750048, 7.75, 8.3125, 8.875, -7.5, -7.5, -7.5, -7.5, -7.5};
static const float rs_crop_n[] = {-1.75, -0.5, -0.5, 0.75, 0.75, 3.25, 4.5, 4.5, 5.75, 5.75, 8.25, 9.5, 9.5, 10.75,
    10.75, -7.5, -7.5, -7.5, -7.5, -7.5};
static const float rs3_x[] = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2};
static const float rs3_y[] = {0.5, 2.5, 2.0999999, 2.70000005, 4.5, 3, 2.70000005, 3.29999995, 1.5, 3.5, 3, 1.5,
    3.20000005, 2.4000001, 3.5, 3.75, 2.75, 3, 2.25, 2.5, 5.5, 0.5, 4.30000019, 2.0999999, 2.5, 4.5, 2.79999995,
    2.70000005, 3, 1.5};
static const float es_a[] = {4, -3, 0, -2, 4, 1, -4, 4, -3, -3, 0, -3};
static const float es_b[] = {-2, 2, -3, -2, -3, 1, 2, -2};
static const float es_c[] = {2, 4, -3, 2, -4, -4, 1, -3, 3, 0};
static const float es_abc[] = {-78, 6, -45, 48, 12, 42, 30, -9, 0, -36, -6, 42, -45, 36, -36};
static const float es_s[] = {-2, 2, 0, -3, 3, -1, -4, 4, -3};
static const float es_diag[] = {-2, 3, -3};
static const float es_trace[] = {-2};
static const float es_e1[] = {2, -4, -4, 3, -1, -1, -2, -2, -4, 1, -4, -2, -1, 1, -4, 4, -4, 3, -4, 1, 3, -1, -3,
    -4};
static const float es_e2[] = {-2, 2, -3, 4, -3, -2, -2, 3, -4, 0, 0, -4, 1, 0, 3, -3, -4, 3, -3, 1, 2, 4, 0, -4};
static const float es_ell[] = {14, 5, 15, -8, 21, -2, -3, 7, -4, 10, 6, 2, -4, -26, 3, -4, 5, -19, 3, 22, 9, 15, 14,
    -4, 12, -16, 15, -15, -27, 16, -7, -34, -1, -29, -15, 12};
static const float es_p[] = {2, -1};
static const float es_q[] = {-2, -4, -3, -4, 4, -2};
static const float es_pq[] = {-4, 4, -8, -4, -6, 2};
static const float es_bdiag[] = {0, 4, 8, 9, 13, 17};
static const double det_x[] = {0, 0.17875925998602951, -0.95104541881618365, 0.24811572250313388,
    -1.4586956997991345, -0.4232049745132756, -0.86017810687844043, 1.7920110374746598, -0.30547269342056188, 1, 2,
    3, 2, 4, 6, 0, 1, 5};
static const double det_y[] = {0.84907595318094575, 0};
static const float gs_x[] = {-4, -3, 0, -4, -1, -2, -1, 1, -2, -4, 4, 2, 2, -4, 1, -3, -2, 3, -1, -2, -3, 2, 1, 3};
static const float gs_g[] = {-3.20000005, -1, 0.300000012, 3.4000001, 2.5999999, -0.449999988, -0.899999976,
    -3.0999999, 3.29999995, 0.699999988, -2.0999999, 2.20000005};
static const float gs_y0[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const float gs_y1[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const float gs_y2[] = {-4, 3.79999995, -2.375, -4, 2, -2, 2, 1.20000005, -2.67499995, 2, 3, -3};
static const float gs_y3[] = {-4, 3.60000014, -1.25, -3.8499999, 1.70000005, -2, 2, 1.04999995, -2.45000005,
    1.09999979, 1.5, -3};
static const float gs_y4[] = {-4, -0.440000147, -2.91999984, -2, -2.19999981, -1.18000031, -3, 0.429999679,
    -0.0275004748, -3, -2.50000048, -0.00999980234};
static const float gs_y5[] = {-2.79999971, -0.51000005, -2.41000009, -2.18500018, -2.46499991, -1.2900002,
    -1.79999971, 0.129999876, -0.169999957, -2.14999986, -0.450000346, 0.170000255};
static const float gs_y6[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const float gs_y7[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const float gs_y8[] = {-4, 4, -4, -4, 2, -2, 2, 1, -3, 2, 3, -3};
static const float gs_y9[] = {-4, 4, 1, -4, 2, -2, 2, 1, -2, 2, 3, -3};
static const float gs_y10[] = {-4, 0, -4, -2, -2, -1, -3, 1, 2, -3, -3, -1};
static const float gs_y11[] = {-4, 0, -2, -2, -2, -1, -3, 1, 3, -3, -3, -1};
static const float gs_y12[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const float gs_y13[] = {0, 0, 0, 0, 0, -0.0114660086, 0, 0, 0, 0, 0, -0.0171990115};
static const float gs_y14[] = {-4, 4.32200003, -2.52444911, -4, 2, -2, 2, 1.10325003, -2.96155858, 2, 3, -3};
static const float gs_y15[] = {-4, 3.74962521, -1.32115614, -3.91534376, 1.95725, -2, 2, 0.980531275, -2.95428133,
    1.16215599, 1.65224993, -3};
static const float gs_y16[] = {-5.28343725, -0.231775656, -3.00099874, -1.82875156, -2.25822926, -1.59185076,
    -3.49546838, 0.770697474, -0.00385895418, -3.95812488, -2.61959672, 0.175444856};
static const float gs_y17[] = {-3.18324971, -0.646426737, -2.53999901, -2.16337585, -2.90924954, -1.68378985,
    -2.08874965, 0.316051513, -0.268452972, -2.75414348, -0.972707808, 0.412952393};
static const float ra_x[] = {2, 0, 0, 0, 0, 1, 1, 2, 0, 1, -5, 2, -7, 2, 2, -8, -7, 0, -8, 1, 0, -1, -4, -4, -8, -3,
    2, -5, -5, -2, -7, -7, -3, -6, -8, -3, -8, -5, -4, 2, -7, -5, 0, -3, -4, -6, -7, -5, -5, -7, -2, -2, -1, -2, -1,
    -7, -3, -5, -2, -4, 1, -8, -4, -5, 0, -6, 0, 2, -5, 1, -6, -7, 1, -2, 1, -4, 1, -2, -1, 0, 2, 2, 1, -2, -4, -2,
    -4, -3, -1, -4, -8, -3, -6, -3, -4, -3, -7, -1, -4, -4, -4, -6, 0, -1, -2, -2, 0, -8, -2, -6, -2, 0, -4, -1, 0,
    2, -5, -5, -4, -8};
static const float ra_rois[] = {0.5, 1, 4.19999981, 3.9000001, 1, 0, 12, 9, -2, -1, 3, 2.5};
static const float ra_y0[] = {-0.589270651, -5.39885426, 0.0571875572, -1.29656196, 0.411979139, 0.490625232,
    -6.64447927, -2.92916632, -6.05843782, -1.96249974, -4.5765624, -1.35520816, 0.560763896, 0.010416667,
    -0.134548604, -3.34722233, -1.49131942, -3.50607634, -5.15885401, -5.05902767, -3.62239575, -5.0546875,
    -4.24826384, -2.50520825, 0.5, -2.375, 0.5, -2.375, 0.270833343, -0.942708313, -4, -6.125, -4, -6.125,
    -3.77083325, -5.49479151};
static const float ra_y1[] = {1.45979166, 0.61614573, 1.22770834, 1.12395823, 1.46437478, 1.34062469, 0, 0, 0, 0,
    1.26729178, 0, 1.5, 0, 0.9375, 0, 0, 0, 0.5625, 0, -0, 0, 0, 0, 1, 0, 0.541666687, 1.67708337, 0.791666687,
    0.65625, 0, -0, 0, -0.010416667, 0, 0};

/* ---- harness ------------------------------------------------------------------------------------- */

typedef struct Ctx {
  FcModule *m;
  FcBuilder b;
  FcDiag d;
} Ctx;

static Ctx *ctx_new(void) {
  Ctx *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->m = fc_module_create("test");
  fc_diag_init(&c->d);
  fc_builder_init(&c->b, c->m->graph, &c->d);
  return c;
}

static void ctx_free(Ctx *c) {
  fc_module_destroy(c->m);
  free(c);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define NEL(a) ((int)(sizeof(a) / sizeof((a)[0])))

static FcValue *cst(Ctx *c, FcDtype dt, int rank, const int64_t *dims, const void *data) {
  FcValue *v = fc_b_const(&c->b, dt, rank, dims, data);
  if (!v) fail_msg("constant: %s", c->d.msg);
  return v;
}

static FcOp *mk(Ctx *c, FcOpKind k, FcValue *const *ops, int n, int n_results, const FcAttr *a, int na) {
  FcOp *op = fc_b_op(&c->b, k, ops, n, n_results, a, na);
  if (!op) fail_msg("build %s: %s", fc_op_info(k)->name, c->d.msg);
  return op;
}

static FcTensor **ev(Ctx *c, const FcOp *op) {
  FcTensor **out = FC_NEW_ARRAY(&c->m->arena, FcTensor *, 4);
  FcStatus st = fc_op_eval(op, &c->m->arena, out, &c->d);
  if (st != FC_OK) fail_msg("eval %s: %s", fc_op_info(op->kind)->name, c->d.msg);
  return out;
}

/* Evaluates an op that must fail with `want` and a message containing `frag`. */
static void ev_fails(Ctx *c, const FcOp *op, FcStatus want, const char *frag) {
  FcTensor *out[4];
  fc_diag_init(&c->d); /* the first message in a diag wins: start afresh */
  FcStatus st = fc_op_eval(op, &c->m->arena, out, &c->d);
  if (st != want || !strstr(c->d.msg, frag))
    fail_msg("expected status %d with \"%s\", got %d: %s", want, frag, st, c->d.msg);
}

static void expect_shape(const FcTensor *t, FcDtype dt, int rank, const int64_t *dims) {
  assert_int_equal(t->type.dtype, dt);
  assert_int_equal(t->type.rank, rank);
  for (int i = 0; i < rank; i++) assert_int_equal(t->type.dims[i], dims[i]);
}

/* Values as doubles within a relative tolerance; NaN matches NaN. */
static void expect_vals(const FcTensor *t, int n, double tol, const float *wf, const double *wd) {
  int64_t numel;
  assert_true(fc_type_numel(&t->type, &numel));
  assert_int_equal(numel, n);
  for (int i = 0; i < n; i++) {
    double got = fc_tensor_get_f64(t, i), want = wf ? (double)wf[i] : wd[i];
    if (isnan(want) && isnan(got)) continue;
    if (!(fabs(got - want) <= tol * (1 + fabs(want)))) fail_msg("element %d: got %.9g, want %.9g", i, got, want);
  }
}

static void expect_f(const FcTensor *t, int n, const float *want) { expect_vals(t, n, 2e-7, want, NULL); }

static void expect_ints(const FcTensor *t, int n, const int32_t *w32, const int64_t *w64) {
  int64_t numel;
  assert_true(fc_type_numel(&t->type, &numel));
  assert_int_equal(numel, n);
  for (int i = 0; i < n; i++) {
    int64_t want = w32 ? w32[i] : w64[i];
    if (fc_tensor_get_i64(t, i) != want)
      fail_msg("element %d: got %lld, want %lld", i, (long long)fc_tensor_get_i64(t, i), (long long)want);
  }
}

/* ---- matmul ------------------------------------------------------------------------------------- */

static void test_matmul_f32_broadcast(void **state) {
  Ctx *c = ctx_new();
  FcValue *ops[2] = {cst(c, FC_DT_F32, 3, D(2, 2, 3), mm_a), cst(c, FC_DT_F32, 2, D(3, 2), mm_b)};
  FcTensor *y = ev(c, mk(c, FC_OP_MATMUL, ops, 2, 1, NULL, 0))[0];
  expect_shape(y, FC_DT_F32, 3, D(2, 2, 2));
  expect_f(y, 8, mm_y);
  ctx_free(c);
}

static void test_matmul_int_wraps(void **state) {
  Ctx *c = ctx_new();
  /* i32: 2^30*4 + 2^30*4 = 2^33 wraps to 0; -3*4 + 5*4 = 8. */
  int32_t a[4] = {1 << 30, 1 << 30, -3, 5}, b[2] = {4, 4}, want[2] = {0, 8};
  FcValue *ops[2] = {cst(c, FC_DT_I32, 2, D(2, 2), a), cst(c, FC_DT_I32, 2, D(2, 1), b)};
  expect_ints(ev(c, mk(c, FC_OP_MATMUL, ops, 2, 1, NULL, 0))[0], 2, want, NULL);
  /* 8-bit operands accumulate exactly into i32 (MatMulInteger's): ui8 200*2 + 100*1 = 500, not 244;
   * ui8 x i8 255*-128 + 255*-128 = -65280. */
  uint8_t ua[2] = {200, 100}, ub[2] = {2, 1}, ma[2] = {255, 255};
  int8_t mb[2] = {-128, -128};
  int32_t uwant[1] = {500}, mwant[1] = {-65280};
  FcValue *uops[2] = {cst(c, FC_DT_U8, 2, D(1, 2), ua), cst(c, FC_DT_U8, 2, D(2, 1), ub)};
  FcTensor *uy = ev(c, mk(c, FC_OP_MATMUL, uops, 2, 1, NULL, 0))[0];
  assert_int_equal(uy->type.dtype, FC_DT_I32);
  expect_ints(uy, 1, uwant, NULL);
  FcValue *mops[2] = {cst(c, FC_DT_U8, 2, D(1, 2), ma), cst(c, FC_DT_I8, 2, D(2, 1), mb)};
  expect_ints(ev(c, mk(c, FC_OP_MATMUL, mops, 2, 1, NULL, 0))[0], 1, mwant, NULL);
  ctx_free(c);
}

static void test_matmul_f16_rounds_once(void **state) {
  Ctx *c = ctx_new();
  /* 1 + 2^-11 + 2^-24 lies just above the midpoint of f16 1.0 and 1+2^-10; through f32 it would round to
   * the midpoint itself and then to even (1.0). The correct f16 result is 1+2^-10 (0x3c01). */
  uint16_t a[3] = {0x3c00, 0x3c00, 0x3c00}, b[3] = {0x3c00, 0x1000, 0x0001};
  FcValue *ops[2] = {cst(c, FC_DT_F16, 2, D(1, 3), a), cst(c, FC_DT_F16, 2, D(3, 1), b)};
  FcTensor *y = ev(c, mk(c, FC_OP_MATMUL, ops, 2, 1, NULL, 0))[0];
  uint16_t got;
  memcpy(&got, y->data, 2);
  assert_int_equal(got, 0x3c01);
  ctx_free(c);
}

/* ---- conv, conv_transpose ------------------------------------------------------------------------ */

static FcOp *conv_op(Ctx *c, FcOpKind k, FcValue *x, FcValue *w, FcValue *b, int n, const int64_t *dil, int64_t group,
                     const int64_t *pads, const int64_t *strides, const int64_t *opad) {
  FcValue *ops[3] = {x, w, b};
  /* The builder stores attributes in schema order whatever order they come in. */
  FcAttr a[5] = {FC_A_INTS(DILATIONS, dil, n), FC_A_INT(GROUP, group), FC_A_INTS(PADS, pads, 2 * n),
                 FC_A_INTS(STRIDES, strides, n), FC_A_INTS(OUTPUT_PADDING, opad, n)};
  return mk(c, k, ops, b ? 3 : 2, 1, a, k == FC_OP_CONV ? 4 : 5);
}

static void test_conv2d_group_pads_strides_dilations(void **state) {
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_F32, 4, D(1, 4, 5, 5), cv_x), *w = cst(c, FC_DT_F32, 4, D(4, 2, 3, 3), cv_w);
  FcValue *b = cst(c, FC_DT_F32, 1, D(4), cv_b);
  FcOp *op = conv_op(c, FC_OP_CONV, x, w, b, 2, D(1, 2), 2, D(1, 0, 2, 1), D(2, 1), NULL);
  FcTensor *y = ev(c, op)[0];
  expect_shape(y, FC_DT_F32, 4, D(1, 4, 3, 2));
  expect_f(y, NEL(cv_y), cv_y);
  ctx_free(c);
}

static void test_conv1d_int32(void **state) {
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_I32, 3, D(2, 3, 7), cv1_x), *w = cst(c, FC_DT_I32, 3, D(2, 3, 3), cv1_w);
  FcTensor *y = ev(c, conv_op(c, FC_OP_CONV, x, w, NULL, 1, D(1), 1, D(2, 1), D(2), NULL))[0];
  expect_shape(y, FC_DT_I32, 3, D(2, 2, 4));
  expect_ints(y, NEL(cv1_y), cv1_y, NULL);
  ctx_free(c);
}

static void test_conv3d(void **state) {
  Ctx *c = ctx_new();
  float bias[2] = {0.5f, -1.0f};
  FcValue *x = cst(c, FC_DT_F32, 5, D(1, 2, 3, 4, 3), cv3_x), *w = cst(c, FC_DT_F32, 5, D(2, 2, 2, 2, 2), cv3_w);
  FcValue *b = cst(c, FC_DT_F32, 1, D(2), bias);
  FcTensor *y = ev(c, conv_op(c, FC_OP_CONV, x, w, b, 3, D(1, 1, 2), 1, D(1, 0, 1, 0, 1, 0), D(1, 2, 1), NULL))[0];
  expect_shape(y, FC_DT_F32, 5, D(1, 2, 3, 2, 2));
  expect_f(y, NEL(cv3_y), cv3_y);
  ctx_free(c);
}

/* conv_blocked evaluates as conv on the unblocked tensors, blocked: dense over a blocked and over a plain
 * input (strided, padded) and depthwise, with an epilogue. Same arithmetic order, so exactly equal. */
static float lcg(uint32_t *st) {
  *st = *st * 1664525u + 1013904223u;
  return (float)((int32_t)(*st >> 9) % 17) / 8.0f;
}

static void fill(float *v, int64_t n, uint32_t seed) {
  for (int64_t i = 0; i < n; i++) v[i] = lcg(&seed);
}

static void block_nchw(const float *x, float *xb, int64_t N, int64_t C, int64_t S) {
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++)
      for (int64_t i = 0; i < S; i++) xb[((n * (C / 8) + ch / 8) * S + i) * 8 + ch % 8] = x[(n * C + ch) * S + i];
}

static void check_conv_blocked(int64_t C, int64_t M, int64_t group, bool plain_input, int64_t stride) {
  Ctx *c = ctx_new();
  enum { N = 2, H = 5, W = 6 };
  float x[N * 16 * H * W], xb[N * 16 * H * W], w[16 * 16 * 9], b[16];
  fill(x, N * C * H * W, 1);
  fill(w, M * (C / group) * 9, 2);
  fill(b, M, 3);
  block_nchw(x, xb, N, C, H * W);
  FcValue *xv = cst(c, FC_DT_F32, 4, D(N, C, H, W), x), *wv = cst(c, FC_DT_F32, 4, D(M, C / group, 3, 3), w);
  FcValue *bv = cst(c, FC_DT_F32, 1, D(M), b);
  FcValue *xbv = plain_input ? xv : cst(c, FC_DT_F32, 5, D(N, C / 8, H, W, 8), xb);
  const int64_t *dil = D(1, 1), *pads = D(1, 0, 1, 2), *strides = D(stride, stride);
  FcEwProgram relu_x;
  assert_null(fc_ew_program_parse("relu x", &relu_x));
  FcAttr a[5] = {FC_A_INTS(DILATIONS, dil, 2), FC_A_PROGRAM(EPILOGUE, &relu_x), FC_A_INT(GROUP, group),
                 FC_A_INTS(PADS, pads, 4), FC_A_INTS(STRIDES, strides, 2)};
  FcValue *ops[3] = {xv, wv, bv};
  FcTensor *y = ev(c, mk(c, FC_OP_CONV, ops, 3, 1, a, 5))[0];
  FcAttr ab[6] = {FC_A_INT(BLOCK, 8), a[0], a[1], a[2], a[3], a[4]};
  ops[0] = xbv;
  FcTensor *yb = ev(c, mk(c, FC_OP_CONV_BLOCKED, ops, 3, 1, ab, 6))[0];
  const int64_t *yd = y->type.dims;
  expect_shape(yb, FC_DT_F32, 5, D(yd[0], M / 8, yd[2], yd[3], 8));
  float want[N * 16 * H * W];
  block_nchw(y->data, want, yd[0], M, yd[2] * yd[3]);
  expect_f(yb, (int)(yd[0] * M * yd[2] * yd[3]), want);
  ctx_free(c);
}

static void test_conv_blocked_matches_conv(void **state) {
  check_conv_blocked(16, 8, 1, false, 1);  /* dense, blocked input */
  check_conv_blocked(16, 16, 1, false, 2); /* strided */
  check_conv_blocked(3, 16, 1, true, 2);   /* plain NCHW input (a first conv) */
  check_conv_blocked(16, 16, 16, false, 1); /* depthwise */
}

static void test_conv_transpose_group_stride_outpad(void **state) {
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_F32, 4, D(1, 4, 3, 3), ct_x), *w = cst(c, FC_DT_F32, 4, D(4, 1, 3, 2), ct_w);
  FcValue *b = cst(c, FC_DT_F32, 1, D(2), ct_b);
  FcOp *op = conv_op(c, FC_OP_CONV_TRANSPOSE, x, w, b, 2, D(1, 2), 2, D(1, 0, 0, 1), D(2, 3), D(1, 2));
  FcTensor *y = ev(c, op)[0];
  expect_shape(y, FC_DT_F32, 4, D(1, 2, 7, 10));
  expect_f(y, NEL(ct_y), ct_y);
  ctx_free(c);
}

/* ---- pools --------------------------------------------------------------------------------------- */

/* `flag` is count_include_pad for avg_pool, storage_order for max_pool. */
static FcOp *pool_op(Ctx *c, FcOpKind k, FcValue *x, int n_results, int64_t ceil, int64_t flag, const int64_t *dil,
                     const int64_t *kernel, const int64_t *pads, const int64_t *strides) {
  FcAttr a[6] = {FC_A_INT(CEIL_MODE, ceil), FC_A_INT(COUNT_INCLUDE_PAD, flag), FC_A_INTS(DILATIONS, dil, 2),
                 FC_A_INTS(KERNEL_SHAPE, kernel, 2), FC_A_INTS(PADS, pads, 4), FC_A_INTS(STRIDES, strides, 2)};
  if (k == FC_OP_MAX_POOL) a[1] = FC_A_INT(STORAGE_ORDER, flag);
  return mk(c, k, &x, 1, n_results, a, 6);
}

static void test_max_pool_ceil_dilation_indices(void **state) {
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_F32, 4, D(2, 2, 5, 6), mp_x);
  FcTensor **r = ev(c, pool_op(c, FC_OP_MAX_POOL, x, 2, 1, 0, D(1, 2), D(3, 2), D(1, 0, 1, 1), D(2, 2)));
  expect_shape(r[0], FC_DT_F32, 4, D(2, 2, 3, 3));
  expect_f(r[0], NEL(mp_y), mp_y);
  expect_shape(r[1], FC_DT_I64, 4, D(2, 2, 3, 3));
  expect_ints(r[1], NEL(mp_i), NULL, mp_i);
  /* storage_order 1: the spatial part of each index is column-major. */
  r = ev(c, pool_op(c, FC_OP_MAX_POOL, x, 2, 0, 1, D(2, 1), D(2, 2), D(0, 1, 1, 0), D(1, 2)));
  expect_shape(r[0], FC_DT_F32, 4, D(2, 2, 4, 3));
  expect_f(r[0], NEL(mp2_y), mp2_y);
  expect_ints(r[1], NEL(mp2_i), NULL, mp2_i);
  ctx_free(c);
}

static void test_max_pool_int8(void **state) {
  Ctx *c = ctx_new();
  /* Windows [-128 -128 | -128 7] and [-128 -5 | 7 -128]: both 7 at flat index 4. */
  int8_t x[6] = {-128, -128, -5, -128, 7, -128};
  int32_t want[2] = {7, 7};
  int64_t widx[2] = {4, 4};
  FcTensor **r = ev(c, pool_op(c, FC_OP_MAX_POOL, cst(c, FC_DT_I8, 4, D(1, 1, 2, 3), x), 2, 0, 0, D(1, 1), D(2, 2),
                              D(0, 0, 0, 0), D(1, 1)));
  expect_shape(r[0], FC_DT_I8, 4, D(1, 1, 1, 2));
  expect_ints(r[0], 2, want, NULL);
  expect_ints(r[1], 2, NULL, widx);
  ctx_free(c);
}

static void test_avg_pool_ceil_count_include_pad(void **state) {
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_F32, 4, D(1, 2, 3, 6), ap_x);
  /* H: ceil mode would add a window starting in the end padding, which is dropped (2 rows, not 3);
   * W: the last window covers input column 5, one end pad and one position past the padding. */
  FcTensor *y = ev(c, pool_op(c, FC_OP_AVG_POOL, x, 1, 1, 1, D(1, 1), D(2, 3), D(1, 1, 1, 1), D(2, 2)))[0];
  expect_shape(y, FC_DT_F32, 4, D(1, 2, 2, 4));
  expect_f(y, NEL(ap_y1), ap_y1);
  expect_f(ev(c, pool_op(c, FC_OP_AVG_POOL, x, 1, 1, 0, D(1, 1), D(2, 3), D(1, 1, 1, 1), D(2, 2)))[0], NEL(ap_y0),
           ap_y0);
  y = ev(c, pool_op(c, FC_OP_AVG_POOL, x, 1, 0, 1, D(2, 2), D(2, 2), D(1, 0, 1, 0), D(1, 1)))[0];
  expect_shape(y, FC_DT_F32, 4, D(1, 2, 3, 4));
  expect_f(y, NEL(ap_yd), ap_yd);
  ctx_free(c);
}

/* ---- data movement ------------------------------------------------------------------------------- */

static int32_t iota32[64];

static void test_reshape_transpose_broadcast(void **state) {
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_I32, 3, D(2, 3, 4), iota32);
  FcTensor *r = ev(c, fc_b_reshape(&c->b, x, 2, D(4, 6))->def)[0];
  expect_shape(r, FC_DT_I32, 2, D(4, 6));
  expect_ints(r, 24, iota32, NULL);
  FcTensor *t = ev(c, fc_b_transpose(&c->b, x, D(2, 0, 1))->def)[0];
  expect_shape(t, FC_DT_I32, 3, D(4, 2, 3));
  expect_ints(t, 24, tr_y, NULL);
  /* [3, 1] f16 broadcast to [2, 3, 2]: element (i, j, k) = x[j]. */
  uint16_t h[3] = {0x3c00, 0xc000, 0x7e00};
  FcValue *hb = fc_b_broadcast(&c->b, cst(c, FC_DT_F16, 2, D(3, 1), h), 3, D(2, 3, 2));
  FcTensor *b = ev(c, hb->def)[0];
  expect_shape(b, FC_DT_F16, 3, D(2, 3, 2));
  for (int i = 0; i < 12; i++) {
    uint16_t v;
    memcpy(&v, (const char *)b->data + 2 * i, 2);
    assert_int_equal(v, h[(i / 2) % 3]);
  }
  ctx_free(c);
}

static void test_concat_slice(void **state) {
  Ctx *c = ctx_new();
  int64_t a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, d[2] = {7, 8};
  FcValue *xs[3] = {cst(c, FC_DT_I64, 2, D(2, 1), a), cst(c, FC_DT_I64, 2, D(2, 2), b),
                    cst(c, FC_DT_I64, 2, D(2, 1), d)};
  FcTensor *y = ev(c, fc_b_concat(&c->b, xs, 3, 1)->def)[0];
  int64_t want[8] = {1, 3, 4, 7, 2, 5, 6, 8};
  expect_shape(y, FC_DT_I64, 2, D(2, 4));
  expect_ints(y, 8, NULL, want);
  /* x[4::-2, 1:4:2] of a 5x4 iota: start 4, end -1 (normalised "to the front"), step -2. */
  FcValue *s = fc_b_slice(&c->b, cst(c, FC_DT_I32, 2, D(5, 4), iota32), D(4, 1), D(-1, 4), D(-2, 2));
  FcTensor *sl = ev(c, s->def)[0];
  expect_shape(sl, FC_DT_I32, 2, D(3, 2));
  expect_ints(sl, 6, sl_y, NULL);
  ctx_free(c);
}

static FcTensor *pad_eval(Ctx *c, FcValue *x, FcValue *value, const char *mode, const int64_t *pads) {
  FcValue *ops[2] = {x, value};
  FcAttr a[2] = {FC_A_STR(MODE, mode), FC_A_INTS(PADS, pads, 2 * x->type.rank)};
  return ev(c, mk(c, FC_OP_PAD, ops, value ? 2 : 1, 1, a, 2))[0];
}

static void test_pad_modes(void **state) {
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_I32, 2, D(2, 3), iota32 + 1);
  /* Pads wider than the axis: reflect keeps mirroring and wrap keeps repeating, as numpy.pad. */
  FcTensor *y = pad_eval(c, x, NULL, "reflect", D(3, 4, 2, 5));
  expect_shape(y, FC_DT_I32, 2, D(7, 12));
  expect_ints(y, 84, pad_reflect, NULL);
  expect_ints(pad_eval(c, x, NULL, "edge", D(3, 4, 2, 5)), 84, pad_edge, NULL);
  expect_ints(pad_eval(c, x, NULL, "wrap", D(3, 4, 2, 5)), 84, pad_wrap, NULL);
  /* Negative begin pad on axis 1 crops; the constant comes from the value operand. */
  int32_t nine = 9;
  y = pad_eval(c, x, cst(c, FC_DT_I32, 0, NULL, &nine), "constant", D(1, -1, 0, 2));
  expect_shape(y, FC_DT_I32, 2, D(3, 4));
  expect_ints(y, 12, pad_crop, NULL);
  ctx_free(c);
}

static void test_reverse_sequence(void **state) {
  Ctx *c = ctx_new();
  int64_t lens[4] = {4, 3, 2, 1}, lens2[4] = {1, 2, 3, 4};
  int32_t want_t0[16] = {12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15};
  int32_t want_b0[16] = {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12};
  FcValue *x = cst(c, FC_DT_I32, 2, D(4, 4), iota32);
  FcValue *ops[2] = {x, cst(c, FC_DT_I64, 1, D(4), lens)};
  FcAttr a[2] = {FC_A_INT(BATCH_AXIS, 1), FC_A_INT(TIME_AXIS, 0)};
  expect_ints(ev(c, mk(c, FC_OP_REVERSE_SEQUENCE, ops, 2, 1, a, 2))[0], 16, want_t0, NULL);
  FcAttr b[2] = {FC_A_INT(BATCH_AXIS, 0), FC_A_INT(TIME_AXIS, 1)};
  ops[1] = cst(c, FC_DT_I64, 1, D(4), lens2);
  expect_ints(ev(c, mk(c, FC_OP_REVERSE_SEQUENCE, ops, 2, 1, b, 2))[0], 16, want_b0, NULL);
  int64_t bad[4] = {1, 5, 1, 1};
  ops[1] = cst(c, FC_DT_I64, 1, D(4), bad);
  ev_fails(c, mk(c, FC_OP_REVERSE_SEQUENCE, ops, 2, 1, b, 2), FC_ERR_INPUT, "sequence length 5 of batch 1");
  ctx_free(c);
}

/* ---- gathers and scatters ------------------------------------------------------------------------ */

static float d34[12];

static void test_gather(void **state) {
  Ctx *c = ctx_new();
  int64_t idx[4] = {0, -1, 2, -4};
  FcValue *ops[2] = {cst(c, FC_DT_F32, 2, D(3, 4), d34), cst(c, FC_DT_I64, 2, D(2, 2), idx)};
  FcAttr a = FC_A_INT(AXIS, 1);
  FcTensor *y = ev(c, mk(c, FC_OP_GATHER, ops, 2, 1, &a, 1))[0];
  expect_shape(y, FC_DT_F32, 3, D(3, 2, 2));
  expect_f(y, 12, ga_y);
  int32_t bad[2] = {1, 4};
  ops[1] = cst(c, FC_DT_I32, 1, D(2), bad);
  ev_fails(c, mk(c, FC_OP_GATHER, ops, 2, 1, &a, 1), FC_ERR_INPUT, "gather: index 4 out of range [-4, 4)");
  ctx_free(c);
}

static void test_gather_elements_nd(void **state) {
  Ctx *c = ctx_new();
  int64_t data[12], gei[6] = {3, -1, 0, 0, 1, -4};
  for (int i = 0; i < 12; i++) data[i] = i;
  FcValue *ops[2] = {cst(c, FC_DT_I64, 2, D(4, 3), data), cst(c, FC_DT_I64, 2, D(2, 3), gei)};
  FcAttr a = FC_A_INT(AXIS, 0);
  FcTensor *y = ev(c, mk(c, FC_OP_GATHER_ELEMENTS, ops, 2, 1, &a, 1))[0];
  expect_shape(y, FC_DT_I64, 2, D(2, 3));
  expect_ints(y, 6, NULL, ge_y);
  int64_t bad[6] = {0, 0, -5, 0, 0, 0};
  ops[1] = cst(c, FC_DT_I64, 2, D(2, 3), bad);
  ev_fails(c, mk(c, FC_OP_GATHER_ELEMENTS, ops, 2, 1, &a, 1), FC_ERR_INPUT, "index -5 out of range [-4, 4)");

  /* gather_nd with batch_dims 1: data [2, 3, 4], indices [2, 2, 2] address single elements. */
  float dn[24];
  for (int i = 0; i < 24; i++) dn[i] = (float)i;
  int32_t ind[8] = {1, -1, 0, 0, 2, 3, -3, 1};
  FcValue *nops[2] = {cst(c, FC_DT_F32, 3, D(2, 3, 4), dn), cst(c, FC_DT_I32, 3, D(2, 2, 2), ind)};
  FcAttr bd = FC_A_INT(BATCH_DIMS, 1);
  y = ev(c, mk(c, FC_OP_GATHER_ND, nops, 2, 1, &bd, 1))[0];
  expect_shape(y, FC_DT_F32, 2, D(2, 2));
  expect_f(y, 4, gnd_y);
  int32_t bad_nd[8] = {1, -1, 0, 0, 2, 4, 0, 0};
  nops[1] = cst(c, FC_DT_I32, 3, D(2, 2, 2), bad_nd);
  ev_fails(c, mk(c, FC_OP_GATHER_ND, nops, 2, 1, &bd, 1), FC_ERR_INPUT, "index 4 out of range [-4, 4)");
  ctx_free(c);
}

static void test_scatter_elements_reductions(void **state) {
  Ctx *c = ctx_new();
  float data[8] = {1, 2, 3, 4, 5, 6, 7, 8}, upd[6] = {10, 20, -5, 2, 0.5f, 3};
  int64_t idx[6] = {1, -3, 0, 3, 3, -1}; /* row 0 hits column 1 twice, row 1 hits column 3 three times */
  const char *reds[5] = {"none", "add", "mul", "max", "min"};
  const float *want[5] = {se_none, se_add, se_mul, se_max, se_min};
  FcValue *ops[3] = {cst(c, FC_DT_F32, 2, D(2, 4), data), cst(c, FC_DT_I64, 2, D(2, 3), idx),
                     cst(c, FC_DT_F32, 2, D(2, 3), upd)};
  for (int r = 0; r < 5; r++) {
    FcAttr a[2] = {FC_A_INT(AXIS, 1), FC_A_STR(REDUCTION, reds[r])};
    FcTensor *y = ev(c, mk(c, FC_OP_SCATTER_ELEMENTS, ops, 3, 1, a, 2))[0];
    expect_shape(y, FC_DT_F32, 2, D(2, 4));
    expect_f(y, 8, want[r]);
  }
  int64_t bad[6] = {1, 1, 1, 1, 1, 4};
  ops[1] = cst(c, FC_DT_I64, 2, D(2, 3), bad);
  FcAttr a[2] = {FC_A_INT(AXIS, 1), FC_A_STR(REDUCTION, "add")};
  ev_fails(c, mk(c, FC_OP_SCATTER_ELEMENTS, ops, 3, 1, a, 2), FC_ERR_INPUT, "index 4 out of range [-4, 4)");
  ctx_free(c);
}

static void test_scatter_nd_reductions(void **state) {
  Ctx *c = ctx_new();
  int64_t idx[3] = {2, 0, -1}; /* rows 2 and -1 are the same row */
  int32_t upd[12] = {1, 2, 3, 4, 5, 6, 7, 8, -1, -1, 10, 2};
  const char *reds[5] = {"none", "add", "mul", "max", "min"};
  const int32_t *want[5] = {snd_none, snd_add, snd_mul, snd_max, snd_min};
  FcValue *ops[3] = {cst(c, FC_DT_I32, 2, D(3, 4), iota32), cst(c, FC_DT_I64, 2, D(3, 1), idx),
                     cst(c, FC_DT_I32, 2, D(3, 4), upd)};
  for (int r = 0; r < 5; r++) {
    FcAttr a = FC_A_STR(REDUCTION, reds[r]);
    FcTensor *y = ev(c, mk(c, FC_OP_SCATTER_ND, ops, 3, 1, &a, 1))[0];
    expect_shape(y, FC_DT_I32, 2, D(3, 4));
    expect_ints(y, 12, want[r], NULL);
  }
  int64_t bad[3] = {0, -4, 1};
  ops[1] = cst(c, FC_DT_I64, 2, D(3, 1), bad);
  FcAttr a = FC_A_STR(REDUCTION, "none");
  ev_fails(c, mk(c, FC_OP_SCATTER_ND, ops, 3, 1, &a, 1), FC_ERR_INPUT, "index -4 out of range [-3, 3)");
  ctx_free(c);
}

static void test_topk_ties_nan(void **state) {
  Ctx *c = ctx_new();
  float x[10] = {3, 1, 3, NAN, -2, 0, 0, -1, 5, 0};
  FcValue *xv = cst(c, FC_DT_F32, 2, D(2, 5), x);
  /* largest: NaN ranks above every number; equal values keep index order. */
  FcAttr a[4] = {FC_A_INT(AXIS, 1), FC_A_INT(K, 3), FC_A_INT(LARGEST, 1), FC_A_INT(SORTED, 1)};
  FcTensor **r = ev(c, mk(c, FC_OP_TOPK, &xv, 1, 2, a, 4));
  float wv[6] = {NAN, 3, 3, 5, 0, 0};
  int64_t wi[6] = {3, 0, 2, 3, 0, 1};
  expect_shape(r[0], FC_DT_F32, 2, D(2, 3));
  expect_f(r[0], 6, wv);
  expect_ints(r[1], 6, NULL, wi);
  a[2] = FC_A_INT(LARGEST, 0);
  r = ev(c, mk(c, FC_OP_TOPK, &xv, 1, 2, a, 4));
  float sv[6] = {-2, 1, 3, -1, 0, 0};
  int64_t si[6] = {4, 1, 0, 2, 0, 1};
  expect_f(r[0], 6, sv);
  expect_ints(r[1], 6, NULL, si);
  /* Along axis 0 with k = 1: per column max(3, 0), max(1, 0), max(3, -1), max(NaN, 5), max(-2, 0). */
  FcAttr b[4] = {FC_A_INT(AXIS, 0), FC_A_INT(K, 1), FC_A_INT(LARGEST, 1), FC_A_INT(SORTED, 1)};
  r = ev(c, mk(c, FC_OP_TOPK, &xv, 1, 2, b, 4));
  float cv[5] = {3, 1, 3, NAN, 0};
  int64_t ci[5] = {0, 0, 0, 0, 1};
  expect_f(r[0], 5, cv);
  expect_ints(r[1], 5, NULL, ci);
  ctx_free(c);
}

static void test_one_hot(void **state) {
  Ctx *c = ctx_new();
  int64_t idx[3] = {1, -1, 5}; /* -1 is depth-1; 5 is out of range and gives a row of off values */
  int32_t vals[2] = {2, 9};
  FcValue *ops[2] = {cst(c, FC_DT_I64, 1, D(3), idx), cst(c, FC_DT_I32, 1, D(2), vals)};
  FcAttr a[2] = {FC_A_INT(AXIS, 1), FC_A_INT(DEPTH, 4)};
  FcTensor *y = ev(c, mk(c, FC_OP_ONE_HOT, ops, 2, 1, a, 2))[0];
  int32_t w1[12] = {2, 9, 2, 2, 2, 2, 2, 9, 2, 2, 2, 2};
  expect_shape(y, FC_DT_I32, 2, D(3, 4));
  expect_ints(y, 12, w1, NULL);
  a[0] = FC_A_INT(AXIS, 0);
  y = ev(c, mk(c, FC_OP_ONE_HOT, ops, 2, 1, a, 2))[0];
  int32_t w0[12] = {2, 2, 2, 9, 2, 2, 2, 2, 2, 2, 9, 2};
  expect_shape(y, FC_DT_I32, 2, D(4, 3));
  expect_ints(y, 12, w0, NULL);
  ctx_free(c);
}

/* ---- resize -------------------------------------------------------------------------------------- */

typedef struct ResizeCase {
  const char *mode, *ctm, *nearest;
  float cubic_a;
  int exclude_outside;
  const float *scales; /* 4 or NULL (scale = size / input, as when the model gives sizes) */
  const float *roi;    /* 8 or NULL */
  int64_t h, w;        /* result spatial size */
  const float *want;
} ResizeCase;

static const float sc_17_23[4] = {1, 1, 1.7f, 2.3f}, sc_06[4] = {1, 1, 0.6f, 0.6f}, sc_2_15[4] = {1, 1, 2, 1.5f},
                   sc_15_125[4] = {1, 1, 1.5f, 1.25f};
static const float crop_roi[8] = {0, 0, 0.2f, 0.1f, 1, 1, 1.1f, 0.7f};

static FcOp *resize_op(Ctx *c, FcValue *x, const ResizeCase *k, float extrap, int rank, const int64_t *sizes) {
  FcAttr a[9] = {FC_A_STR(COORDINATE_TRANSFORMATION_MODE, k->ctm), FC_A_FLOAT(CUBIC_COEFF_A, k->cubic_a),
                 FC_A_INT(EXCLUDE_OUTSIDE, k->exclude_outside), FC_A_FLOAT(EXTRAPOLATION_VALUE, extrap),
                 FC_A_STR(MODE, k->mode), FC_A_STR(NEAREST_MODE, k->nearest),
                 FC_A_FLOATS(ROI, k->roi, k->roi ? 2 * rank : 0), FC_A_FLOATS(SCALES, k->scales, k->scales ? rank : 0),
                 FC_A_INTS(SIZES, sizes, rank)};
  return mk(c, FC_OP_RESIZE, &x, 1, 1, a, 9);
}

static void test_resize_modes(void **state) {
  static const ResizeCase cases[] = {
      {"nearest", "half_pixel", "round_prefer_floor", -0.75f, 0, sc_17_23, NULL, 5, 9, rs_nearest_hp},
      {"nearest", "align_corners", "floor", -0.75f, 0, NULL, NULL, 5, 7, rs_nearest_floor_ac},
      {"nearest", "half_pixel", "ceil", -0.75f, 0, NULL, NULL, 2, 3, rs_nearest_ceil_hp},
      /* scale 2 asymmetric: x/2 lands on .5 at every odd x, where the two round modes differ */
      {"nearest", "asymmetric", "round_prefer_ceil", -0.75f, 0, NULL, NULL, 6, 8, rs_nearest_rpc_asym},
      {"nearest", "asymmetric", "round_prefer_floor", -0.75f, 0, NULL, NULL, 6, 8, rs_nearest_rpf_asym},
      {"linear", "half_pixel", "round_prefer_floor", -0.75f, 0, sc_06, NULL, 1, 2, rs_linear_down},
      {"linear", "align_corners", "round_prefer_floor", -0.75f, 0, sc_2_15, NULL, 6, 6, rs_linear_ac},
      {"linear", "pytorch_half_pixel", "round_prefer_floor", -0.75f, 0, NULL, NULL, 1, 3, rs_linear_pt},
      {"cubic", "half_pixel", "round_prefer_floor", -0.5f, 1, sc_15_125, NULL, 4, 5, rs_cubic_ex},
      {"cubic", "asymmetric", "round_prefer_floor", -0.75f, 0, NULL, NULL, 4, 3, rs_cubic_asym},
      {"linear", "tf_crop_and_resize", "round_prefer_floor", -0.75f, 0, NULL, crop_roi, 4, 5, rs_crop},
      {"nearest", "tf_crop_and_resize", "round_prefer_floor", -0.75f, 0, NULL, crop_roi, 4, 5, rs_crop_n},
  };
  Ctx *c = ctx_new();
  FcValue *x = cst(c, FC_DT_F32, 4, D(1, 1, 3, 4), rs_x);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const ResizeCase *k = &cases[i];
    int64_t sizes[4] = {1, 1, k->h, k->w};
    FcTensor *y = ev(c, resize_op(c, x, k, -7.5f, 4, sizes))[0];
    expect_shape(y, FC_DT_F32, 4, sizes);
    print_message("resize case %zu (%s, %s)\n", i, k->mode, k->ctm);
    expect_vals(y, (int)(k->h * k->w), 1e-6, k->want, NULL);
  }
  ctx_free(c);
}

static void test_resize_3d_linear_and_int_nearest(void **state) {
  Ctx *c = ctx_new();
  static const ResizeCase lin = {"linear", "half_pixel", "round_prefer_floor", -0.75f, 0, NULL, NULL, 0, 0, NULL};
  FcTensor *y = ev(c, resize_op(c, cst(c, FC_DT_F32, 3, D(2, 3, 4), rs3_x), &lin, 0, 3, D(3, 5, 2)))[0];
  expect_shape(y, FC_DT_F32, 3, D(3, 5, 2));
  expect_vals(y, 30, 1e-6, rs3_y, NULL);
  /* i8 nearest, scale 2 asymmetric floor: every element repeated 2x2. */
  static const float sc2[4] = {1, 1, 2, 2};
  static const ResizeCase nn = {"nearest", "asymmetric", "floor", -0.75f, 0, sc2, NULL, 0, 0, NULL};
  int8_t x8[4] = {1, -2, 3, -4};
  int32_t want[16] = {1, 1, -2, -2, 1, 1, -2, -2, 3, 3, -4, -4, 3, 3, -4, -4};
  y = ev(c, resize_op(c, cst(c, FC_DT_I8, 4, D(1, 1, 2, 2), x8), &nn, 0, 4, D(1, 1, 4, 4)))[0];
  expect_shape(y, FC_DT_I8, 4, D(1, 1, 4, 4));
  expect_ints(y, 16, want, NULL);
  ctx_free(c);
}

/* ---- einsum, det --------------------------------------------------------------------------------- */

static FcTensor *einsum(Ctx *c, const char *eq, FcValue *const *ops, int n) {
  FcAttr a = FC_A_STR(EQUATION, eq);
  return ev(c, mk(c, FC_OP_EINSUM, ops, n, 1, &a, 1))[0];
}

static void test_einsum(void **state) {
  Ctx *c = ctx_new();
  FcValue *abc[3] = {cst(c, FC_DT_F32, 2, D(3, 4), es_a), cst(c, FC_DT_F32, 2, D(4, 2), es_b),
                     cst(c, FC_DT_F32, 2, D(2, 5), es_c)};
  FcTensor *y = einsum(c, "ij,jk,kl->il", abc, 3);
  expect_shape(y, FC_DT_F32, 2, D(3, 5));
  expect_f(y, 15, es_abc);
  FcValue *s = cst(c, FC_DT_F32, 2, D(3, 3), es_s);
  expect_f(einsum(c, "ii->i", &s, 1), 3, es_diag);
  y = einsum(c, "ii", &s, 1); /* implicit output: no label appears once, so a scalar (the trace) */
  assert_int_equal(y->type.rank, 0);
  expect_f(y, 1, es_trace);
  /* Implicit output with broadcast ellipsis dims: [2,1] and [3] broadcast to [2,3], then i, k. */
  FcValue *e[2] = {cst(c, FC_DT_F32, 4, D(2, 1, 3, 4), es_e1), cst(c, FC_DT_F32, 3, D(3, 4, 2), es_e2)};
  y = einsum(c, " ... ij , ...jk", e, 2);
  expect_shape(y, FC_DT_F32, 4, D(2, 3, 3, 2));
  expect_f(y, 36, es_ell);
  /* A letter of size 1 broadcasts (as numpy allows). */
  FcValue *pq[2] = {cst(c, FC_DT_F32, 2, D(2, 1), es_p), cst(c, FC_DT_F32, 2, D(2, 3), es_q)};
  y = einsum(c, "ij,ij->ji", pq, 2);
  expect_shape(y, FC_DT_F32, 2, D(3, 2));
  expect_f(y, 6, es_pq);
  float b33[18];
  for (int i = 0; i < 18; i++) b33[i] = (float)i;
  FcValue *bd = cst(c, FC_DT_F32, 3, D(2, 3, 3), b33);
  expect_f(einsum(c, "bii->bi", &bd, 1), 6, es_bdiag);
  /* Integers wrap: (2^31 - 1) + 1 in i32 is -2^31. */
  int32_t iv[2] = {INT32_MAX, 1}, one[2] = {1, 1}, want = INT32_MIN;
  FcValue *ii[2] = {cst(c, FC_DT_I32, 1, D(2), iv), cst(c, FC_DT_I32, 1, D(2), one)};
  expect_ints(einsum(c, "i,i->", ii, 2), 1, &want, NULL);
  ctx_free(c);
}

static void test_det(void **state) {
  Ctx *c = ctx_new();
  /* A random matrix with a zero pivot at [0, 0] (needs a row swap) and a singular one. */
  FcValue *x = cst(c, FC_DT_F64, 3, D(2, 3, 3), det_x);
  FcTensor *y = ev(c, mk(c, FC_OP_DET, &x, 1, 1, NULL, 0))[0];
  expect_shape(y, FC_DT_F64, 1, D(2));
  expect_vals(y, 2, 1e-12, NULL, det_y);
  assert_true(fabs(fc_tensor_get_f64(y, 1)) < 1e-12);
  float m2[4] = {2, 3, 1, 4}; /* 2*4 - 3*1 = 5 */
  FcValue *x2 = cst(c, FC_DT_F32, 2, D(2, 2), m2);
  y = ev(c, mk(c, FC_OP_DET, &x2, 1, 1, NULL, 0))[0];
  assert_int_equal(y->type.rank, 0);
  assert_true(fc_tensor_get_f64(y, 0) == 5.0);
  ctx_free(c);
}

/* ---- grid_sample, roi_align ---------------------------------------------------------------------- */

static void test_grid_sample_all_modes(void **state) {
  static const float *const want[18] = {gs_y0,  gs_y1,  gs_y2,  gs_y3,  gs_y4,  gs_y5,  gs_y6,  gs_y7,  gs_y8,
                                        gs_y9,  gs_y10, gs_y11, gs_y12, gs_y13, gs_y14, gs_y15, gs_y16, gs_y17};
  static const char *const modes[3] = {"bilinear", "nearest", "bicubic"};
  static const char *const pads[3] = {"zeros", "border", "reflection"};
  Ctx *c = ctx_new();
  FcValue *ops[2] = {cst(c, FC_DT_F32, 4, D(1, 2, 3, 4), gs_x), cst(c, FC_DT_F32, 4, D(1, 2, 3, 2), gs_g)};
  for (int i = 0; i < 18; i++) {
    FcAttr a[3] = {FC_A_INT(ALIGN_CORNERS, i % 2), FC_A_STR(MODE, modes[i / 6]),
                   FC_A_STR(PADDING_MODE, pads[i / 2 % 3])};
    FcTensor *y = ev(c, mk(c, FC_OP_GRID_SAMPLE, ops, 2, 1, a, 3))[0];
    expect_shape(y, FC_DT_F32, 4, D(1, 2, 2, 3));
    print_message("grid_sample %s %s align_corners=%d\n", modes[i / 6], pads[i / 2 % 3], i % 2);
    expect_vals(y, 12, 1e-6, want[i], NULL);
  }
  ctx_free(c);
}

static FcOp *roi_op(Ctx *c, FcValue *const *ops, const char *ctm, const char *mode, int64_t ratio, float scale) {
  FcAttr a[6] = {FC_A_STR(COORDINATE_TRANSFORMATION_MODE, ctm), FC_A_STR(MODE, mode), FC_A_INT(OUTPUT_HEIGHT, 3),
                 FC_A_INT(OUTPUT_WIDTH, 2), FC_A_INT(SAMPLING_RATIO, ratio), FC_A_FLOAT(SPATIAL_SCALE, scale)};
  return mk(c, FC_OP_ROI_ALIGN, ops, 3, 1, a, 6);
}

static void test_roi_align(void **state) {
  Ctx *c = ctx_new();
  int64_t bi[3] = {1, 0, 1};
  FcValue *ops[3] = {cst(c, FC_DT_F32, 4, D(2, 2, 5, 6), ra_x), cst(c, FC_DT_F32, 2, D(3, 4), ra_rois),
                     cst(c, FC_DT_I64, 1, D(3), bi)};
  FcTensor *y = ev(c, roi_op(c, ops, "half_pixel", "avg", 0, 0.5f))[0];
  expect_shape(y, FC_DT_F32, 4, D(3, 2, 3, 2));
  expect_vals(y, 36, 1e-6, ra_y0, NULL);
  /* max mode takes the max of the weighted corner values, as ONNX Runtime does. */
  expect_vals(ev(c, roi_op(c, ops, "output_half_pixel", "max", 2, 1.0f))[0], 36, 1e-6, ra_y1, NULL);
  int64_t bad[3] = {1, 2, 0};
  ops[2] = cst(c, FC_DT_I64, 1, D(3), bad);
  ev_fails(c, roi_op(c, ops, "half_pixel", "avg", 0, 0.5f), FC_ERR_INPUT, "batch index 2 of roi 1 out of range [0, 2)");
  ctx_free(c);
}

/* ---- limits -------------------------------------------------------------------------------------- */

static void test_work_limit(void **state) {
  Ctx *c = ctx_new();
  FcValue *ops[2] = {cst(c, FC_DT_F32, 3, D(2, 2, 3), mm_a), cst(c, FC_DT_F32, 2, D(3, 2), mm_b)};
  FcOp *op = mk(c, FC_OP_MATMUL, ops, 2, 1, NULL, 0);
  /* Too much work is "leave the op alone" (unsupported), not a model error. */
  int64_t big[3] = {(int64_t)1 << 20, (int64_t)1 << 20, (int64_t)1 << 10};
  assert_int_equal(fc_ev_work(op, &c->d, 3, big), FC_ERR_UNSUPPORTED);
  int64_t ok[3] = {1 << 10, 1 << 10, 1 << 10};
  assert_int_equal(fc_ev_work(op, &c->d, 3, ok), FC_OK);
  ctx_free(c);
}

int main(void) {
  for (int i = 0; i < 64; i++) iota32[i] = i;
  for (int i = 0; i < 12; i++) d34[i] = 1.5f * (float)i;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_f32_broadcast),
      cmocka_unit_test(test_matmul_int_wraps),
      cmocka_unit_test(test_matmul_f16_rounds_once),
      cmocka_unit_test(test_conv2d_group_pads_strides_dilations),
      cmocka_unit_test(test_conv1d_int32),
      cmocka_unit_test(test_conv3d),
      cmocka_unit_test(test_conv_transpose_group_stride_outpad),
      cmocka_unit_test(test_conv_blocked_matches_conv),
      cmocka_unit_test(test_max_pool_ceil_dilation_indices),
      cmocka_unit_test(test_max_pool_int8),
      cmocka_unit_test(test_avg_pool_ceil_count_include_pad),
      cmocka_unit_test(test_reshape_transpose_broadcast),
      cmocka_unit_test(test_concat_slice),
      cmocka_unit_test(test_pad_modes),
      cmocka_unit_test(test_reverse_sequence),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_gather_elements_nd),
      cmocka_unit_test(test_scatter_elements_reductions),
      cmocka_unit_test(test_scatter_nd_reductions),
      cmocka_unit_test(test_topk_ties_nan),
      cmocka_unit_test(test_one_hot),
      cmocka_unit_test(test_resize_modes),
      cmocka_unit_test(test_resize_3d_linear_and_int_nearest),
      cmocka_unit_test(test_einsum),
      cmocka_unit_test(test_det),
      cmocka_unit_test(test_grid_sample_all_modes),
      cmocka_unit_test(test_roi_align),
      cmocka_unit_test(test_work_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
