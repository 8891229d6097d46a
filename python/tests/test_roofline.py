"""The catalog, shape placement, roofline plots and sweeps: no GPU needed."""
import math
import re
import xml.etree.ElementTree as ET

import pytest

import ridge


def test_catalog_devices_and_their_datasheet_ceilings():
    keys = ridge.devices()
    assert "h100-sxm" in keys and "h200-sxm" in keys
    h100 = ridge.device("h100-sxm")
    assert h100.ceilings.source == "datasheet"
    assert h100.ceilings.memory_bytes_per_s == pytest.approx(3.35e12)
    assert h100.ceilings.ridge_point("bf16") == pytest.approx(295, rel=0.01)
    with pytest.raises(ridge.UsageError, match="h100-sxm"):  # the message lists the known keys
        ridge.device("no-such-gpu")


def test_decode_at_batch_16_is_memory_bound_on_an_h100():
    p = ridge.place_matmul(16, 4096, 4096, "bf16", device="h100-sxm")
    assert p.intensity_flop_per_byte == pytest.approx(15.88, rel=1e-3)
    assert p.bound == "memory"
    assert p.attainable_flops_per_s == pytest.approx(p.intensity_flop_per_byte * 3.35e12)
    assert p.ridge_point == pytest.approx(295.4, rel=1e-3)
    assert ridge.place_matmul(512, 4096, 4096, "bf16", device="h100-sxm").bound == "compute"


def test_a_placement_reads_as_its_answer():
    p = ridge.place_matmul(16, 4096, 4096, "bf16", device="h100-sxm")
    text = str(p)
    assert text.startswith("matmul 16x4096x4096 bf16: intensity 15.9 FLOP/byte")
    assert "ridge point 295.4 FLOP/byte: memory-bound" in text and "TFLOP/s" in text
    assert p.placed_on == "datasheet of " + ridge.device("h100-sxm").name
    assert repr(p) == f"ShapePlacement({text}; on {p.placed_on})"


def test_user_ceilings_and_bad_arguments():
    mine = ridge.DeviceCeilings(2e12, {"fp32": 50e12, "bf16": 400e12})
    assert mine.source == "user"
    assert ridge.place_matmul(64, 64, 64, "fp32", device=mine).roof_flops_per_s == 50e12
    with pytest.raises(ridge.UsageError):
        ridge.place_matmul(0, 64, 64, device=mine)
    with pytest.raises(ridge.UsageError):
        ridge.place_matmul(64, 64, 64, dtype="int3", device=mine)
    with pytest.raises(TypeError):
        ridge.ceilings(3.5)


def test_roofline_figure_is_the_library_svg_with_data_for_matplotlib(tmp_path):
    fig = ridge.roofline("h200-sxm", [("my kernel", "bf16", 100.0, 200e12)], title="mine")
    assert fig.svg.startswith("<?xml") and "my kernel" in fig.svg and "mine" in fig.svg
    assert any(p[2] == "my kernel" for s in fig.data["series"] for p in s["points"])
    fig.save(tmp_path / "r.svg")
    assert (tmp_path / "r.svg").read_text() == fig.svg
    assert repr(fig).startswith("Figure('mine', ")
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    assert fig.to_matplotlib().axes


def test_sweep_over_sizes_with_knees_and_warnings():
    slow = ridge.DeviceCeilings(1e15, {"fp32": 1e18})  # far above what a CPU loop reaches
    s = ridge.sweep(lambda n: (lambda: sum(range(n))), [1000, 4000, 16000], method="wall_sync",
                    bytes=lambda n: 8.0 * n, ceilings=slow, samples=5, warmup=1)
    assert [r["params"]["size"] for r in s.records] == [1000, 4000, 16000]
    assert all(r["bytes_per_s"] > 0 for r in s.records)
    assert s.knees == {0.7: None, 0.9: None}  # never reaches 70% of 1 PB/s
    assert len(s.warnings) == 3
    assert s.plot.svg.startswith("<?xml")
    fast = ridge.DeviceCeilings(1.0, {"fp32": 1.0})  # 1 byte/s: every record is impossible
    impossible = ridge.sweep(lambda n: (lambda: None), [10], method="wall_sync", bytes=lambda n: 1e6,
                             ceilings=fast, samples=3, warmup=0)
    assert any(w.startswith("impossible") for w in impossible.warnings[0])
    with pytest.raises(TypeError):
        ridge.sweep(42, [1])


