"""ridge held to the standard of the Python libraries beside it (numpy, torch): one dtype
vocabulary, no silent zeros, values that pickle and rebuild, signatures, and strict typing."""
import inspect
import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ridge

HERE = pathlib.Path(__file__).parent


# ---- one dtype vocabulary ------------------------------------------------------------------

@pytest.mark.parametrize("alias,name", [("bfloat16", "bf16"), ("torch.bfloat16", "bf16"), ("float16", "fp16"),
                                        ("half", "fp16"), ("float32", "fp32"), ("fp8", "fp8_e4m3"),
                                        ("float8_e4m3fn", "fp8_e4m3")])
def test_every_function_takes_torch_and_numpy_dtype_names(alias, name):
    h100 = ridge.device("h100-sxm").ceilings
    assert h100.peak_flops(alias) == h100.peak_flops(name) > 0
    assert h100.ridge_point(alias) == h100.ridge_point(name) > 0
    assert ridge.place_matmul(16, 4096, 4096, alias, device="h100-sxm").dtype == name
    ridge.roofline("h100-sxm", [("op", alias, 10.0, 1e12)])  # placed under its own roof, no warning needed


def test_an_unknown_dtype_is_an_error_never_a_zero():
    h100 = ridge.device("h100-sxm").ceilings
    for call in (lambda: h100.ridge_point("nonsense"), lambda: h100.peak_flops("nonsense"),
                 lambda: ridge.place_matmul(16, 16, 16, "nonsense", device="h100-sxm"),
                 lambda: ridge.roofline("h100-sxm", [("op", "nonsense", 10.0, 1e12)])):
        with pytest.raises(ridge.UsageError, match="unknown dtype 'nonsense'.*bfloat16"):
            call()


def test_a_peak_the_device_lacks_is_an_error_naming_what_it_has():
    a100 = ridge.device("a100-sxm-80gb").ceilings
    assert "fp8_e4m3" not in a100.peak_flops_per_s
    with pytest.raises(ridge.UsageError, match="no peak.*lists"):
        a100.ridge_point("fp8_e4m3")
    with pytest.raises(ridge.UsageError, match="no peak"):
        a100.peak_flops("fp8")


def test_fp4_places_where_the_catalog_has_an_fp4_peak():
    b200 = ridge.device("b200").ceilings
    assert b200.peak_flops("fp4") > b200.peak_flops("fp8")
    placed = ridge.place_matmul(4096, 4096, 4096, "fp4", device="b200")
    assert placed.dtype == "fp4" and placed.roof_flops_per_s == b200.peak_flops("fp4")
    # Half a byte an element: twice the intensity of fp8 at the same shape.
    fp8 = ridge.place_matmul(4096, 4096, 4096, "fp8", device="b200")
    assert placed.intensity_flop_per_byte == pytest.approx(2 * fp8.intensity_flop_per_byte)


# ---- no silent impossibilities --------------------------------------------------------------

def test_a_rate_no_gpu_can_reach_warns():
    m = ridge.measure_naive(lambda: None)
    with pytest.warns(ridge.ImpossibleRateWarning, match="above the fastest peak of any GPU"):
        rate = m.rate(flops=1e12)
    assert rate.tflops > 1e4  # the number is still returned, with the warning beside it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ridge.measure_naive(lambda: None).rate(flops=1.0)  # a plausible rate stays quiet


def test_numpy_scalars_are_stored_as_numbers_in_records():
    results = ridge.Results()
    record = results.add(ridge.measure_wall(lambda: None, cuda=False), "y",
                         params={"n": np.int64(3), "x": np.float32(0.5), "flag": np.bool_(True)})
    assert record["params"] == {"n": 3, "x": 0.5, "flag": True}
    with pytest.raises(ridge.UsageError, match="params: .*object.*cannot be stored"):
        results.add(ridge.measure_wall(lambda: None, cuda=False), "y", params={"n": object()})
    assert len(results.records) == 1  # the refused record left nothing behind


# ---- values that travel ---------------------------------------------------------------------

