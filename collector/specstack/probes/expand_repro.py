"""The minimal reproduction of the vLLM 0.32.0 CPU sampler bug (docs/sampler-cpu-bug.md), and its fix.

`python -m specstack.probes.expand_repro` prints what `expand_batch_to_tokens` returns for three requests'
temperatures on the installed vLLM and exits 1 when it is not the requests' values (the bug), 0 when it is.

The bug: vllm/utils/cpu_triton_utils.py `_expand_kernel_impl`, the CPU stand-in for the Triton
`rejection_sampler.expand_kernel`, passes `_ensure_int64(output)` to the C++ op. For a float32 (temperature,
top-p) or int32 (top-k) output that is a fresh int64 copy: the op fills the copy, nothing copies it back, and
`expand_batch_to_tokens` returns its `new_empty` buffer as it was: uninitialised memory. (The op also reads
its input through `_ensure_int64`, so a temperature of 0.7 would have been expanded as 0 anyway.)
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from specstack.probes.sampler import poison_allocator, register_engine_kernels

EXPAND_KERNEL = "vllm.v1.sample.rejection_sampler.expand_kernel"


def correct_expand(output, input_val, cu_num_tokens, replace_from, replace_to, MAX_NUM_TOKENS=None):  # noqa: N803
    """What the Triton kernel does, in torch: output[start_r:end_r] = input[r] (replace_from → replace_to),
    written into `output` itself, in its own dtype."""
    import torch

    counts = torch.diff(cu_num_tokens.to(torch.int64), prepend=cu_num_tokens.new_zeros(1).to(torch.int64))
    values = torch.where(
        input_val == replace_from,
        torch.as_tensor(replace_to, dtype=input_val.dtype, device=input_val.device),
        input_val,
    )
    expanded = torch.repeat_interleave(values, counts)
    output[: expanded.numel()].copy_(expanded.to(output.dtype))


@contextlib.contextmanager
def fixed_expand():
    """Within the block, the platform's `expand_kernel` override is `correct_expand`; afterwards the one
    registered before. Without an override (Triton kernels) there is nothing to replace."""
    from vllm.triton_utils import dispatcher

    register_engine_kernels()
    previous = dispatcher._registry.get(EXPAND_KERNEL)
    if previous is None:
        yield
        return
    dispatcher.register_kernels({EXPAND_KERNEL: correct_expand})
    try:
        yield
    finally:
        dispatcher.register_kernels({EXPAND_KERNEL: previous[1]})


def reproduce() -> dict[str, Any]:
    """Three requests (temperatures 0.7, 0.5, 1.3 with 2, 3 and 1 draft tokens): the per-token temperatures
    `apply_sampling_constraints` would divide the target logits by."""
    import torch
    from vllm.platforms import current_platform
    from vllm.v1.sample.rejection_sampler import expand_batch_to_tokens

    register_engine_kernels()
    device = torch.device(current_platform.device_type)
    temperature = torch.tensor([0.7, 0.5, 1.3], dtype=torch.float32, device=device)
    cu_num_draft_tokens = torch.tensor([2, 5, 6], dtype=torch.int32, device=device)
    poison_allocator(6, torch.float32, device)
    got = expand_batch_to_tokens(temperature, cu_num_draft_tokens, 6, replace_from=0, replace_to=1)
    expected = torch.tensor([0.7, 0.7, 0.5, 0.5, 0.5, 1.3], dtype=torch.float32, device=device)
    return {
        "device": current_platform.device_type,
        "expected": expected.tolist(),
        "got": got.cpu().tolist(),
        "bug": not torch.equal(got.cpu(), expected.cpu()),
    }


def main() -> int:
    r = reproduce()
    print(f"device: {r['device']}")
    print(f"expected per-token temperatures: {r['expected']}")
    print(f"expand_batch_to_tokens returned: {r['got']}")
    print("BUG: the expanded temperatures are not the requests'" if r["bug"] else "ok: the requests' temperatures")
    return 1 if r["bug"] else 0


if __name__ == "__main__":
    sys.exit(main())
