#pragma once
#include "ridge/measure.hpp"

namespace ridge {

/// Launches one single-thread kernel that busy-waits `nanoseconds` on the GPU's global timer:
/// a calibration load of known duration.
void launch_busy_wait(cuda_stream stream, double nanoseconds);

/// Launches an empty kernel (1 block, 1 thread): the launch-overhead floor.
void launch_empty(cuda_stream stream);

/// L2 flusher: owns a buffer twice the L2 size and overwrites it on a stream.
class L2Flusher {
 public:
  explicit L2Flusher(int device = -1);  ///< -1: the current device
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(cuda_stream stream);
  std::size_t bytes() const { return bytes_; }

 private:
  void* buffer_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace ridge
