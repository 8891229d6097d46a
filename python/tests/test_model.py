"""The model functions need no GPU: the textbook numbers."""
import math

import pytest

import ridge


def test_matmul_intensity_of_a_4096_bf16_matmul():
    assert ridge.matmul_intensity(4096, 4096, 4096) == pytest.approx(1365.33, rel=1e-4)


def test_the_element_size_may_be_a_dtype_name():
    assert ridge.matmul_intensity(16, 4096, 4096, "bf16") == ridge.matmul_intensity(16, 4096, 4096, 2)
    assert ridge.matmul_intensity(64, 64, 64, dtype="fp32") == ridge.matmul_intensity(64, 64, 64, 4)
    assert ridge.matmul_bytes(2, 2, 2, "fp32") == 48
    with pytest.raises(ridge.UsageError, match="bf16"):
        ridge.matmul_intensity(1, 1, 1, "int3")


def test_decode_batch_intensities():
    # A [batch, 4096] x [4096, 4096] bf16 matmul: intensity grows with the batch.
    assert ridge.matmul_intensity(128, 4096, 4096) == pytest.approx(120.5, rel=1e-2)
    assert ridge.matmul_intensity(512, 4096, 4096) == pytest.approx(410, rel=1e-2)


def test_roofline_and_ridge_point_of_an_h100():
    peak, bandwidth = 989e12, 3.35e12
    assert ridge.ridge_point(peak, bandwidth) == pytest.approx(295, rel=1e-2)
    assert ridge.attainable_flops(10, peak, bandwidth) == pytest.approx(33.5e12)
    assert ridge.attainable_flops(1e4, peak, bandwidth) == peak
    assert ridge.bound(10, peak, bandwidth) == "memory"
    assert ridge.bound(1e4, peak, bandwidth) == "compute"


def test_amdahl_and_its_inverse():
    assert ridge.amdahl_speedup(0.3, 3) == pytest.approx(1.25)
    assert ridge.amdahl_speedup(0.1, math.inf) == pytest.approx(1 / 0.9)
    assert ridge.amdahl_required_speedup(0.5, 1.5) == pytest.approx(3.0)
    assert ridge.amdahl_required_speedup(0.3, 10) is None  # beyond 1 / (1 - 0.3)
    assert ridge.amdahl_limit(0.3) == pytest.approx(1 / 0.7)


def test_decode_ceiling_counts_weights_once_per_batch():
    one = ridge.decode_ceiling(498e6, 3.35e12)
    assert one == pytest.approx(6727, rel=1e-3)
    assert ridge.decode_ceiling(498e6, 3.35e12, batch=8) == pytest.approx(8 * one)


@pytest.mark.parametrize("call", [
    lambda: ridge.attainable_flops(-1, 1e12, 1e12),
    lambda: ridge.matmul_intensity(0, 1, 1),
    lambda: ridge.amdahl_speedup(1.5, 2),
    lambda: ridge.amdahl_speedup(0.5, 0),
])
def test_bad_arguments_raise_usage_error_which_is_a_value_error(call):
    with pytest.raises(ridge.UsageError):
        call()
    with pytest.raises(ValueError):
        call()


def test_a_summary_shows_its_numbers():
    text = repr(ridge.summarize([1.0, 1.1, 1.2, 0.9, 1.05]))
    assert text.startswith("Summary(n=5, median 1.05, 95% CI [") and "min 0.9, max 1.2" in text


def test_summarize_rejects_nan_and_empty():
    assert ridge.summarize([3.0, 1.0, 2.0]).median == 2.0
    with pytest.raises(ridge.UsageError):
        ridge.summarize([1.0, float("nan")])
    with pytest.raises(ridge.UsageError):
        ridge.summarize([])