# ---- issue 26: no silent wrong roofline answers -------------------------------------------------------

def test_bf16_on_a_t4_is_refused_not_placed_under_fp32():
    with pytest.raises(ridge.UsageError, match=r"'bf16'.*T4.*it lists fp16, fp32"):
        ridge.place_matmul(16, 4096, 4096, "bf16", device="t4")
    assert ridge.place_matmul(16, 4096, 4096, "fp16", device="t4").roof_flops_per_s == pytest.approx(65e12)
    with pytest.raises(ridge.UsageError, match="bf16"):
        ridge.device("t4").ceilings.roof_for("bf16")
    # Drawn on its roofline, a BF16 point is compared with nothing, and the figure says so.
    fig = ridge.roofline("t4", [("k", "bf16", 100.0, 1e12)])
    assert any("no BF16 roof" in w for w in fig.warnings)


def test_fp32_on_ceilings_that_list_only_bf16_is_refused():
    only_bf16 = ridge.DeviceCeilings(2e12, {"bf16": 400e12})
    with pytest.raises(ridge.UsageError, match=r"'fp32'.*it lists bf16"):
        ridge.place_matmul(64, 64, 64, "fp32", device=only_bf16)
    assert ridge.place_matmul(64, 64, 64, "bf16", device=only_bf16).roof_flops_per_s == 400e12


@pytest.mark.parametrize("bandwidth, peaks, field", [
    (-1, {"bf16": 1e12}, "memory_bytes_per_s"),
    (0, {"bf16": 1e12}, "memory_bytes_per_s"),
    (math.nan, {"bf16": 1e12}, "memory_bytes_per_s"),
    (math.inf, {"bf16": 1e12}, "memory_bytes_per_s"),
    (1e12, {"bf17": 1e12}, "'bf17' is not a known dtype"),
    (1e12, {"bf16": math.nan}, r"peak_flops_per_s\['bf16'\]"),
    (1e12, {"bf16": -1.0}, r"peak_flops_per_s\['bf16'\]"),
    (1e12, {"fp32": math.inf}, r"peak_flops_per_s\['fp32'\]"),
])
def test_device_ceilings_are_validated_naming_the_field(bandwidth, peaks, field):
    with pytest.raises(ridge.UsageError, match=field):
        ridge.DeviceCeilings(bandwidth, peaks)
    with pytest.raises(ValueError):  # UsageError is a ValueError
        ridge.DeviceCeilings(bandwidth, peaks)


@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, math.inf])
def test_nan_negative_and_zero_points_are_refused_naming_the_point(bad):
    with pytest.raises(ridge.UsageError, match=r"'bad point'.*intensity_flop_per_byte"):
        ridge.roofline("h200-sxm", [("good", "bf16", 10.0, 1e12), ("bad point", "bf16", bad, 1e12)])
    with pytest.raises(ridge.UsageError, match=r"'slow'.*flops_per_s"):
        ridge.roofline("h200-sxm", [("slow", "bf16", 10.0, bad)])


def test_a_point_above_the_roof_is_flagged_in_the_figure_and_the_svg():
    # BF16 at 10 FLOP/byte on an H200 (4.8 TB/s): at most 48 TFLOP/s; 100 is impossible.
    fig = ridge.roofline("h200-sxm", [("too fast", "bf16", 10.0, 100e12), ("fine", "bf16", 10.0, 20e12)])
    assert len(fig.warnings) == 1 and "too fast" in fig.warnings[0] and "impossible" in fig.warnings[0]
    assert "1 warning(s)" in repr(fig)
    assert "too fast (impossible: above the roof)" in fig.svg
    assert 'class="warning"' in fig.svg
    assert not ridge.roofline("h200-sxm", [("fine", "bf16", 10.0, 20e12)]).warnings
    # The plot data renders back with its warnings.
    assert 'class="warning"' in ridge._ridge.render_plot(fig.data)


def _strip(tag):
    return tag.rsplit("}", 1)[-1]


