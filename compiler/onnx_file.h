/* onnx_file.h — file helpers shared by onnx_load.c and tensor_file.c (private to the ONNX loader).
 *
 * Reading a file within a size limit and checking protobuf wire data before protobuf-c unpacks it are
 * needed both for models and for TensorProto .pb tensor files; the public interface is compiler/onnx.h.
 */
#ifndef FLOWC_ONNX_FILE_H
#define FLOWC_ONNX_FILE_H

#include "onnx.h"

/* Reads a whole regular file of at most max_bytes into a malloc'd buffer (*data, free with free()).
 * `what` names the file in messages ("model file", "tensor file 'x.pb'"). */
FcStatus fc_onnx_read_file(const char *path, int64_t max_bytes, const char *what, uint8_t **data, size_t *len,
                           FcDiag *diag);

/* Walks protobuf wire data of message type `desc` without building it: refuses malformed data
 * (FC_ERR_INPUT) and messages nested deeper than max_nesting (FC_ERR_LIMIT), the top-level message
 * being depth 1. `what` names the data in messages ("ONNX model", "TensorProto"). */
FcStatus fc_onnx_wire_check(const uint8_t *data, size_t len, const ProtobufCMessageDescriptor *desc,
                            int max_nesting, const char *what, FcDiag *diag);

/* Checks TensorProto wire data (held in buf, read from `path`, which messages name) and unpacks it; free
 * *out with onnx__tensor_proto__free_unpacked. */
FcStatus fc_onnx_unpack_tensor(const char *path, const uint8_t *buf, size_t len, int max_nesting,
                               Onnx__TensorProto **out, FcDiag *diag);

/* ONNX's name of a TensorProto data type code ("FLOAT", "STRING", ...), for messages; NULL if unknown. */
const char *fc_onnx_dtype_name(int code);

/* The folder part of a path ("." when it has none), copied into the arena. */
char *fc_onnx_path_dir(FcArena *a, const char *path);

#endif /* FLOWC_ONNX_FILE_H */
