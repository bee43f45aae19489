/* test_runtime.c — libfp8rt's public API where no GPU is needed: contexts
 * without a driver (missing library, the toolkit's stub), argument checks,
 * names and helpers, and fp8run's command line (usage errors; the clear
 * message without a driver). The GPU cases are in test_gemm.c and
 * test_program.c. */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <jansson.h>

#include "rt_test.h"
#include "test_data.h"

#define CUDA_STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

/* Without a GPU: NO_DRIVER or NO_DEVICE and a message that says why. With
 * one: a working context whose properties make sense. */
Test(context, create_reports_driver_or_device)
{
	fp8rt_context *ctx = (fp8rt_context *)1;
	fp8rt_status st = fp8rt_context_create(0, &ctx);
	if (st == FP8RT_OK) {
		fp8rt_device_props pr;
		CHECK_OK(fp8rt_device_properties(ctx, &pr), ctx);
		cr_assert(pr.sm_count > 0 && pr.cc_major >= 7 && pr.name[0], "device %s sm_%d%d, %d SMs", pr.name,
			pr.cc_major, pr.cc_minor, pr.sm_count);
		cr_log_info("device 0: %s, sm_%d%d, %d SMs", pr.name, pr.cc_major, pr.cc_minor, pr.sm_count);
		CHECK_OK(fp8rt_context_destroy(ctx), NULL);
		return;
	}
	cr_assert(st == FP8RT_NO_DRIVER || st == FP8RT_NO_DEVICE, "got %s: %s", fp8rt_status_name(st),
		fp8rt_last_error(NULL));
	cr_assert_null(ctx);
	cr_assert(strstr(fp8rt_last_error(NULL), "fp8rt_context_create: "), "%s", fp8rt_last_error(NULL));
	cr_assert(strlen(fp8rt_last_error(NULL)) > 30, "%s", fp8rt_last_error(NULL));
	/* asking again gives the same answer */
	cr_assert_eq(fp8rt_context_create(0, &ctx), st);
}

