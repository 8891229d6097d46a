"""One CUPTI per process, whichever of ridge and PyTorch is imported first.

PyTorch's wheels bring their own CUPTI (site-packages/nvidia/cu13/lib) and load it by its path;
ridge's extension asks for ``libcupti.so.13`` by name, which the dynamic loader resolves to the
CUDA toolkit's copy unless one is already loaded. Two copies would each hook the CUDA driver and
crash whoever traces. Loading the wheel's file first, when it is installed, makes ridge use the
same file PyTorch will load (the loader matches a loaded library by its soname), so the process
holds one. Where no such wheel is installed, nothing is loaded here.
"""
import ctypes
import importlib.util
import os
from typing import Optional

# Where NVIDIA's CUDA 13 wheels put CUPTI (nvidia-cuda-cupti, pulled in by PyTorch's cuda-toolkit).
_WHEEL_FOLDERS = ("cu13/lib", "cuda_cupti/lib")


def wheel_cupti() -> Optional[str]:
    """The path of the pip-installed CUPTI a framework would load, or None."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        for folder in _WHEEL_FOLDERS:
            path = os.path.join(root, folder, "libcupti.so.13")
            if os.path.isfile(path):
                return path
    return None


def load_wheel_cupti() -> Optional[str]:
    """Loads the wheel's CUPTI before ridge's extension does (see the module's docstring)."""
    path = wheel_cupti()
    if path is not None:
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            return None  # a broken wheel: ridge's own CUPTI still loads, and a second copy is refused later
    return path
