// Independent pieces of history work (a run's records, a series) run on every core.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace ridge::history_detail {

/// Calls `work(i)` for every i in [0, count) on up to one thread a core, the caller's included.
/// When calls throw, the exception of the lowest i is rethrown once all have ended.
template <typename Work>
void for_each_on_every_core(std::size_t count, Work work) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(count);
  const auto drain = [&] {
    for (std::size_t i; (i = next++) < count;) try {
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
  };
  const std::size_t threads = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), count);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(drain);
  drain();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ridge::history_detail
