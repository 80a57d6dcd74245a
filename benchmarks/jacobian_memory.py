"""Peak memory of the init Jacobian's spectra (galu.normalization.spectra), per hidden layer.

``jacobian_squared_singular_values`` computes d h_depth / d h_1 at every sample image in
one reverse pass: each sample's h_1 repeated once per output unit, samples x width rows
through every layer, and each layer keeps its saved tensors of samples x width x width
floats until the pass reaches it. The cost model (galu/workflow/planning/costs.py,
``JACOBIAN_TENSORS``) counts them; this script measures them. (The former ``vmap`` of ``jacrev``
kept about the same for plain activations and 9 tensors per layer with batch norm.)

    python benchmarks/jacobian_memory.py                  # paper: 128 samples, width 128
    python benchmarks/jacobian_memory.py --samples 32 --depths 5 10

Each case runs in its own process (peak RSS is per process); prints the growth of the peak
RSS over the process's own start, per layer, and in units of one samples x width x width
float32 tensor.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

ONE_CASE = """
import json, resource, sys, torch
from galu.normalization.mlp import DeepMLP
from galu.normalization.spectra import jacobian_squared_singular_values
act, depth, samples, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
torch.manual_seed(0)
model = DeepMLP(3072, width, depth, 10, act)
x = torch.randn(samples, 3072)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
jacobian_squared_singular_values(model, x)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"mb": (after - before) / 1024}))
"""


def measure(activation: str, depth: int, samples: int, width: int) -> float:
    """Growth of the peak resident memory (MB) while the Jacobian's spectra are computed."""
    args = [sys.executable, "-c", ONE_CASE, activation, str(depth), str(samples), str(width)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])["mb"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=128)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--depths", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--activations", nargs="+", default=["relu", "tilted_relu", "relu_bn"])
    args = parser.parse_args()
    tensor_mb = args.samples * args.width * args.width * 4 / 1e6
    print(f"{args.samples} samples, width {args.width}: one tensor = {tensor_mb:.1f} MB")
    for activation in args.activations:
        mbs = {d: measure(activation, d, args.samples, args.width) for d in args.depths}
        low, high = min(args.depths), max(args.depths)
        slope = (mbs[high] - mbs[low]) / (high - low) if high > low else mbs[low] / low
        cases = "  ".join(f"depth {d}: {mb:7.0f} MB" for d, mb in mbs.items())
        print(
            f"{activation:12s} {cases}   per layer {slope:5.1f} MB"
            f" = {slope / tensor_mb:4.1f} tensors"
        )


if __name__ == "__main__":
    main()
