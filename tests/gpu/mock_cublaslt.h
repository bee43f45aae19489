/* mock_cublaslt.h — the fake cuBLASLt of the fault-injection tests
 * (mock_cublaslt.c). */
#ifndef FP8RT_MOCK_CUBLASLT_H
#define FP8RT_MOCK_CUBLASLT_H

/* cuBLASLt objects alive: handles, matmul descriptors, layouts, preferences. */
void mocklt_live(int out[4]);
/* With on, the heuristic refuses outer-vector (row-wise) scales (INVALID_VALUE). */
void mocklt_refuse_outer_vec(int on);

#endif
