#!/usr/bin/env bash
# Builds the Python API reference (docs/api, Sphinx autodoc) into build/api-docs, with every
# warning an error and every cross-reference checked (-W --keep-going -n). Needs no GPU.
#
# autodoc imports ridge: from the wheel's environment that scripts/test_python.sh made
# (RIDGE_VENV, default build/python-venv), where the pinned docs/api/requirements.txt is added;
# without one, from the build tree (build/python, after scripts/setup.sh) in an environment of its
# own, build/api-docs-venv, kept between runs. PYTHON: the Python for that environment (3.11+).
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=docs/api/requirements.txt
venv="$(pwd)/${RIDGE_VENV:-build/python-venv}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import ridge" 2>/dev/null; then
  python="$venv/bin/python"
  "$python" -m pip install -q -r "$requirements"
  from="the wheel installed in $venv"
elif [ -f build/python/ridge/__init__.py ]; then
  docs_venv="$(pwd)/build/api-docs-venv"
  # Made again when the requirements change (the stamp is a copy of the file it was made from).
  if ! cmp -s "$requirements" "$docs_venv/requirements.txt"; then
    rm -rf "$docs_venv"
    "${PYTHON:-python3}" -m venv "$docs_venv"
    "$docs_venv/bin/pip" install -q -r "$requirements" numpy
    cp "$requirements" "$docs_venv/requirements.txt"
  fi
  python="$docs_venv/bin/python"
  export PYTHONPATH="$(pwd)/build/python${PYTHONPATH:+:$PYTHONPATH}"
  from="the build tree (build/python)"
else
  echo "build_api_docs: no ridge to document: run scripts/setup.sh (and scripts/test_python.sh) first" >&2
  exit 1
fi
echo "build_api_docs: documenting $("$python" -c 'import ridge; print(ridge.__file__)') ($from)"
rm -rf build/api-docs
"$python" -m sphinx -W --keep-going -n -q -b html docs/api build/api-docs
echo "build_api_docs: build/api-docs/index.html"
