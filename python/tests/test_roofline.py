"""The catalog, shape placement, roofline plots and sweeps: no GPU needed."""
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
    assert repr(p) == f"ShapePlacement({text})"


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
