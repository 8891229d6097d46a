"""File names that are not UTF-8, given as bytes, as str with surrogate escapes (os.fsdecode) or
as pathlib.Path, reach every path-taking function unchanged and come back the same."""
import json
import os
import pathlib
import shutil
import sys

import pytest

import ridge
from ridge import _ridge

SOURCE = pathlib.Path(__file__).resolve().parents[2]
CLI_DATA = SOURCE / "tests" / "cli" / "data"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes; others may refuse them")

LATIN1 = b"r\xe9sultat"  # "résultat" in Latin-1: not valid UTF-8


def spellings(folder: pathlib.Path, stem: bytes, suffix: bytes):
    """The same non-UTF-8 file name three ways: bytes, str with surrogate escapes, pathlib.Path."""
    raw = os.fsencode(folder) + b"/" + stem + suffix
    return {"bytes": raw, "str": os.fsdecode(raw), "pathlib": pathlib.Path(os.fsdecode(raw))}


KINDS = ["bytes", "str", "pathlib"]


def sample_results():
    results = ridge.Results()
    results.add(ridge.measure_wall(lambda: sum(range(500)), samples=5), "python.sum", params={"n": 500})
    return results


@pytest.mark.parametrize("kind", KINDS)
def test_results_round_trip_under_a_non_utf8_name(tmp_path, kind):
    path = spellings(tmp_path, LATIN1, b".json")[kind]
    sample_results().write(path)
    assert os.listdir(os.fsencode(tmp_path)) == [LATIN1 + b".json"]  # the exact bytes, nothing re-encoded
    again = ridge.Results.load(path)
    assert len(again) == 1 and again.records[0]["params"] == {"n": 500}


@pytest.mark.parametrize("kind", KINDS)
def test_csv_and_markdown_chosen_by_the_suffix_of_a_non_utf8_name(tmp_path, kind):
    results = sample_results()
    results.write(spellings(tmp_path, LATIN1, b".csv")[kind])
    results.write(spellings(tmp_path, LATIN1, b".md")[kind])
    csv = (tmp_path / os.fsdecode(LATIN1 + b".csv")).read_text().splitlines()
    assert csv[0].startswith("name,method") and len(csv) == 2
    assert "python.sum" in (tmp_path / os.fsdecode(LATIN1 + b".md")).read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_compare_reads_files_under_non_utf8_names(tmp_path, kind):
    base = spellings(tmp_path, b"base-\xff", b".json")[kind]
    slow = spellings(tmp_path, b"slow-\xfe", b".json")[kind]
    shutil.copy(CLI_DATA / "base.json", os.fsencode(base) if kind == "bytes" else base)
    shutil.copy(CLI_DATA / "slower.json", os.fsencode(slow) if kind == "bytes" else slow)
    assert ridge.compare(base, slow).regressions


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_non_utf8_file_is_named_in_the_error(tmp_path, kind):
    path = spellings(tmp_path, LATIN1, b".json")[kind]
    with pytest.raises(ridge.Error) as raised:
        ridge.Results.load(path)
    message = str(raised.value)
    assert "r\\xe9sultat.json" in message  # the undecodable byte shown, the message kept
    message.encode("utf-8")  # printable anywhere: no lone surrogates


@pytest.mark.parametrize("kind", KINDS)
def test_figures_save_under_non_utf8_names(tmp_path, kind):
    path = spellings(tmp_path, LATIN1, b".svg")[kind]
    ridge.roofline("h100-sxm").save(path)
    assert "<svg" in (tmp_path / os.fsdecode(LATIN1 + b".svg")).read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_saved_traces_analyze_under_non_utf8_names(tmp_path, kind):
    path = spellings(tmp_path, b"trace-\xe9", b".json")[kind]
    shutil.copy(CLI_DATA / "tiny_pytorch_trace.json", os.fsencode(path))
    expected = ridge.analyze_trace(CLI_DATA / "tiny_pytorch_trace.json")
    analysis = ridge.analyze_trace(path)
    assert analysis.kernel_count == expected.kernel_count > 0


