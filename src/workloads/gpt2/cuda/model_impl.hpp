#pragma once
// The GPT-2 model's state on the device (Model::Impl), shared by the weights code (model.cpp) and
// the decoder (decoder.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/gpt2/model.hpp"
#include "workloads/gpt2/cuda/device_memory.hpp"

namespace ridge::gpt2 {

struct Model::Impl {
  Config config;
  DType dtype = DType::bf16;
  Elem elem = Elem::bf16;
  std::vector<TensorSpec> specs;
  DevicePtr arena;
  std::size_t arena_bytes = 0;
  std::vector<void*> tensors;      // per spec
  std::vector<void*> fc_bias_act;  // per layer: mlp.c_fc.bias in the model dtype (cuBLASLt's GELU epilogue)
  int sm_count = 0;

  // Resolved once, so a step's launches do no name lookups (eager mode is host-bound).
  struct Layer {
    const float *ln1_w, *ln1_b, *attn_b, *attn_proj_b, *ln2_w, *ln2_b, *fc_b, *fc_proj_b;
    const void *attn_w, *attn_proj_w, *fc_w, *fc_proj_w, *fc_b_act;
  };
  std::vector<Layer> layers;
  const void *wte = nullptr, *wpe = nullptr;
  const float *lnf_w = nullptr, *lnf_b = nullptr;

  void resolve();  // fills layers, wte, wpe, lnf_* from the tensors
  std::size_t element_bytes(const TensorSpec& s) const;
  void* get(const std::string& name) const;
  void* layer(int l, const char* suffix) const { return get(fmt::format("h.{}.{}", l, suffix)); }

  void allocate();                        // one arena for every tensor (256-byte aligned)
  void random_init(std::uint64_t seed);   // on the device, bit-identical to random_weights
  void upload(std::size_t i, const std::vector<float>& host);  // checkpoint layout -> device layout
  static void upload_as(void* dst, const std::vector<float>& v, Elem e);
  std::vector<float> download(std::size_t i) const;            // device layout -> checkpoint layout
};

}  // namespace ridge::gpt2
