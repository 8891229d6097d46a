"""Two copies of CUPTI in one process (a framework's wheel brings one, the CUDA toolkit another)
crash whoever traces with them: ridge refuses with a clear error instead."""
import subprocess
import sys
import textwrap

import pytest

SECOND_CUPTI = textwrap.dedent("""
    import ctypes, shutil, sys, tempfile, os
    import ridge
    loaded = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcupti.so" in line})
    assert len(loaded) == 1, loaded
    copy = os.path.join(tempfile.mkdtemp(), "libcupti.so.13")
    shutil.copy(loaded[0], copy)
    ctypes.CDLL(copy)  # what a framework's wheel does when it loads its own CUPTI by path
    for what, use in (("nvtx", lambda: ridge.nvtx("x").__enter__()), ("trace", lambda: ridge.trace(None).__enter__())):
        try:
            use()
        except ridge.Error as error:
            print(what, "refused:", error)
        else:
            if what == "nvtx" and ridge.device_count() == 0:
                print("nvtx without a GPU: a no-op, CUPTI never reached")  # nothing could trace
                continue
            sys.exit(what + " ran with two CUPTIs loaded")
""")


def test_a_second_cupti_in_the_process_is_refused_not_a_crash():
    done = subprocess.run([sys.executable, "-c", SECOND_CUPTI], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    import ridge
    nvtx_outcome = "nvtx refused: two copies of CUPTI are loaded" if ridge.device_count() > 0 else "nvtx without a GPU"
    assert nvtx_outcome in done.stdout, done.stdout
    assert "trace refused:" in done.stdout, done.stdout  # without a GPU, NoGpuError may come first


ONE_CUPTI = textwrap.dedent("""
    import sys
    {imports}
    import ridge
    loaded = sorted({{line.split()[-1] for line in open("/proc/self/maps") if "libcupti.so" in line}})
    print(len(loaded), loaded)
    with ridge.nvtx("x"):
        pass
""")


@pytest.mark.parametrize("imports", ["import torch; import ridge", "import ridge; import torch"])
def test_pytorch_and_ridge_share_one_cupti_in_either_order(imports):
    pytest.importorskip("torch", reason="PyTorch is not installed here")
    done = subprocess.run([sys.executable, "-c", ONE_CUPTI.format(imports=imports)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("1 "), done.stdout