@pytest.mark.parametrize("kind", KINDS)
def test_the_tracer_writes_under_non_utf8_names(tmp_path, kind):
    # A tracer that never ran writes an empty trace: the path handling needs no GPU.
    path = spellings(tmp_path, b"trace-\xe9", b".json")[kind]
    _ridge.Tracer().write(ridge._paths.fs_path(path))
    assert os.listdir(os.fsencode(tmp_path)) == [b"trace-\xe9.json"]
    assert ridge.analyze_trace(path).kernel_count == 0


def test_catalog_loads_from_a_non_utf8_name(tmp_path):
    keys = ridge.devices()
    path = os.fsencode(tmp_path) + b"/catalog-\xe9.json"
    shutil.copy(SOURCE / "data" / "catalog.json", path)
    ridge.load_catalog(path)  # the file holds the built-in catalog: nothing changes for other tests
    assert ridge.devices() == keys
    with pytest.raises(ridge.Error, match=r"absent-\\xe9"):
        ridge.load_catalog(os.fsdecode(os.fsencode(tmp_path) + b"/absent-\xe9.json"))


def write_cached_ceilings(folder: bytes, uuid: str) -> bytes:
    cache = {"schema": "ridge-ceilings-1", "device_uuid": uuid, "device_name": "NVIDIA H200",
             "measured_at_utc": "2026-12-01T00:00:00Z", "hbm_bytes_per_s": 4.4e12, "l2_bytes_per_s": 1.0e13,
             "tensor_flops_per_s": {"bf16": 8.0e14}, "fp32_flops_per_s": 6.5e13, "notes": ["fp8: not measured"]}
    os.makedirs(folder)
    path = folder + b"/ceilings-" + uuid.encode() + b".json"
    with open(path, "w") as f:
        json.dump(cache, f)
    return path


def test_ceilings_cache_in_a_non_utf8_folder(tmp_path, monkeypatch):
    folder = os.fsencode(tmp_path) + b"/cach\xe9"
    monkeypatch.setenv("RIDGE_CACHE_DIR", os.fsdecode(folder))  # os.environ encodes it back to these bytes
    assert os.fsencode(ridge.cache_folder()) == folder
    assert ridge.cached_ceilings("GPU-1234") is None  # no file yet: nothing to say
    path = write_cached_ceilings(folder, "GPU-1234")
    cached = ridge.cached_ceilings("GPU-1234")
    assert cached is not None and cached.from_cache
    assert cached.ceilings.memory_bytes_per_s == 4.4e12
    assert os.fsencode(cached.cache_file) == path
    assert cached.notes == ["fp8: not measured"]
    assert repr(cached).startswith("MeasuredCeilings(NVIDIA H200, measured 2026-12-01T00:00:00Z, from the cache")


def test_an_unusable_cache_file_is_a_warning_naming_it(tmp_path, monkeypatch):
    folder = os.fsencode(tmp_path) + b"/cach\xe9"
    monkeypatch.setenv("RIDGE_CACHE_DIR", os.fsdecode(folder))
    write_cached_ceilings(folder, "GPU-1234")
    os.rename(folder + b"/ceilings-GPU-1234.json", folder + b"/ceilings-GPU-other.json")
    with pytest.warns(RuntimeWarning, match=r"cach\\xe9.*another device"):
        assert ridge.cached_ceilings("GPU-other") is None


@pytest.mark.parametrize("call", [
    lambda p: ridge.Results.load(p), lambda p: sample_results().write(p), lambda p: ridge.analyze_trace(p),
    lambda p: ridge.roofline("h100-sxm").save(p), lambda p: ridge.load_catalog(p),
    lambda p: ridge.trace(p).__enter__(),
])
def test_paths_of_the_wrong_type_or_with_nul_are_refused(call):
    with pytest.raises(TypeError, match="str, bytes or os.PathLike"):
        call(3.5)
    with pytest.raises(ValueError, match="NUL"):
        call("a\0b.json")


@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
def test_a_live_trace_writes_into_a_new_non_utf8_folder(tmp_path, kind):
    torch = pytest.importorskip("torch")
    x = torch.randn(128, 128, device="cuda")
    torch.cuda.synchronize()
    path = spellings(tmp_path / os.fsdecode(b"d\xe9"), b"trace-\xe9", b".json")[kind]
    with ridge.trace(path) as t:
        x @ x
    assert t.analysis.kernel_count >= 1
    assert ridge.analyze_trace(path).kernel_count == t.analysis.kernel_count
