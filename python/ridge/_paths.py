"""File paths on their way to the C++ library: any name the operating system accepts.

On Linux a file name is bytes and need not be UTF-8. Python shows such a name as a str with
surrogate escapes (``os.fsdecode``, ``os.listdir``) or as bytes; ``os.fsencode`` gives back the
exact bytes either way, and the extension takes them as they are (``std::filesystem::path``).
"""
from __future__ import annotations

import errno
import os
from typing import Any, Union

from . import _ridge

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
# The exact bytes of a path, as the extension's std::filesystem::path parameters take them. Their
# generated stubs say str | os.PathLike, which bytes is not to a type checker: Any says "as given".
CppPath = Any


def fs_path(path: PathArg, what: str = "path") -> CppPath:
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


class _PathError(OSError):
    # The message names the path as ridge's messages do (bytes that are not UTF-8 as \xNN), not as
    # OSError's repr of `filename` would (doubled backslashes).
    def __str__(self) -> str:
        return str(self.strerror)


class PathNotFoundError(_PathError, FileNotFoundError, _ridge.UsageError):
    """A file or folder ridge was asked to read does not exist: a FileNotFoundError (``errno``
    ENOENT, ``filename``) and a ridge.UsageError, so either ``except`` catches it."""


class NotAFileError(_PathError, IsADirectoryError, _ridge.UsageError):
    """A folder was given where ridge reads a file: an IsADirectoryError and a ridge.UsageError."""


def existing_path(path: PathArg, what: str = "path", folder_ok: bool = False) -> CppPath:
    """`path` as fs_path gives it, after checking that it exists (PathNotFoundError) and, unless
    `folder_ok`, that it is no folder (NotAFileError)."""
    encoded = fs_path(path, what)
    shown = encoded.decode("utf-8", "backslashreplace")
    if not os.path.exists(encoded):
        raise PathNotFoundError(errno.ENOENT, f"{what} {shown} does not exist", shown)
    if not folder_ok and os.path.isdir(encoded):
        raise NotAFileError(errno.EISDIR, f"{what} {shown} is a folder, not a file", shown)
    return encoded
