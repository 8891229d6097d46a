"""A user's script as mypy --strict reads it: every public name it touches must be typed and exported."""
import numpy as np

import ridge


def main() -> None:
    h100: ridge.Device = ridge.device("h100-sxm")
    ridge_point: float = h100.ceilings.ridge_point("bfloat16")
    placed: ridge.ShapePlacement = ridge.place_matmul(16, 4096, 4096, "bf16", device="h100-sxm")
    figure: ridge.Figure = ridge.roofline("h100-sxm", [("gemm", "bf16", 100.0, 1e14)])
    m: ridge.Measurement = ridge.measure_wall(lambda: None, cuda=False)
    rate: ridge.Rate = m.rate(flops=1e6)
    results = ridge.Results()
    results.add(m, "noop", params={"n": np.int64(3)})
    comparison: ridge.Comparison = ridge.compare(results, results)
    summary = ridge.Summary([1.0, 2.0, 3.0])
    rebuilt = ridge.Measurement.from_record(results.records[0])
    print(ridge_point, placed.bound, figure.warnings, rate.source, rate.tflops, m.ci, float(np.mean(m.samples)),
          comparison.ok, summary.median, float(rebuilt), ridge.matmul_intensity(4096, 4096, 4096),
          ridge.decode_ceiling, ridge.__all__)


if __name__ == "__main__":
    main()
