"""The one check every GPU-facing function makes first: a usable GPU, or NoGpuError naming the function."""
from . import _ridge


def require_gpu_for(caller: str) -> None:
    """Raises NoGpuError("ridge.<caller> needs a CUDA GPU ...: <why>", with what works without one)
    before any CUDA call is made, so the message names the function the user called and no C++ frame."""
    reason = _ridge.no_gpu_reason()
    if reason:
        raise _ridge.NoGpuError(f"ridge.{caller} needs a CUDA GPU, and none is usable: {reason}.\n  {_ridge.no_gpu_hint}")
