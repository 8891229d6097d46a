"""The house rule that keeps ridge readable: no function outside kernel code is longer than 120
lines (docs/architecture.md). Measured with lizard, which parses C++ and Python."""
import pathlib

import pytest

lizard = pytest.importorskip("lizard", reason="lizard is not installed (scripts/test_python.sh installs it)")

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_LINES = 120
# Kernel code (.cu) is out of the rule: a kernel reads best as one piece.
SOURCES = {"src": (".cpp", ".hpp"), "tools": (".cpp", ".hpp"), "include": (".hpp",), "python/src": (".cpp", ".hpp"),
           "python/ridge": (".py",), "tests": (".cpp", ".hpp", ".py"), "bench": (".py",), "scripts": (".py",)}


def _files():
    for folder, suffixes in SOURCES.items():
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in suffixes and path.is_file():
                yield path


def test_the_sources_are_there():
    files = list(_files())
    if not (ROOT / "src").is_dir():
        pytest.skip(f"no source tree at {ROOT} (the tests run from an installed package alone)")
    assert len(files) > 100, f"found only {len(files)} source files under {ROOT}"


def test_no_function_is_over_120_lines():
    if not (ROOT / "src").is_dir():
        pytest.skip(f"no source tree at {ROOT}")
    long_ones = []
    for path in _files():
        for function in lizard.analyze_file(str(path)).function_list:
            if function.length > MAX_LINES:
                long_ones.append(f"{path.relative_to(ROOT)}:{function.start_line}: {function.long_name} "
                                 f"({function.length} lines)")
    assert not long_ones, f"functions over {MAX_LINES} lines; split them:\n" + "\n".join(long_ones)
