"""The workload the counter benchmarks profile: Hugging Face GPT-2 small (random weights, BF16,
batch 1) decoding one token a step after a 1000-token prompt, then a Triton vector add.

Each decode step is an NVTX range "step" (steps 0..STEPS-1). Steps FIRST..LAST of --window are
also inside an NVTX range "profiled", which is what Nsight Compute is pointed at (--nvtx-include
"profiled/"), so ridge (--counters-steps FIRST..LAST) and ncu profile the same launches.
"""
import argparse
import time

import torch

STEP_RANGE = "step"
PROFILED_RANGE = "profiled"


def gpt2_decoder():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=12, n_head=12, n_embd=768, n_positions=1024, resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0)
    model = GPT2LMHeadModel(config).to("cuda", torch.bfloat16).eval()
    prompt = torch.randint(0, config.vocab_size, (1, 1000), device="cuda")  # + steps <= 1024 positions
    with torch.no_grad():
        out = model(prompt, use_cache=True)
    return model, out.past_key_values, out.logits[:, -1:].argmax(-1)


def triton_add():
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)

    n = 1 << 26
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)

    def run():
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)

    run()
    torch.testing.assert_close(out, x + y)  # checked before anything is timed or profiled
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--window", default="10..12", help="steps FIRST..LAST inside the 'profiled' range")
    args = parser.parse_args()
    first, last = (int(v) for v in args.window.split(".."))
    model, past, token = gpt2_decoder()
    add = triton_add()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        for step in range(args.steps):
            if step == first:
                torch.cuda.nvtx.range_push(PROFILED_RANGE)
            torch.cuda.nvtx.range_push(STEP_RANGE)
            out = model(token, past_key_values=past, use_cache=True)
            token = out.logits[:, -1:].argmax(-1)
            add()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            if step == last:
                torch.cuda.nvtx.range_pop()
    print(f"decode loop: {args.steps} steps in {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
