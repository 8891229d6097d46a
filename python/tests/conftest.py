import os

# RIDGE_TEST_IMPORT_FIRST=torch runs the whole suite as PyTorch users import: torch before ridge
# (each loads its CUPTI and CUDA libraries; the order must not matter).
if os.environ.get("RIDGE_TEST_IMPORT_FIRST") == "torch":
    import torch  # noqa: F401

import pytest

import ridge


def pytest_collection_modifyitems(config, items):
    if ridge.device_count() > 0:
        return
    skip = pytest.mark.skip(reason=f"no usable CUDA GPU: {ridge.no_gpu_reason()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