def test_legend_colours_are_the_lines_colours():
    # The H200's FP16 and BF16 roofs coincide and share one legend entry.
    svg = ridge.roofline("h200-sxm", [("k", "bf16", 100.0, 200e12)]).svg
    root = ET.fromstring(svg.split("?>", 1)[1])
    line_color, drawn = {}, set()
    for g in root.iter():
        if _strip(g.tag) == "g" and g.get("class") == "series":
            for child in g:
                if _strip(child.tag) == "polyline":
                    drawn.add(child.get("stroke"))
                    if g.get("data-name"):
                        line_color[g.get("data-name")] = child.get("stroke")
    legend = next(g for g in root.iter() if _strip(g.tag) == "g" and g.get("class") == "legend")
    legend_colors, pending = set(), None
    entries = 0
    for child in legend:
        if _strip(child.tag) == "line":
            pending = child.get("stroke")
        elif _strip(child.tag) == "text":
            if pending is not None:
                entries += 1
                legend_colors.add(pending)
                assert line_color.get(child.text) == pending, f"legend colour of {child.text!r}"
            pending = None
    assert entries >= 4
    assert drawn <= legend_colors, f"lines drawn in colours the legend does not show: {drawn - legend_colors}"


def test_bound_of_nan_is_an_error_not_compute():
    with pytest.raises(ridge.UsageError, match="intensity"):
        ridge.bound(math.nan, 1, 1)
    assert ridge.bound(1, 100, 1) == "memory" and ridge.bound(1000, 100, 1) == "compute"


def test_no_device_means_gpu_0_and_without_a_gpu_an_error_asking_for_device():
    if ridge.device_count() > 0:
        pytest.skip("a GPU is usable: test_no_device_uses_gpu_0 covers it")
    with pytest.raises(ridge.NoGpuError, match="device="):
        ridge.place_matmul(16, 4096, 4096)
    with pytest.raises(ridge.NoGpuError, match="device="):
        ridge.roofline()


@pytest.mark.gpu
def test_no_device_uses_gpu_0():
    p = ridge.place_matmul(16, 4096, 4096, "bf16")
    assert p.placed_on.startswith("measured")
    assert p.roof_flops_per_s == ridge.ceilings(0).peak_flops("bf16")
    assert ridge.roofline().svg.startswith("<?xml")


