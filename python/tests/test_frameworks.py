"""The timers on work queued by the other ways Python reaches a GPU: a Triton kernel (launched on
PyTorch's current stream) and cuda-python (launched on the stream ridge passes). Each kernel's
output is checked before it is timed."""
import numpy as np
import pytest

import ridge

pytestmark = pytest.mark.gpu

TIMERS = (ridge.measure_cuda, ridge.measure_spin, ridge.measure_graph)

try:
    import triton
    import triton.language as tl

    @triton.jit
    def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)
except ImportError:
    triton = None


def test_a_triton_kernel_by_every_timer_and_on_a_given_stream():
    if triton is None:
        pytest.skip("Triton is not installed")
    torch = pytest.importorskip("torch")
    n = 1 << 24
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)

    def add():
        _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    add()
    torch.testing.assert_close(out, x + y)
    side = torch.cuda.Stream()
    for timer in TIMERS:
        for stream in (None, side):
            out.zero_()
            m = timer(add, stream=stream)
            torch.cuda.synchronize()
            torch.testing.assert_close(out, x + y)  # the timed launches did the work
            # 12 bytes per element over HBM: well above PCIe, below any GPU's memory bandwidth.
            gb_per_s = m.rate(bytes=12 * n).gb_per_s
            assert 300 < gb_per_s < 10_000, (timer.__name__, stream, m)


def test_cuda_python_work_on_the_stream_ridge_passes():
    cudart = pytest.importorskip("cuda.bindings.runtime")
    nbytes = 256 << 20

    def check(result):
        err, *rest = result
        assert err == cudart.cudaError_t.cudaSuccess, err
        return rest[0] if rest else None

    buffer = check(cudart.cudaMalloc(nbytes))
    try:
        for value, timer in enumerate(TIMERS, start=1):
            m = timer(lambda stream: check(cudart.cudaMemsetAsync(buffer, value, nbytes, stream)))
            check(cudart.cudaDeviceSynchronize())
            host = np.zeros(4096, dtype=np.uint8)
            check(cudart.cudaMemcpy(host.ctypes.data, int(buffer) + nbytes - host.size, host.size,
                                    cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost))
            assert (host == value).all(), (timer.__name__, host[:8])
            gb_per_s = m.rate(bytes=nbytes).gb_per_s
            assert 300 < gb_per_s < 10_000, (timer.__name__, m)
    finally:
        check(cudart.cudaFree(buffer))
