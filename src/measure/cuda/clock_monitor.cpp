#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "ridge/device.hpp"

namespace ridge {

nlohmann::json ClockActivity::to_json() const {
  return nlohmann::json{{"readings", readings},
                        {"sm_mhz_min", sm_mhz_min},
                        {"sm_mhz_max", sm_mhz_max},
                        {"memory_mhz_min", memory_mhz_min},
                        {"memory_mhz_max", memory_mhz_max},
                        {"power_w_max", power_w_max},
                        {"throttle_reasons_seen", throttle_reasons_seen},
                        {"throttle_reason_names", throttle_reason_names(throttle_reasons_seen)}};
}

struct ClockMonitor::Impl {
  int device;
  std::chrono::duration<double, std::milli> interval;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  ClockActivity activity;
  std::thread thread;

  void record(const ClockReading& c) {
    if (c.source != "nvml") return;
    auto lo = [](double& slot, double v) { slot = slot < 0 ? v : std::min(slot, v); };
    auto hi = [](double& slot, double v) { slot = std::max(slot, v); };
    ++activity.readings;
    if (c.sm_mhz > 0) lo(activity.sm_mhz_min, c.sm_mhz), hi(activity.sm_mhz_max, c.sm_mhz);
    if (c.memory_mhz > 0) lo(activity.memory_mhz_min, c.memory_mhz), hi(activity.memory_mhz_max, c.memory_mhz);
    if (c.power_w > 0) hi(activity.power_w_max, c.power_w);
    if (c.throttle_reasons > 0) activity.throttle_reasons_seen |= (c.throttle_reasons & ~1ll);  // not "idle"
  }

  void run() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      lock.unlock();
      const ClockReading c = read_clocks(device);
      lock.lock();
      record(c);
      wake.wait_for(lock, interval, [&] { return stopping; });
    }
  }
};

ClockMonitor::ClockMonitor(int device, double interval_ms) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->interval = std::chrono::duration<double, std::milli>(interval_ms);
  if (read_clocks(device).source != "nvml") return;  // nothing to poll
  impl_->thread = std::thread([this] { impl_->run(); });
}

ClockMonitor::~ClockMonitor() { stop(); }

ClockActivity ClockMonitor::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  return impl_->activity;
}

}  // namespace ridge
