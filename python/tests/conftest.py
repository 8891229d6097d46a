import pytest

import ridge


def pytest_collection_modifyitems(config, items):
    if ridge.device_count() > 0:
        return
    skip = pytest.mark.skip(reason=f"no usable CUDA GPU: {ridge.no_gpu_reason()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
