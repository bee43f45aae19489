/* backend.h — fused IR → LLVM IR (LLVM C API) → PTX with NVPTX, and the plan. */
#ifndef FP8CC_BACKEND_H
#define FP8CC_BACKEND_H

#include "ir.h"

typedef struct {
	const char *gpu;      /* sm_89, sm_90, sm_90a, sm_100 */
	const char *path;     /* input file, for messages */
	const char *cuda_path; /* the CUDA toolkit holding libdevice; NULL: $CUDA_HOME, then /usr/local/cuda */
	void (*phase)(const char *name, const char *detail);  /* told as each phase starts; may be NULL */
	bool print_memplan;   /* the plan after memplan on stderr (--print-after=memplan) */
} BeOptions;

bool be_target_ok(const char *gpu);
const char *be_llvm_version(void);
/* write kind ("plan", "dot", "llvm", "ptx") of the program to f; false with
 * a message */
bool be_emit(const Program *prog, const char *kind, const BeOptions *opt, FILE *f);

#endif
