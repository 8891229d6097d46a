"""File paths on their way to the C++ library: any name the operating system accepts.

On Linux a file name is bytes and need not be UTF-8. Python shows such a name as a str with
surrogate escapes (``os.fsdecode``, ``os.listdir``) or as bytes; ``os.fsencode`` gives back the
exact bytes either way, and the extension takes them as they are (``std::filesystem::path``).
"""
from __future__ import annotations

import os
from typing import Union

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def fs_path(path: PathArg, what: str = "path") -> bytes:
    """`path` (str, bytes or os.PathLike) as the bytes the operating system uses for it.
    TypeError for anything else, ValueError for a NUL byte (no file can have one)."""
    try:
        encoded = os.fsencode(path)
    except TypeError:
        raise TypeError(f"{what} must be a str, bytes or os.PathLike, not {type(path).__name__}") from None
    if b"\0" in encoded:
        raise ValueError(f"{what} contains a NUL byte: {path!r}")
    return encoded


def suffix(path: bytes) -> str:
    """The lower-case extension of an encoded path ('.json', '' when none)."""
    return os.fsdecode(os.path.splitext(path)[1]).lower()
