"""ridge shares a process with PyTorch and other extensions: it exports nothing they could bind to,
and they import after it as before it."""
import importlib.util
import shutil
import subprocess
import sys

import pytest

from ridge import _ridge


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("nm") is None, reason="needs Linux and nm (binutils)")
def test_extension_exports_only_its_module_entry_point():
    listed = subprocess.run(["nm", "-D", "--defined-only", _ridge.__file__], capture_output=True, text=True, check=True)
    exported = {line.split()[-1] for line in listed.stdout.splitlines() if line.strip()}
    assert exported == {"PyInit__ridge"}


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("order", ["ridge, torch", "torch, ridge"])
def test_pytorch_imports_beside_ridge_in_either_order(order):
    # A fresh interpreter: the order of the first imports is what is tested. torch builds and
    # prints an operator schema on import, which is where a clash of C++ runtimes shows.
    code = f"import {order}; import torch.ao.quantization; print(torch.ones(3).add(1).sum().item(), ridge.matmul_intensity(2, 2, 2))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"import {order} failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
    assert done.stdout.split() == ["6.0", str(_ridge.matmul_intensity(2, 2, 2))]
