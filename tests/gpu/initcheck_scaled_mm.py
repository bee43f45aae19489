"""One FP8 GEMM through torch._scaled_mm (cuBLASLt, as libfp8rt calls it),
its output read back by a kernel and by a copy to the host: run under
compute-sanitizer --tool initcheck by tests/gpu/sanitize.sh, it shows what
initcheck reports of a cuBLASLt FP8 GEMM's output with no fp8cc code in
the process. Shapes as the seed layer's: a (16,32) e4m3, w (64,32) e4m3,
d = a @ w.t() (16,64) bf16, tensor-wise scales."""
import torch


def main():
    torch.manual_seed(0)
    a = torch.randn(16, 32, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(64, 32, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    d = torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    total = d.float().sum()          # a kernel reads d
    host = d.cpu()                   # a copy reads d
    torch.cuda.synchronize()
    print(f"sum {total.item():.4f}, d[0,0] {host[0, 0].item():.4f}")


if __name__ == "__main__":
    main()
