"""One CUPTI per process, whichever of ridge and PyTorch is imported first, and none without a driver.

PyTorch's wheels bring their own CUPTI (site-packages/nvidia/cu13/lib) and load it by its path;
ridge's extension asks for ``libcupti.so.13`` by name, which the dynamic loader resolves to the
CUDA toolkit's copy unless one is already loaded. Two copies would each hook the CUDA driver and
crash whoever traces. Loading the wheel's file first makes ridge use the same file PyTorch will
load (the loader matches a loaded library by its soname), so the process holds one.

That is only done where it can matter and is safe: a CUDA driver of CUDA 13 or newer is present
(without one nothing can trace, and NVIDIA's wheel CUPTI recurses until the stack overflows when
NVTX reaches it with no driver), and the wheel's file is a CUDA 13 shared library. Otherwise the
extension loads the CUPTI it was built against.
"""
import ctypes
import importlib.util
import os
from typing import Optional

# ridge is built against CUDA 13's CUPTI; the wheel's file carries that major version in its soname.
CUPTI_MAJOR = 13
_SONAME = f"libcupti.so.{CUPTI_MAJOR}"
# Where NVIDIA's CUDA 13 wheels put CUPTI (nvidia-cuda-cupti, pulled in by PyTorch's cuda-toolkit).
_WHEEL_FOLDERS = ("cu13/lib", "cuda_cupti/lib")

# The path of the CUPTI this module loaded, or None (nothing loaded: the extension chose).
PRELOADED: Optional[str] = None


def wheel_cupti() -> Optional[str]:
    """The path of the pip-installed CUPTI a framework would load, or None."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        for folder in _WHEEL_FOLDERS:
            path = os.path.join(root, folder, _SONAME)
            if os.path.isfile(path):
                return path
    return None


def driver_cuda_version() -> int:
    """The CUDA version the installed driver supports (13000 = 13.0), 0 without a driver."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    version = ctypes.c_int(0)
    try:
        status = driver.cuDriverGetVersion(ctypes.byref(version))
    except AttributeError:
        return 0
    return version.value if status == 0 else 0


def usable_cupti(path: str) -> bool:
    """True when ``path`` may be preloaded: a CUDA 13 driver is present and the file is an ELF
    shared library named for CUPTI 13 (checked without loading it: a loaded copy cannot be undone)."""
    if os.path.basename(path) != _SONAME or driver_cuda_version() < CUPTI_MAJOR * 1000:
        return False
    try:
        with open(path, "rb") as library:
            return library.read(4) == b"\x7fELF"
    except OSError:
        return False


def load_wheel_cupti() -> Optional[str]:
    """Loads the wheel's CUPTI before ridge's extension does (see the module's docstring)."""
    global PRELOADED
    path = wheel_cupti()
    if path is None or not usable_cupti(path):
        return None
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None  # a broken wheel: ridge's own CUPTI still loads, and a second copy is refused later
    PRELOADED = path
    return path
