// `ridge amdahl`: Amdahl's law both ways. How much faster the whole gets when a fraction of the
// time gets S times faster, or what S a fraction needs to reach a target overall speedup.
// The trace-fed form (--trace FILE --kernel NAME --speedup S) takes the fraction from a trace.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/errors.hpp"
#include "ridge/roofline.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/trace/what_if.hpp"

namespace ridge::cli {

namespace {

struct AmdahlCommand {
  double fraction = std::numeric_limits<double>::quiet_NaN();
  std::string speedup;  // text, so "inf" works
  std::string target;
  std::string trace;   // a ridge (or PyTorch profiler) Chrome trace
  std::string kernel;  // kernel name, exact or substring
};

/// Parses a speedup factor: a positive number, or "inf"/"infinity" (the part vanishes).
double parse_factor(const std::string& text, const char* flag) {
  if (text == "inf" || text == "infinity" || text == "Inf") return std::numeric_limits<double>::infinity();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || std::isnan(v))
    throw UsageError(fmt::format("{} must be a number (or 'inf'), got '{}'", flag, text));
  if (!(v > 0)) throw UsageError(fmt::format("{} must be > 0, got {}", flag, text));
  return v;
}

std::string factor_text(double s) { return std::isinf(s) ? "infinitely" : fmt::format("{:.3g}x", s); }

std::string limit_text(double fraction) {
  const double limit = amdahl_limit(fraction);
  return std::isinf(limit) ? "unbounded (the part is the whole program)"
                           : fmt::format("{:.3g}x = 1/(1-{:.3g})", limit, fraction);
}

/// Prints the forward question: fraction `f` of the time made `s` times faster.
void print_forward(std::FILE* out, double f, double s) {
  const double overall = amdahl_speedup(f, s);
  fmt::print(out, "{:.3g}% of the time made {} faster: {:.3g}x overall (run time {:.1f}% of before)\n", f * 100,
             factor_text(s), overall, 100 / overall);
  fmt::print(out, "limit if that part took no time at all: {}\n", limit_text(f));
}

/// Prints the inverse question: what speedup fraction `f` needs for `target` overall.
void print_inverse(std::FILE* out, double f, double target) {
  const auto need = amdahl_required_speedup(f, target);
  if (!need) {
    fmt::print(out, "{:.3g}x overall is unreachable by speeding up {:.3g}% of the time: even made infinitely fast "
                    "it gives at most {}\n",
               target, f * 100, limit_text(f));
    return;
  }
  fmt::print(out, "{:.3g}x overall needs the {:.3g}% part to run {:.3g}x faster\n", target, f * 100, *need);
  fmt::print(out, "limit if that part took no time at all: {}\n", limit_text(f));
}

int run_amdahl_trace(const AmdahlCommand& c) {
  if (c.kernel.empty()) throw UsageError("--trace needs --kernel NAME (exact, or a substring of the kernel's name)");
  if (c.speedup.empty()) throw UsageError("--trace needs --speedup S: how many times faster the kernel gets");
  if (!std::isnan(c.fraction)) throw UsageError("--trace takes the fraction from the trace; drop --fraction");
  const double s = parse_factor(c.speedup, "--speedup");
  const auto w = trace::kernel_what_if(trace::load_trace(c.trace), c.kernel, s);
  fmt::print("kernel '{}' matched {} name(s), {} launches\n", c.kernel, w.matched.size(), w.launches);
  for (const auto& name : w.matched) fmt::print("  {}\n", name.substr(0, 120));
  fmt::print("share of GPU busy time {:.1f}%: {} faster -> {:.3f}x overall if the GPU is the bottleneck\n",
             100 * w.fraction_of_busy, factor_text(s), w.overall_speedup_busy);
  fmt::print("share of the traced wall span {:.1f}%: -> {:.3f}x overall on wall time\n", 100 * w.fraction_of_span,
             w.overall_speedup_span);
  fmt::print("{}\n", w.explanation);
  return 0;
}

int run_amdahl(const AmdahlCommand& c) {
  if (!c.trace.empty()) return run_amdahl_trace(c);
  if (std::isnan(c.fraction))
    throw UsageError("--fraction F is required: the share of run time the change affects, in [0, 1]");
  if (!(c.fraction >= 0 && c.fraction <= 1))
    throw UsageError(fmt::format("--fraction must be within [0, 1] (a share of the run time, e.g. 0.3), got {}",
                                 c.fraction));
  if (c.speedup.empty() == c.target.empty())
    throw UsageError("give exactly one of --speedup S (what the whole gains) or --target T (what the part needs)");
  if (!c.speedup.empty())
    print_forward(stdout, c.fraction, parse_factor(c.speedup, "--speedup"));
  else
    print_inverse(stdout, c.fraction, parse_factor(c.target, "--target"));
  return 0;
}

RIDGE_REGISTER_COMMAND(Command{
    "amdahl", "Amdahl's law: overall speedup from speeding up part of the time, or the speedup a part needs", 80,
    [](CLI::App& app) {
      auto c = std::make_shared<AmdahlCommand>();
      app.add_option("--fraction", c->fraction, "share of the run time the change affects, in [0, 1] (e.g. 0.3)");
      app.add_option("--speedup", c->speedup, "how many times faster that part gets (a factor > 0, or 'inf')")
          ->type_name("S");
      app.add_option("--target", c->target,
                     "inverse question: the overall speedup wanted; prints the factor the part needs, or that it "
                     "is unreachable")
          ->type_name("T");
      app.add_option("--trace", c->trace, "take the fraction from a trace (ridge trace / ridge profile / PyTorch)")
          ->type_name("FILE");
      app.add_option("--kernel", c->kernel, "with --trace: the kernel that gets faster (exact name or substring)");
      app.footer("Examples: ridge amdahl --fraction 0.3 --speedup 3  ->  1.25x overall\n"
                 "          ridge amdahl --trace runs/trace.json --kernel gemv --speedup 2");
      return std::function<int()>([c] { return run_amdahl(*c); });
    }});

}  // namespace
}  // namespace ridge::cli
