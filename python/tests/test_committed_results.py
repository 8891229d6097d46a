"""Every result file committed under results/ loads, compressed or not; what is not a result file
(a Chrome trace aside) sits in folders of its own, holding no result file."""
import gzip
import json
from collections import defaultdict
from pathlib import Path

import ridge

RESULTS = Path(__file__).resolve().parents[2] / "results"


def json_files():
    return sorted(p for p in RESULTS.rglob("*") if p.name.endswith((".json", ".json.gz")))


def document(path: Path):
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)


def test_every_committed_result_file_loads():
    by_folder = defaultdict(list)
    for path in json_files():
        by_folder[path.parent].append(path)
    loaded = 0
    for folder, paths in by_folder.items():
        kinds = {}
        for path in paths:
            doc = document(path)
            kinds[path] = ("result" if isinstance(doc, dict) and "records" in doc and "context" in doc
                           else "trace" if isinstance(doc, dict) and "traceEvents" in doc else "other")
        if "result" not in kinds.values():
            continue  # a folder of a benchmark's own data
        strays = [p.name for p, kind in kinds.items() if kind == "other"]
        assert not strays, f"{folder} mixes result files with other JSON: {strays}"
        for path, kind in kinds.items():
            if kind == "result":
                ridge.Results.load(path)  # raises when it does not load
                loaded += 1
            else:
                assert ridge.analyze_trace(path).kernel_count > 0, path
    assert loaded >= 60, f"only {loaded} result files under {RESULTS}"