def values():
    m = ridge.measure_wall(lambda: None, cuda=False)
    return {
        "Summary": ridge.Summary([1.0, 2.0, 4.0]),
        "DeviceCeilings": ridge.device("h100-sxm").ceilings,
        "Device": ridge.device("h200-sxm"),
        "ShapePlacement": ridge.place_matmul(16, 4096, 4096, "bf16", device="h100-sxm"),
        "Measurement": m,
        "Rate": m.rate(flops=10.0, bytes=20.0),
    }


@pytest.mark.parametrize("kind", list(values()))
def test_every_public_value_type_pickles_whole(kind):
    value = values()[kind]
    copy = pickle.loads(pickle.dumps(value))
    assert type(copy) is type(value)
    assert repr(copy) == repr(value)
    if kind == "Summary":
        assert (copy.count, copy.median, copy.p90, copy.median_ci_high) == (value.count, value.median, value.p90,
                                                                             value.median_ci_high)
    if kind == "Device":
        assert copy.ceilings.peak_flops_per_s == value.ceilings.peak_flops_per_s and copy.key == value.key
    if kind == "Rate":
        assert copy.source == value.source and copy.flops_per_s == value.flops_per_s


def test_a_measurement_is_rebuilt_from_its_stored_record():
    results = ridge.Results()
    m = ridge.measure_wall(lambda: None, cuda=False, samples=7)
    record = results.add(m, "noop")
    rebuilt = ridge.Measurement.from_record(pickle.loads(pickle.dumps(record)))
    assert float(rebuilt) == pytest.approx(float(m))
    assert list(rebuilt.samples) == pytest.approx(list(m.samples))
    assert rebuilt.method == m.method and rebuilt.ci == pytest.approx(m.ci)
    with pytest.raises(ridge.UsageError, match="samples_ms"):
        ridge.Measurement.from_record({"name": "x", "method": "wall_sync"})


@pytest.mark.parametrize("cls", [ridge.DeviceCeilings, ridge.Summary, ridge.TraceSchedule])
def test_public_classes_have_a_signature(cls):
    parameters = inspect.signature(cls).parameters
    assert parameters and "self" not in parameters


def test_all_lists_exactly_the_public_names():
    public = {name for name, value in vars(ridge).items()
              if not name.startswith("_") and not inspect.ismodule(value)}
    assert sorted(ridge.__all__) == sorted(public)


# ---- strict typing --------------------------------------------------------------------------

def mypy(*args: str) -> subprocess.CompletedProcess:
    if shutil.which("mypy") is None and subprocess.run([sys.executable, "-m", "mypy", "--version"],
                                                       capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("mypy is not installed: scripts/test_python.sh installs it")
        pytest.skip("mypy is not installed (pip install mypy)")
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *args], capture_output=True, text=True,
                          cwd=HERE.parent.parent, timeout=600)


def test_a_user_script_is_clean_under_mypy_strict():
    done = mypy("--strict", str(HERE / "data" / "typed_user_script.py"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_package_is_clean_under_mypy():
    done = mypy("-p", "ridge")
    assert done.returncode == 0, done.stdout + done.stderr


# ---- weight -------------------------------------------------------------------------------

IMPORT_COST = """
import sys, time
start = time.perf_counter()
import {module}
seconds = time.perf_counter() - start
rss_kb = int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])
mapped = sorted({{l.split()[-1].rsplit("/", 1)[-1] for l in open("/proc/self/maps") if "libcublas" in l}})
print(seconds, rss_kb / 1024, ",".join(mapped))
"""


def import_cost(module: str):
    done = subprocess.run([sys.executable, "-c", IMPORT_COST.format(module=module)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seconds, megabytes, mapped = (done.stdout.split() + [""])[:3]
    return float(seconds), float(megabytes), mapped


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_import_ridge_costs_little_more_than_numpy_and_maps_no_cublas():
    numpy_s, numpy_mb, _ = min(import_cost("numpy") for _ in range(3))
    ridge_s, ridge_mb, mapped = min(import_cost("ridge") for _ in range(3))
    assert mapped == "", f"cuBLAS is loaded at import ({mapped}): it belongs to the first GEMM"
    assert ridge_mb <= numpy_mb + 50, (ridge_mb, numpy_mb)
    assert ridge_s <= numpy_s + 0.1 * 3, (ridge_s, numpy_s)  # 3x slack: CI's two cores are shared
