"""The API reference (docs/api, built by scripts/build_api_docs.sh) documents every public name:
each name in ridge.__all__ has its own auto* directive on one of its pages, and each documented
name is public, so a name added to or removed from the package fails here until the reference
follows."""
import re
from pathlib import Path

import ridge

API = Path(__file__).resolve().parents[2] / "docs" / "api"
DIRECTIVE = re.compile(r"^\.\. auto(?:function|class|exception|data)::\s+([\w.]+)", re.MULTILINE)
MODULE = re.compile(r"^\.\. currentmodule::\s+([\w.]+)", re.MULTILINE)


def documented() -> dict:
    """Fully qualified name -> the page that documents it."""
    names = {}
    for page in sorted(API.glob("*.rst")):
        text = page.read_text(encoding="utf-8")
        for match in DIRECTIVE.finditer(text):
            modules = MODULE.findall(text[:match.start()])
            name = match.group(1)
            names[name if "." in name else f"{modules[-1] if modules else ''}.{name}"] = page.name
    return names


def test_every_public_name_is_in_the_reference():
    missing = sorted(set(ridge.__all__) - {n.removeprefix("ridge.") for n in documented() if n.count(".") == 1})
    assert not missing, f"docs/api has no auto* directive for ridge.{', ridge.'.join(missing)}: add them"


def test_the_reference_documents_only_names_that_exist():
    import importlib

    stale = []
    for name in documented():
        module, _, attribute = name.rpartition(".")
        if module == "ridge" and attribute not in ridge.__all__:
            stale.append(name)
        elif not hasattr(importlib.import_module(module), attribute):
            stale.append(name)
    assert not stale, f"docs/api documents names the package does not export: {stale}"


def test_the_parser_finds_the_pages():
    # A parser that found nothing would make the first test fail loudly, not pass: guard it anyway.
    names = documented()
    assert names["ridge.measure_cuda"] == "timers.rst" and names["ridge.Device"] == "types.rst"


def test_every_public_name_has_a_docstring_of_its_own():
    # nanobind's exceptions once carried RuntimeError's "Unspecified run-time error.".
    import inspect

    lacking = []
    for name in ridge.__all__:
        value = getattr(ridge, name)
        if not inspect.isclass(value) and not callable(value):
            continue
        doc = value.__doc__
        inherited = inspect.isclass(value) and any(doc == base.__doc__ for base in value.__mro__[1:])
        if not doc or not doc.strip() or inherited:
            lacking.append(name)
    assert not lacking, f"no docstring of their own: {lacking}"


def test_each_method_says_what_its_number_means():
    for method in ridge.Method:
        assert method.__doc__ == ridge.describe_method(method) and method.__doc__
