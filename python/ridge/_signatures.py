"""Signatures for the C++ functions: ``inspect.signature`` (and so help(), IDEs and Sphinx) reads
them from what nanobind records of each binding (``__nb_signature__``: its text and defaults)."""
from __future__ import annotations

import ast
import functools
import inspect
import re
from typing import Callable

_DEFAULT = re.compile(r"\\(\d+)")


def signature_of(fn) -> inspect.Signature:
    """The first overload's signature of a nanobind function (the docstring lists every overload)."""
    text, _doc, defaults = fn.__nb_signature__[0]
    tree = ast.parse(_DEFAULT.sub(r"__default_\1", text) + ": pass").body[0]
    assert isinstance(tree, ast.FunctionDef), text
    args = tree.args

    def annotation(node):
        return inspect.Parameter.empty if node is None else ast.unparse(node)

    def default(node):
        if node is None:
            return inspect.Parameter.empty
        match = re.fullmatch(r"__default_(\d+)", ast.unparse(node))
        return defaults[int(match.group(1))] if match and defaults else ast.literal_eval(node)

    positional = args.posonlyargs + args.args
    padded = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [inspect.Parameter(a.arg, inspect.Parameter.POSITIONAL_ONLY if a in args.posonlyargs
                                else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=default(d), annotation=annotation(a.annotation))
              for a, d in zip(positional, padded)]
    if args.vararg:
        params.append(inspect.Parameter(args.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    params += [inspect.Parameter(a.arg, inspect.Parameter.KEYWORD_ONLY, default=default(d),
                                 annotation=annotation(a.annotation))
               for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        params.append(inspect.Parameter(args.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params, return_annotation=annotation(tree.returns))


def with_signature(fn) -> Callable:
    """`fn` called through a Python function that carries its signature (nanobind's own functions
    give ``inspect.signature`` nothing to read)."""
    try:
        signature = signature_of(fn)
    except (AttributeError, SyntaxError, ValueError, IndexError, TypeError):
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return fn(*args, **kwargs)

    call.__signature__ = signature  # type: ignore[attr-defined]
    return call


def class_signature(cls: type) -> inspect.Signature:
    """The signature of calling a nanobind class: its constructor's, without ``self``."""
    init = signature_of(cls.__init__)  # type: ignore[misc]
    return init.replace(parameters=list(init.parameters.values())[1:], return_annotation=inspect.Signature.empty)
