/* safetensors.h — read and write .safetensors files (the Hugging Face format).
 *
 * Layout: 8-byte little-endian u64 N, N bytes of UTF-8 JSON header
 *   {"name": {"dtype": "F32", "shape": [2,3], "data_offsets": [begin, end]},
 *    ..., "__metadata__": {"key": "value"}}
 * padded with spaces, then the byte buffer; offsets are relative to the
 * buffer, and the tensors must cover it exactly, without holes or overlap.
 *
 * Self-contained: includes no other fp8cc header, so both the compiler and
 * the runtime's fp8run link it (with jansson, which parses the header).
 * Dtypes are the safetensors spellings:
 * BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64 F8_E4M3 F8_E5M2.
 * Keeps no global state.
 */
#ifndef FP8CC_SAFETENSORS_H
#define FP8CC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ST_MAXRANK 8

/* One tensor: name, dtype, shape and raw little-endian bytes. */
typedef struct {
	char *name;               /* malloc'd (reader), NUL-terminated UTF-8 */
	char dtype[12];           /* "F32", "BF16", "F8_E4M3", ... */
	int rank;                 /* 0..ST_MAXRANK; 0 is a scalar */
	int64_t dims[ST_MAXRANK]; /* dims[0..rank-1], outermost first; rest 0 */
	size_t nbytes;            /* product(dims) * st_dtype_size(dtype) */
	void *data;               /* reader: inside the StFile's base (never
	                             NULL, even when nbytes is 0; NULL after
	                             st_read_header); writer: the caller's */
} StTensor;

/* A whole file: n tensors in the order of their data offsets. */
typedef struct {
	int n;          /* number of tensors */
	StTensor *t;    /* malloc'd array of n; NULL when n is 0 */
	void *base;     /* what the tensors' data point into: the file mapped
	                   private and writable (st_read), a malloc'd copy of
	                   the byte buffer (st_read_mem), or NULL */
	size_t baselen; /* its size in bytes */
	int mapped;     /* base is an mmap of baselen bytes */
} StFile;

/* Bytes per element of a safetensors dtype string; 0 if unknown or NULL. */
int st_dtype_size(const char *dtype);

/* Read the file at path into out: the file is mapped (mmap, private: the
 * tensors' data may be written, the file never is) and the tensors point
 * into the map until st_free. Returns 0 on success; else -1, *out zeroed,
 * and a one-line message "PATH: reason" in err (truncated to errlen; err
 * may be NULL if errlen is 0). The whole file is validated as the
 * safetensors library does: header length, JSON syntax (duplicate keys are
 * errors), dtypes, shapes, offsets covering the buffer. The __metadata__
 * object is checked (string values) and ignored. */
int st_read(const char *path, StFile *out, char *err, size_t errlen);

/* As st_read, from the len bytes at buf (a whole file image), the byte
 * buffer copied once; messages start with "<memory>: ". buf may be NULL
 * only if len is 0. */
int st_read_mem(const void *buf, size_t len, StFile *out, char *err, size_t errlen);

/* Only the header of the file at path: each tensor's name, dtype, shape
 * and nbytes, data NULL. The byte buffer may be absent or truncated; every
 * check that does not need it is made (JSON, dtypes, shapes, offsets
 * against shapes, no overlap or hole between tensors). Returns as st_read. */
int st_read_header(const char *path, StFile *out, char *err, size_t errlen);

/* Write the n tensors ts[0..n-1] to path, data in the order given, header
 * in the Python library's layout (no spaces, space-padded to a multiple of
 * 8, contiguous data_offsets). Each tensor needs a unique valid UTF-8 name
 * other than "__metadata__", a known dtype, rank 0..8, dims >= 0, nbytes
 * equal to product(dims) * dtype size, and data non-NULL if nbytes > 0.
 * Returns 0 on success; else -1 and "PATH: reason" in err; a failed write
 * removes the partial file. */
int st_write(const char *path, const StTensor *ts, int n, char *err, size_t errlen);

/* As st_write, to the open stream f (standard output for `-o -`), named
 * name in messages; flushes f, and removes nothing on failure. */
int st_fwrite(FILE *f, const char *name, const StTensor *ts, int n, char *err, size_t errlen);

/* Free everything a reader allocated or mapped and zero *f.
 * Safe on a zeroed StFile and on NULL. */
void st_free(StFile *f);

/* The tensor called name, or NULL. Linear search. */
const StTensor *st_find(const StFile *f, const char *name);

#endif