Test(context, missing_driver_library)
{
	setenv("FP8RT_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	fp8rt_context *ctx = NULL;
	ASSERT_FAILS(fp8rt_context_create(0, &ctx), FP8RT_NO_DRIVER, NULL,
		"cannot load the CUDA driver library /nonexistent/libcuda.so.1");
	cr_assert_null(ctx);
}

Test(context, stub_driver_library)
{
	struct stat sb;
	if (stat(CUDA_STUB, &sb) != 0)
		cr_skip_test("no CUDA stub library at %s", CUDA_STUB);
	setenv("FP8RT_LIBCUDA", CUDA_STUB, 1);
	fp8rt_context *ctx = NULL;
	ASSERT_FAILS(fp8rt_context_create(0, &ctx), FP8RT_NO_DRIVER, NULL, "CUDA_ERROR_STUB_LIBRARY");
	cr_assert(strstr(fp8rt_last_error(NULL), "cuInit(0)"), "%s", fp8rt_last_error(NULL));
}

Test(context, null_arguments)
{
	ASSERT_FAILS(fp8rt_context_create(0, NULL), FP8RT_INVALID_ARGUMENT, NULL, "out is NULL");
	cr_assert_eq(fp8rt_context_destroy(NULL), FP8RT_OK);
	cr_assert_eq(fp8rt_program_destroy(NULL), FP8RT_OK);
	fp8rt_program *p = (fp8rt_program *)1;
	ASSERT_FAILS(fp8rt_program_load_data(NULL, "x", 1, "x", &p), FP8RT_INVALID_ARGUMENT, NULL, "ctx is NULL");
	ASSERT_FAILS(fp8rt_program_load_file(NULL, "x", &p), FP8RT_INVALID_ARGUMENT, NULL, "ctx is NULL");
	ASSERT_FAILS(fp8rt_run(NULL, NULL, 0, NULL, 0, NULL), FP8RT_INVALID_ARGUMENT, NULL, "program is NULL");
	ASSERT_FAILS(fp8rt_scaled_mm(NULL, NULL, NULL), FP8RT_INVALID_ARGUMENT, NULL, "ctx is NULL");
	ASSERT_FAILS(fp8rt_malloc(NULL, 16, NULL), FP8RT_INVALID_ARGUMENT, NULL, "ctx is NULL");
	ASSERT_FAILS(fp8rt_program_io_count(NULL, NULL, NULL), FP8RT_INVALID_ARGUMENT, NULL, "program is NULL");
	ASSERT_FAILS(fp8rt_program_check(NULL, 5, "x"), FP8RT_INVALID_ARGUMENT, NULL, "data is NULL");
}

Test(api, names_and_sizes)
{
	cr_assert_str_eq(fp8rt_status_name(FP8RT_BAD_PROGRAM), "FP8RT_BAD_PROGRAM");
	cr_assert_str_eq(fp8rt_status_name((fp8rt_status)999), "FP8RT_?");
	cr_assert_str_eq(fp8rt_dtype_name(FP8RT_BF16), "bf16");
	cr_assert_str_eq(fp8rt_dtype_name(FP8RT_F8E4M3FN), "f8e4m3fn");
	cr_assert_str_eq(fp8rt_dtype_name((fp8rt_dtype)99), "?");
	cr_assert_eq(fp8rt_dtype_size(FP8RT_F8E5M2), 1);
	cr_assert_eq(fp8rt_dtype_size(FP8RT_BF16), 2);
	cr_assert_eq(fp8rt_dtype_size(FP8RT_I64), 8);
	cr_assert_eq(fp8rt_dtype_size(FP8RT_DTYPE_NONE), 0);
	int64_t dims[3] = { 2, 3, 4 };
	fp8rt_tensor t = fp8rt_tensor_dense((void *)256, FP8RT_F32, 3, dims);
	cr_assert(t.strides[0] == 12 && t.strides[1] == 4 && t.strides[2] == 1 && t.dims[1] == 3);
}

Test(api, check_program_without_device)
{
	const char *garbage = "just some text\n";
	ASSERT_FAILS(fp8rt_program_check(garbage, strlen(garbage), "g.txt"), FP8RT_BAD_PROGRAM, NULL,
		"g.txt:1: not an fp8cc PTX file");
}

/* The header's version is the library's, and the plan versions it reads
 * include the one fp8cc writes. */
Test(api, versions)
{
	cr_assert_eq(fp8rt_version(), FP8RT_VERSION);
	cr_assert_eq(FP8RT_VERSION, FP8RT_VERSION_MAJOR * 10000 + FP8RT_VERSION_MINOR * 100 + FP8RT_VERSION_PATCH);
	int lo = -1, hi = -1;
	fp8rt_plan_versions(&lo, &hi);
	cr_assert(lo == 1 && hi == 7, "plan versions %d..%d", lo, hi);
	fp8rt_plan_versions(NULL, NULL);
	/* the first one it does not read is refused, as docs/plan.md says */
	char *ptx = test_program_ptx(1, "fp8cc-plan 8");
	ASSERT_FAILS(fp8rt_program_check(ptx, strlen(ptx), "v4.ptx"), FP8RT_BAD_PROGRAM, NULL,
		"plan version 8; this runtime reads versions 1 to 7");
	free(ptx);
}

/* fp8rt_program_read: the signature and target without a device; a program
 * that cannot run; the checks and messages of fp8rt_program_check. */
Test(api, read_program_without_device)
{
	char *ptx = test_program_ptx(0, NULL);
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_read(ptx, strlen(ptx), "t.ptx", &p), NULL);
	int nin = -1, nout = -1;
	CHECK_OK(fp8rt_program_io_count(p, &nin, &nout), NULL);
	cr_assert(nin == 6 && nout == 3, "%d inputs, %d outputs", nin, nout);
	fp8rt_tensor_info info;
	CHECK_OK(fp8rt_program_input(p, 2, &info), NULL);
	cr_assert_str_eq(info.name, "w");
	cr_assert(info.dtype == FP8RT_F8E4M3FN && info.rank == 2 && info.dims[0] == 16 && info.dims[1] == 64);
	CHECK_OK(fp8rt_program_output(p, 1, &info), NULL);
	cr_assert_str_eq(info.name, "d");
	cr_assert_str_eq(fp8rt_program_target(p), "sm_90");
	cr_assert_null(fp8rt_program_target(NULL));
	ASSERT_FAILS(
		fp8rt_run(p, NULL, 0, NULL, 0, NULL), FP8RT_INVALID_ARGUMENT, NULL, "t.ptx was read without a device");
	float us[1];
	ASSERT_FAILS(fp8rt_time_runs(p, NULL, 0, NULL, 0, NULL, 0, 1, us), FP8RT_INVALID_ARGUMENT, NULL,
		"fp8rt_time_runs: t.ptx was read without a device");
	ASSERT_FAILS(fp8rt_program_set_graphs(p, 0), FP8RT_INVALID_ARGUMENT, NULL, "read without a device");
	cr_assert_eq(fp8rt_program_extern_count(p), 0);
	cr_assert_null(fp8rt_program_extern_name(p, 0));
	CHECK_OK(fp8rt_program_destroy(p), NULL);
	free(ptx);

	/* the externs it calls: each once, in the order of its first call,
	 * across functions */
	static const char calls[] = "// fp8cc-plan 2\n// target sm_90\n"
				    "// function one\n// input 0 x f32[4]\n// output 0 y f32[4]\n"
				    "// call b ins=in:0 outs=out:0 args=@0\n// call a ins=in:0 outs=out:0 args=@0\n"
				    "// call b ins=in:0 outs=out:0 args=@0\n"
				    "// function two\n// input 0 x f32[4]\n// output 0 y f32[4]\n"
				    "// call a ins=in:0 outs=out:0 args=@0\n// call c ins=in:0 outs=out:0 args=@0\n"
				    "// end-plan\n.version 8.0\n.target sm_90\n.address_size 64\n";
	CHECK_OK(fp8rt_program_read(calls, strlen(calls), "calls.ptx", &p), NULL);
	cr_assert_eq(fp8rt_program_extern_count(p), 3);
	cr_assert_str_eq(fp8rt_program_extern_name(p, 0), "b");
	cr_assert_str_eq(fp8rt_program_extern_name(p, 1), "a");
	cr_assert_str_eq(fp8rt_program_extern_name(p, 2), "c");
	cr_assert_null(fp8rt_program_extern_name(p, 3));
	cr_assert_null(fp8rt_program_extern_name(p, -1));
	cr_assert_eq(fp8rt_program_extern_count(NULL), 0);
	cr_assert_null(fp8rt_program_extern_name(NULL, 0));
	CHECK_OK(fp8rt_program_destroy(p), NULL);

	ptx = test_program_ptx(3, "input 0 x f32[1024] extra");
	p = (fp8rt_program *)1;
	ASSERT_FAILS(fp8rt_program_read(ptx, strlen(ptx), "bad.ptx", &p), FP8RT_BAD_PROGRAM, NULL, "bad.ptx:3: ");
	cr_assert_null(p);
	free(ptx);
	ASSERT_FAILS(
		fp8rt_program_read("x", 1, NULL, &p), FP8RT_BAD_PROGRAM, NULL, "<memory>:1: not an fp8cc PTX file");
	ASSERT_FAILS(fp8rt_program_read(NULL, 1, "x", &p), FP8RT_INVALID_ARGUMENT, NULL, "data is NULL");
	ASSERT_FAILS(fp8rt_program_read("x", 1, "x", NULL), FP8RT_INVALID_ARGUMENT, NULL, "out is NULL");
}

