# The API reference of the ridge Python package, built by scripts/build_api_docs.sh with warnings
# as errors. autodoc imports the package: the installed wheel, or build/python (scripts say which).
import ridge

project = "ridge"
release = version = ridge.__version__
# No napoleon: the docstrings are prose reST with no Google or NumPy sections, and napoleon reads a
# property docstring's first "text: more" as "type: description".
extensions = ["sphinx.ext.autodoc"]
exclude_patterns = ["_build", "requirements.txt"]
html_theme = "alabaster"
html_title = "ridge Python API"

# Every cross-reference must resolve (sphinx-build -n).
nitpicky = True
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
# The constructor's docstring too: a C++ class's signature is read from it ("__init__(self, ...)").
autoclass_content = "both"
autodoc_preserve_defaults = True
add_module_names = False
# Builds run offline (CI reaches no documentation site), so there is no intersphinx inventory for
# the standard library or NumPy: these few targets of annotations are accepted by name. Sphinx
# itself resolves the builtins (float, str, dict ...) and typing's names.
nitpick_ignore = [
    ("py:class", "os.PathLike"),
    ("py:class", "collections.abc.Sequence"),  # nanobind's signatures of list arguments
    ("py:class", "collections.abc.Mapping"),  # and of dict arguments
    ("py:class", "pathlib.Path"),
    ("py:class", "numpy.ndarray"),
]



def _nanobind_property_type(app, what, name, obj, options, lines):
    # A C++ property's getter is a nanobind function: autodoc cannot read its type, which nanobind
    # records as "def (self) -> T" (what the stubs are made from), and an undocumented property's
    # docstring is that text. Show T as the property's type instead.
    signature = getattr(getattr(obj, "fget", None), "__nb_signature__", None)
    if what != "property" or not signature:
        return
    if lines and lines[0].startswith("(self) -> "):
        del lines[:]
    type_name = signature[0][0].rpartition(" -> ")[2]
    if type_name.startswith("ridge._ridge."):  # as the reference names it: ridge.X where ridge exports X
        short = type_name.removeprefix("ridge._ridge.")
        type_name = f"ridge.{short}" if short in ridge.__all__ else "~" + type_name
    lines += ["", ":rtype: " + type_name]


# Classes that ridge makes and hands back: their constructors take its internal data (the C++
# measurement, JSON text), so the reference shows no constructor to call.
MADE_BY_RIDGE = {"ridge.Measurement", "ridge.Comparison", "ridge.Sweep", "ridge.Figure",
                 "ridge.TraceAnalysis", "ridge._trace.TraceSession", "ridge.HistoryCheck"}


def _signature(app, what, name, obj, options, signature, return_annotation):
    if what == "class" and name in MADE_BY_RIDGE:
        return "", None
    # nanobind's signatures of C++ constructors and methods name `self`; Python's leave it out.
    if what in ("class", "method") and signature and signature.startswith("(self"):
        return "(" + signature.removeprefix("(self").removeprefix(", "), return_annotation
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _nanobind_property_type)
    app.connect("autodoc-process-signature", _signature)