NAN, INF = math.nan, math.inf
MINE = ridge.DeviceCeilings(2e12, {"fp32": 50e12, "bf16": 400e12})
HOSTILE = [
    # (what, call, exception types)
    ("bound nan", lambda: ridge.bound(NAN, 1, 1), ridge.UsageError),
    ("bound inf", lambda: ridge.bound(INF, 1, 1), ridge.UsageError),
    ("bound negative", lambda: ridge.bound(-1, 1, 1), ridge.UsageError),
    ("bound zero peak", lambda: ridge.bound(1, 0, 1), ridge.UsageError),
    ("bound str", lambda: ridge.bound("x", 1, 1), TypeError),
    ("bound None", lambda: ridge.bound(None, 1, 1), TypeError),
    ("attainable nan", lambda: ridge.attainable_flops(NAN, 1, 1), ridge.UsageError),
    ("attainable inf peak", lambda: ridge.attainable_flops(1, INF, 1), ridge.UsageError),
    ("attainable negative bandwidth", lambda: ridge.attainable_flops(1, 1, -1), ridge.UsageError),
    ("ridge_point zero", lambda: ridge.ridge_point(0, 1), ridge.UsageError),
    ("ridge_point inf bandwidth", lambda: ridge.ridge_point(1, INF), ridge.UsageError),
    ("efficiency nan", lambda: ridge.roofline_efficiency(NAN, 1, 1, 1), ridge.UsageError),
    ("efficiency negative", lambda: ridge.roofline_efficiency(-1, 1, 1, 1), ridge.UsageError),
    ("floor inf bytes", lambda: ridge.roofline_floor_s(INF, 1, 1, 1), ridge.UsageError),
    ("floor nan flops", lambda: ridge.roofline_floor_s(1, NAN, 1, 1), ridge.UsageError),
    ("intensity inf", lambda: ridge.matmul_intensity(INF, 1, 1), ridge.UsageError),
    ("intensity huge", lambda: ridge.matmul_intensity(1e300, 1e300, 1e300), ridge.UsageError),
    ("intensity zero", lambda: ridge.matmul_intensity(0, 1, 1), ridge.UsageError),
    ("intensity bad dtype", lambda: ridge.matmul_intensity(1, 1, 1, "bf17"), ridge.UsageError),
    ("intensity nan element", lambda: ridge.matmul_intensity(1, 1, 1, NAN), ridge.UsageError),
    ("flops huge", lambda: ridge.matmul_flops(1e300, 1e300, 1e300), ridge.UsageError),
    ("bytes negative", lambda: ridge.matmul_bytes(1, -1, 1), ridge.UsageError),
    ("decode nan", lambda: ridge.decode_ceiling(NAN, 1), ridge.UsageError),
    ("amdahl nan speedup", lambda: ridge.amdahl_speedup(0.5, NAN), ridge.UsageError),
    ("amdahl limit nan", lambda: ridge.amdahl_limit(NAN), ridge.UsageError),
    ("amdahl required fraction > 1", lambda: ridge.amdahl_required_speedup(2, 1.5), ridge.UsageError),
    ("place nan m", lambda: ridge.place_matmul(NAN, 1, 1, device=MINE), ridge.UsageError),
    ("place huge", lambda: ridge.place_matmul(1e300, 1e300, 1e300, device=MINE), ridge.UsageError),
    ("place str m", lambda: ridge.place_matmul("16", 1, 1, device=MINE), TypeError),
    ("place bad dtype", lambda: ridge.place_matmul(1, 1, 1, "bf17", device=MINE), ridge.UsageError),
    ("place missing dtype", lambda: ridge.place_matmul(1, 1, 1, "fp8", device=MINE), ridge.UsageError),
    ("place float device", lambda: ridge.place_matmul(1, 1, 1, device=3.5), TypeError),
    ("place unknown key", lambda: ridge.place_matmul(1, 1, 1, device="no-such-gpu"), ridge.UsageError),
    ("roofline nan", lambda: ridge.roofline(MINE, [("x", "bf16", NAN, 1e12)]), ridge.UsageError),
    ("roofline negative", lambda: ridge.roofline(MINE, [("x", "bf16", 1.0, -1e12)]), ridge.UsageError),
    ("roofline short tuple", lambda: ridge.roofline(MINE, [("x", "bf16", 1.0)]), TypeError),
    ("roofline not a list", lambda: ridge.roofline(MINE, 5), TypeError),
    ("roofline str rate", lambda: ridge.roofline(MINE, [("x", "bf16", 1.0, "fast")]), TypeError),
    ("ceilings nan", lambda: ridge.DeviceCeilings(NAN, {}), ridge.UsageError),
    ("ceilings str", lambda: ridge.DeviceCeilings("fast", {}), TypeError),
    ("ceilings str peak", lambda: ridge.DeviceCeilings(1e12, {"bf16": "x"}), TypeError),
    ("ceilings nan l2", lambda: ridge.DeviceCeilings(1e12, {}, l2_bytes_per_s=NAN), ridge.UsageError),
    ("roof_for unknown", lambda: MINE.roof_for("bf17"), ridge.UsageError),
    ("ceilings of a float", lambda: ridge.ceilings(3.5), TypeError),
    ("device empty", lambda: ridge.device(""), ridge.UsageError),
    ("device None", lambda: ridge.device(None), TypeError),
    ("missing catalog", lambda: ridge.load_catalog("/no/such/catalog.json"), (ridge.UsageError, FileNotFoundError)),
]


@pytest.mark.parametrize("what, call, raises", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_arguments_get_a_documented_exception(what, call, raises):
    with pytest.raises(raises):
        call()


def test_hostile_but_valid_arguments_get_right_answers():
    assert ridge.amdahl_speedup(0.5, math.inf) == pytest.approx(2.0)
    assert ridge.amdahl_required_speedup(0.5, math.inf) is None  # unreachable
    assert not ridge.roofline(MINE, []).warnings
    huge = ridge.roofline(MINE, [("huge", "bf16", 1e6, 1e30)])  # drawn, and flagged as impossible
    assert any("impossible" in w for w in huge.warnings)
    tiny = ridge.place_matmul(1, 1, 1, "fp32", device=MINE)
    assert tiny.bound == "memory" and tiny.floor_s > 0