/* ---- fp8run ---------------------------------------------------------------- */

/* Runs fp8run with args (and the environment prefix env); returns its exit
 * status and its output in out. */
static int
fp8run(const char *env, const char *args, char *out, size_t n)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1", env, FP8RUN_PATH, args);
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	size_t got = fread(out, 1, n - 1, f);
	out[got] = 0;
	int status = pclose(f);
	cr_assert(WIFEXITED(status), "fp8run did not exit: %s", cmd);
	return WEXITSTATUS(status);
}

/* Usage errors: exit 2, a message that says what is wrong, and a hint. */
Test(fp8run, usage_errors_exit_2)
{
	static const struct {
		const char *args, *want;
	} cases[] = {
		{ "", "fp8run: no program given\nfp8run: see 'fp8run --help'" },
		{ "p.ptx --bogus -o o.st", "unknown option '--bogus'" },
		{ "p.ptx -x -o o.st", "unknown option '-x'" },
		{ "p.ptx --iters zero -o o.st", "--iters wants an integer >= 1, not 'zero'" },
		{ "p.ptx --iters=0 -o o.st", "--iters wants an integer >= 1, not '0'" },
		{ "p.ptx --json=yes", "option '--json' takes no value" },
		{ "p.ptx --inputs", "option '--inputs' needs a value" },
		{ "p.ptx q.ptx -o o.st", "more than one program given ('q.ptx')" },
		{ "p.ptx --json -o -", "-o - and --json both want standard output" },
		{ "p.ptx", "nothing to do" },
		{ "p.ptx --json --wall", "--wall times runs: give --iters N too" },
		{ "p.ptx --json --cold", "--cold times runs: give --iters N too" },
		{ "p.ptx -o o.st --ranks 0", "--ranks wants an integer >= 1, not '0'" },
		{ "p.ptx -o o.st --ranks 2 --rank 2 --nccl-id id", "--rank 2 wants --ranks above it" },
		{ "p.ptx -o o.st --rank 1", "--rank 1 wants --ranks above it" },
		{ "p.ptx -o o.st --ranks 2 --rank 1", "--ranks 2: give --nccl-id FILE" },
	};
	char out[4096];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cr_assert_eq(fp8run("", cases[i].args, out, sizeof out), 2, "fp8run %s: %s", cases[i].args, out);
		cr_assert(strstr(out, cases[i].want), "fp8run %s: no \"%s\" in %s", cases[i].args, cases[i].want, out);
		cr_assert(strstr(out, "see 'fp8run --help'"), "fp8run %s: no hint in %s", cases[i].args, out);
	}
}

