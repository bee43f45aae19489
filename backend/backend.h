/* backend.h — fused IR → LLVM IR (LLVM C API) → PTX with NVPTX, and the plan. */
#ifndef FP8CC_BACKEND_H
#define FP8CC_BACKEND_H

#include "ir.h"

typedef struct {
	const char *gpu;       /* sm_89, sm_90, sm_90a, sm_100 */
	const char *path;      /* input file, for messages */
	const char *cuda_path; /* the CUDA toolkit holding libdevice; NULL: $CUDA_HOME, then /usr/local/cuda */
	void (*phase)(const char *name, const char *detail); /* told as each phase starts; may be NULL */
	bool print_memplan; /* the plan after memplan on stderr (--print-after=memplan) */
} BeOptions;

/* what fp8cc can write (--emit=KIND), each with its name in be_emit_names;
 * FOR_CODE: the kinds made from lowered IR, after the GEMM checks */
#define EMITS(X) X(PTX, "ptx") X(IR, "ir") X(PLAN, "plan") X(DOT, "dot") X(SIGNATURE, "signature") X(LLVM, "llvm")
#define AS_EMIT(id, name) EMIT_##id,
typedef enum { EMITS(AS_EMIT) NEMITS } Emit;
#undef AS_EMIT
extern const char *const be_emit_names[]; /* NULL-terminated */
static inline bool
be_emit_for_code(Emit e)
{
	return e == EMIT_PTX || e == EMIT_PLAN || e == EMIT_LLVM;
}

/* false, with why, if the backend cannot compile matmul-class instruction
 * in as it is (cuBLASLt's FP8 GEMMs want K and N multiples of 16; a matmul
 * with K = 0, an empty sum, has no GEMM); the interpreter runs them all */
bool be_gemm_ok(Func *fn, const Instr *in, char *why, size_t n);

/* the GPUs fp8cc compiles for: gpu is one, or a list of all of them */
bool be_target_ok(const char *gpu);
const char *be_target_list(void); /* "sm_89, sm_90, ..." */
const char *be_llvm_version(void);
/* write kind (PTX, PLAN, DOT or LLVM) of the program to f; false with a
 * message */
bool be_emit(const Program *prog, Emit kind, const BeOptions *opt, FILE *f);

#endif
