/* fashion_classify.c — the main job: classify Fashion-MNIST's 10,000 test images with a model that
 * `flowc build --emit lib` compiled, and print the accuracy and the speed.
 *
 *     flowc build examples/fashion_cnn.onnx --shape image=100x1x28x28 --emit lib -o out/libfashion_cnn.a
 *     cc -O2 -Iruntime tools/fashion_classify.c tools/idx.c out/libfashion_cnn.a -lz -lm -lpthread
 *     ./a.out [--images FILE] [--labels FILE] [--threads N] [--expect N]
 *
 * The program knows nothing about the network: it links the compiled model's descriptor (FLOWC_MODEL,
 * default `fashion_cnn_model`, the name `-o libfashion_cnn.a` gives it; see runtime/flowrt.h) and checks
 * that it takes f32 images of 28x28 pixels in batches of B (dims B x 1 x 28 x 28 or B x 784) and returns
 * f32 scores B x C. Pixels are scaled exactly as tools/train_example.py scales them for PyTorch
 * (`images.astype(np.float32) / 255.0`: one float division per pixel), so the predictions, and with
 * them the accuracy, equal PyTorch's on the same weights. The images are converted once, up front;
 * then the model runs over consecutive batches straight out of that buffer (the last one padded with
 * zeros when B does not divide the count), and only those runs and the argmax are timed. --expect N
 * exits 1 unless exactly N images are right.
 * Exit status: 0 success; 1 bad data, a model of the wrong shape or a missed --expect; 2 bad usage.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt.h"
#include "idx.h"

#ifndef FLOWC_MODEL
#define FLOWC_MODEL fashion_cnn_model
#endif
extern const FrtModel FLOWC_MODEL;

#define DATA_DIR "/usr/share/datasets/fashion-mnist/"
#define PIXELS 784                     /* 28 x 28 */
#define MAX_DATA_BYTES ((size_t)1 << 30) /* far above the 7.8 MB of the test images */

typedef struct Options {
  const char *images, *labels;
  int threads;
  long expect; /* -1: no check */
} Options;

static int usage(const char *msg, const char *arg) {
  fprintf(stderr, "fashion_classify: error: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
  fprintf(stderr, "usage: fashion_classify [--images FILE] [--labels FILE] [--threads N] [--expect N]\n");
  return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_options(int argc, char **argv, Options *o) {
  o->images = DATA_DIR "t10k-images-idx3-ubyte.gz";
  o->labels = DATA_DIR "t10k-labels-idx1-ubyte.gz";
  o->threads = 0;
  o->expect = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("usage: fashion_classify [--images FILE] [--labels FILE] [--threads N] [--expect N]\n"
             "Classifies IDX images (default: Fashion-MNIST's test set in " DATA_DIR ") with the linked\n"
             "model and prints the accuracy and images/s. --threads 0 (the default): one per online core.\n"
             "--expect N: exit 1 unless exactly N images are classified correctly.\n");
      return 0;
    }
    if (strcmp(a, "--images") != 0 && strcmp(a, "--labels") != 0 && strcmp(a, "--threads") != 0 &&
        strcmp(a, "--expect") != 0)
      return usage("unknown option", a);
    if (i + 1 >= argc) return usage("missing value after", a);
    const char *v = argv[++i];
    long n;
    if (strcmp(a, "--images") == 0) {
      o->images = v;
    } else if (strcmp(a, "--labels") == 0) {
      o->labels = v;
    } else if (strcmp(a, "--threads") == 0) {
      if (parse_long(v, 0, 1024, &n) != 0) return usage("--threads needs a count from 0 to 1024, got", v);
      o->threads = (int)n;
    } else {
      if (parse_long(v, 0, 1L << 30, &n) != 0) return usage("--expect needs a count of images, got", v);
      o->expect = n;
    }
  }
  return -1;
}

/* Checks that the model maps a batch of B images to B rows of C scores; sets *batch and *classes. */
static int check_model(const FrtModel *m, int64_t *batch, int64_t *classes) {
  if (m->abi_version != FRT_ABI_VERSION || m->n_inputs != 1 || m->n_outputs != 1) {
    fprintf(stderr, "fashion_classify: error: model '%s' must have one input and one output (it has %d and %d)\n",
            m->name, m->n_inputs, m->n_outputs);
    return -1;
  }
  const FrtTensorDesc *in = &m->inputs[0], *out = &m->outputs[0];
  bool in_ok = in->dtype == FRT_F32 && in->rank >= 2 && in->dims[0] > 0;
  int64_t per_image = 1;
  for (int i = 1; in_ok && i < in->rank; i++) per_image *= in->dims[i];
  in_ok = in_ok && per_image == PIXELS;
  bool out_ok = out->dtype == FRT_F32 && out->rank == 2 && out->dims[0] == (in_ok ? in->dims[0] : -1) &&
                out->dims[1] > 0;
  if (!in_ok || !out_ok) {
    fprintf(stderr, "fashion_classify: error: model '%s' must map f32 images [B,1,28,28] to f32 scores [B,C]; "
            "its input '%s' is %s of rank %d, its output '%s' %s of rank %d\n",
            m->name, in->name, frt_dtype_name(in->dtype), in->rank, out->name, frt_dtype_name(out->dtype), out->rank);
    return -1;
  }
  *batch = in->dims[0];
  *classes = out->dims[1];
  return 0;
}