/* --help on standard output, exit 0; --version says both versions. */
Test(fp8run, help_and_version)
{
	char out[4096], want[128];
	cr_assert_eq(fp8run("", "--help 2>/dev/null", out, sizeof out), 0, "%s", out);
	cr_assert(!strncmp(out, "usage: fp8run PROGRAM.ptx", 25), "%s", out);
	cr_assert(strstr(out, "--json"), "%s", out);
	cr_assert_eq(fp8run("", "-h 2>/dev/null", out, sizeof out), 0, "%s", out);
	cr_assert(!strncmp(out, "usage: fp8run", 13), "%s", out);
	cr_assert_eq(fp8run("", "--version", out, sizeof out), 0, "%s", out);
	snprintf(want, sizeof want, "fp8run %d.%d.%d (libfp8rt %d.%d.%d, plan versions 1..7)\n", FP8RT_VERSION_MAJOR,
		FP8RT_VERSION_MINOR, FP8RT_VERSION_PATCH, FP8RT_VERSION_MAJOR, FP8RT_VERSION_MINOR,
		FP8RT_VERSION_PATCH);
	cr_assert_str_eq(out, want);
}

/* --json alone prints the signature in the shape fp8cc --emit=signature
 * has, without a device (the driver path here does not exist). */
Test(fp8run, json_signature_without_device)
{
	char dir[] = "/tmp/fp8run_json_XXXXXX", path[256], args[512], out[16384];
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/prog.ptx", dir);
	cr_assert_eq(test_write_program(path), 0, "cannot write %s", path);
	snprintf(args, sizeof args, "%s --json 2>&1", path);
	cr_assert_eq(fp8run("FP8RT_LIBCUDA=/nonexistent/libcuda.so.1", args, out, sizeof out), 0, "%s", out);
	json_error_t je;
	json_t *j = json_loads(out, JSON_REJECT_DUPLICATES, &je);
	cr_assert(j, "not JSON (%s): %s", je.text, out);
	json_t *sig = json_object_get(j, "signature"), *fn = json_array_get(json_object_get(sig, "functions"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(sig, "program")), "prog");
	cr_assert_str_eq(json_string_value(json_object_get(sig, "target")), "sm_90");
	cr_assert_eq(json_array_size(json_object_get(sig, "functions")), 1);
	cr_assert(json_is_null(json_object_get(fn, "name")), "plan version 1 names no function");
	cr_assert(json_is_null(json_object_get(j, "timing")) && json_is_null(json_object_get(j, "device")));
	json_t *in = json_object_get(fn, "inputs"), *outs = json_object_get(fn, "outputs");
	cr_assert_eq(json_array_size(in), 6);
	cr_assert_eq(json_array_size(outs), 3);
	json_t *w = json_array_get(in, 2), *shape = json_object_get(w, "shape");
	cr_assert_str_eq(json_string_value(json_object_get(w, "name")), "w");
	cr_assert_str_eq(json_string_value(json_object_get(w, "dtype")), "f8e4m3fn");
	cr_assert(json_array_size(shape) == 2 && json_integer_value(json_array_get(shape, 0)) == 16 &&
		json_integer_value(json_array_get(shape, 1)) == 64);
	cr_assert_eq(json_array_size(json_object_get(json_array_get(in, 3), "shape")), 0);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(outs, 1), "name")), "d");
	json_decref(j);
	/* a file that is not a program: the loader's message, exit 1 */
	snprintf(args, sizeof args, "%s/nope.ptx --json 2>&1", dir);
	cr_assert_eq(fp8run("", args, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "fp8run: reading: cannot read "), "%s", out);
	snprintf(args, sizeof args, "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

/* The message a user without a GPU sees (forced here with a driver path that
 * does not exist, so it is the same on every machine). */
Test(fp8run, no_driver_message_exit_1)
{
	char out[4096];
	int rc = fp8run("FP8RT_LIBCUDA=/nonexistent/libcuda.so.1", "p.ptx --inputs in.safetensors -o out.safetensors",
		out, sizeof out);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "fp8run: no CUDA driver/device: "), "%s", out);
	cr_assert(strstr(out, "/nonexistent/libcuda.so.1"), "%s", out);
}
