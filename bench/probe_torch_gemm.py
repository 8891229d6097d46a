"""Which kernel does PyTorch's `a @ b` run, through which BLAS path, and how fast (do_bench median)?"""
import torch
import triton.testing

print("preferred blas:", torch.backends.cuda.preferred_blas_library())
print("allow_bf16_reduced_precision_reduction:", torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)
for n in (1024, 4096, 8192):
    a = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    b = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        a @ b
        torch.cuda.synchronize()
    kernels = {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    ms = triton.testing.do_bench(lambda: a @ b, return_mode="median")
    print(f"n={n} do_bench median {ms:.4f} ms = {2*n**3/ms/1e9:.1f} TFLOP/s; kernels: {sorted(kernels)}")