/* Reads the images and labels; converts the pixels to floats in [0,1]. */
static int load_data(const Options *o, int64_t classes, float **pixels, uint8_t **labels, size_t *count) {
  char err[512];
  IdxArray im, lb;
  if (idx_read(o->images, MAX_DATA_BYTES, &im, err, sizeof err) != 0) {
    fprintf(stderr, "fashion_classify: error: %s\n", err);
    return -1;
  }
  if (idx_read(o->labels, MAX_DATA_BYTES, &lb, err, sizeof err) != 0) {
    fprintf(stderr, "fashion_classify: error: %s\n", err);
    idx_free(&im);
    return -1;
  }
  int rc = -1;
  if (im.type != IDX_U8 || im.rank != 3 || im.dims[1] != 28 || im.dims[2] != 28 || im.dims[0] == 0) {
    fprintf(stderr, "fashion_classify: error: %s: want u8 images of 28x28 pixels (an IDX array N x 28 x 28)\n",
            o->images);
  } else if (lb.type != IDX_U8 || lb.rank != 1 || lb.dims[0] != im.dims[0]) {
    fprintf(stderr, "fashion_classify: error: %s: want %u u8 labels (one per image)\n", o->labels, im.dims[0]);
  } else {
    const uint8_t *l = lb.data;
    size_t n = im.dims[0], bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
      if (l[i] >= classes) bad = i;
    float *px = bad == n ? malloc(im.count * sizeof *px) : NULL;
    if (bad != n) {
      fprintf(stderr, "fashion_classify: error: %s: label %u of image %zu is not below the model's %lld classes\n",
              o->labels, l[bad], bad, (long long)classes);
    } else if (!px) {
      fprintf(stderr, "fashion_classify: error: out of memory\n");
    } else {
      /* float / float, as NumPy divides a float32 array by the scalar 255.0. */
      const uint8_t *p = im.data;
      for (size_t i = 0; i < im.count; i++) px[i] = (float)p[i] / 255.0f;
      *pixels = px;
      *labels = lb.data;
      lb.data = NULL;
      *count = n;
      rc = 0;
    }
  }
  idx_free(&im);
  idx_free(&lb);
  return rc;
}

static size_t argmax(const float *v, int64_t n) {
  size_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = (size_t)i; /* the first maximum, as numpy/torch argmax */
  return best;
}

int main(int argc, char **argv) {
  Options o;
  int r = parse_options(argc, argv, &o);
  if (r >= 0) return r;
  const FrtModel *m = &FLOWC_MODEL;
  int64_t batch, classes;
  if (check_model(m, &batch, &classes) != 0) return 1;

  float *pixels = NULL;
  uint8_t *labels = NULL;
  size_t count = 0;
  if (load_data(&o, classes, &pixels, &labels, &count) != 0) return 1;

  int status = 1;
  FrtError err = {0};
  size_t ws_size = frt_model_workspace_size(m);
  size_t ws_alloc = (ws_size + 63) / 64 * 64;
  size_t per_batch = (size_t)batch * PIXELS;
  void *ws = aligned_alloc(64, ws_alloc ? ws_alloc : 64);
  float *tail = calloc(per_batch, sizeof *tail); /* the last, zero-padded batch */
  float *scores = malloc((size_t)batch * (size_t)classes * sizeof *scores);
  FrtPool *pool = frt_pool_create(o.threads, &err);
  if (!ws || !tail || !scores || !pool) {
    fprintf(stderr, "fashion_classify: error: %s\n", pool ? "out of memory" : err.msg);
    goto done;
  }

  size_t correct = 0, runs = 0;
  double t0 = frt_now_seconds();
  for (size_t first = 0; first < count; first += (size_t)batch, runs++) {
    size_t n = count - first < (size_t)batch ? count - first : (size_t)batch;
    const float *x = pixels + first * PIXELS;
    if (n < (size_t)batch) {
      memcpy(tail, x, n * PIXELS * sizeof *tail);
      x = tail;
    }
    const void *inputs[] = {x};
    void *outputs[] = {scores};
    if (frt_model_run(m, inputs, outputs, ws, pool, &err) != FRT_OK) {
      fprintf(stderr, "fashion_classify: error: %s\n", err.msg);
      goto done;
    }
    for (size_t i = 0; i < n; i++) correct += argmax(scores + i * (size_t)classes, classes) == labels[first + i];
  }
  double seconds = frt_now_seconds() - t0;

  printf("model     %s: %s %s[%lldx784] -> %s %s[%lldx%lld], %d thread%s\n", m->name, m->inputs[0].name,
         frt_dtype_name(m->inputs[0].dtype), (long long)batch, m->outputs[0].name,
         frt_dtype_name(m->outputs[0].dtype), (long long)batch, (long long)classes, frt_pool_threads(pool),
         frt_pool_threads(pool) == 1 ? "" : "s");
  printf("accuracy  %.4f (%zu/%zu correct)\n", (double)correct / (double)count, correct, count);
  printf("speed     %.0f images/s (%zu images in %.3f s: %zu runs of batch %lld)\n",
         seconds > 0 ? (double)count / seconds : 0.0, count, seconds, runs, (long long)batch);
  status = 0;
  if (o.expect >= 0) {
    if ((long)correct == o.expect) {
      printf("check     %zu correct, as expected\n", correct);
    } else {
      fprintf(stderr, "fashion_classify: error: %zu images classified correctly, expected %ld\n", correct, o.expect);
      status = 1;
    }
  }
done:
  frt_pool_destroy(pool);
  free(scores);
  free(tail);
  free(ws);
  free(pixels);
  free(labels);
  return status;
}
