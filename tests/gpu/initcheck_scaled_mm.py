"""One FP8 GEMM through torch._scaled_mm (cuBLASLt, as libfp8rt calls it),
its output read back by a kernel and by a copy to the host: run under
compute-sanitizer --tool initcheck by tests/gpu/sanitize.sh, it shows what
initcheck reports of a cuBLASLt FP8 GEMM's output with no fp8cc code in
the process. Shapes as the seed layer's: a (16,32) e4m3, w (64,32) e4m3,
d = a @ w.t() (16,64) bf16, tensor-wise scales. With --graph the GEMM
runs inside a CUDA graph (captured, then replayed), as fp8run runs it."""
import sys

import torch


def main():
    torch.manual_seed(0)
    a = torch.randn(16, 32, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(64, 32, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    gemm = lambda: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    if "--graph" in sys.argv:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            gemm()                   # cuBLASLt's handle and workspace, outside the capture
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            d = gemm()
        g.replay()
    else:
        d = gemm()
    total = d.float().sum()          # a kernel reads d
    host = d.cpu()                   # a copy reads d
    torch.cuda.synchronize()
    print(f"sum {total.item():.4f}, d[0,0] {host[0, 0].item():.4f}")


if __name__ == "__main__":
    main()
