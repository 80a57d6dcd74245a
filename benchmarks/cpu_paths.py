"""The quick run's claim values under other CPUs' code paths, emulated on this machine.

Another CPU makes the math libraries take other kernels: MKL's dispatch (another vendor,
another instruction set), ATen's vectorized kernels (``ATEN_CPU_CAPABILITY``), oneDNN's ISA,
OpenBLAS's core type (numpy, scipy), and the thread count. Each variant below sets one of
them and runs the whole quick reproduction in a fresh clone of HEAD; the script prints every
claim's measured value per variant, how far each lies from the native run in units of the
step the claims table shows (galu.workflow.precision), and each run's wall time as a ratio to
the native run's (the baseline, in the same invocation).

    python benchmarks/cpu_paths.py [--only NAME ...] [--out FILE.json] [--workdir DIR]

Variants already in ``--out`` (from an earlier invocation) are not run again.

It needs the datasets' local mirrors (config/local.yaml is copied into each clone). About
five minutes a variant on two cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from galu.workflow.precision import display_step, format_measured  # noqa: E402

# name -> (environment, cores): one code path changed at a time, native first (the baseline).
VARIANTS = {
    "native": ({}, 2),
    "mkl_avx2": ({"MKL_ENABLE_INSTRUCTIONS": "AVX2"}, 2),
    "mkl_compatible": ({"MKL_CBWR": "COMPATIBLE"}, 2),
    "aten_avx2": ({"ATEN_CPU_CAPABILITY": "avx2"}, 2),
    "aten_default": ({"ATEN_CPU_CAPABILITY": "default"}, 2),
    "onednn_avx2": ({"DNNL_MAX_CPU_ISA": "AVX2"}, 2),
    "openblas_haswell": ({"OPENBLAS_CORETYPE": "Haswell"}, 2),
    "one_core": ({}, 1),
}


def run_variant(name: str, workdir: Path) -> dict:
    """A fresh clone of HEAD, the quick run under the variant; its claims and wall time."""
    env_extra, cores = VARIANTS[name]
    clone = workdir / name
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--local", str(ROOT), str(clone)], check=True)
    site = ROOT / "config/local.yaml"
    if site.is_file():
        shutil.copy(site, clone / "config/local.yaml")
    env = {**os.environ, **env_extra, "PYTHONPATH": str(clone)}
    snakemake = Path(sys.executable).parent / "snakemake"
    start = time.monotonic()
    with open(workdir / f"{name}.log", "wb") as log:
        subprocess.run(
            [str(snakemake), "--cores", str(cores)],
            cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT, check=True,
        )  # fmt: skip
    wall = time.monotonic() - start
    table = pd.read_csv(clone / "results/claims.csv")
    return {"wall_s": wall, "claims": table.to_dict("records")}


def spread_table(runs: dict[str, dict]) -> pd.DataFrame:
    """Claim x variant: the measured value, and its distance from native in shown steps."""
    native = {r["claim_id"]: r for r in runs["native"]["claims"]}
    rows = []
    for claim, base in native.items():
        step = display_step(
            float(base["expected"]), float(base["tolerance"]), float(base["measured"]),
            base.get("precision") if pd.notna(base.get("precision")) else None,
        )  # fmt: skip
        row = {"claim": claim, "shown": format_measured(float(base["measured"]), step)}
        worst = 0.0
        for name, run in runs.items():
            other = next(r for r in run["claims"] if r["claim_id"] == claim)
            value = float(other["measured"])
            row[name] = value
            if other["verdict"] != base["verdict"]:
                row.setdefault("verdict_changes", []).append(name)
            if math.isfinite(value) and math.isfinite(float(base["measured"])):
                worst = max(worst, abs(value - float(base["measured"])) / step)
        row["max_steps"] = worst
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("cpu_paths.json"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/galu-cpu-paths"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    names = ["native", *[n for n in args.only if n != "native"]]
    # Variants already measured in --out (an earlier, interrupted invocation) are kept.
    runs = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for name in [n for n in names if n not in runs]:
        print(f"{name}: running the quick reproduction…", flush=True)
        runs[name] = run_variant(name, args.workdir)
        ratio = runs[name]["wall_s"] / runs["native"]["wall_s"]
        print(f"{name}: {runs[name]['wall_s']:.0f} s (x{ratio:.2f} of native)", flush=True)
        args.out.write_text(json.dumps(runs, indent=1, default=str))
    table = spread_table(runs)
    moved = table[table["max_steps"] > 0]
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(moved.to_string(index=False))
    print(f"{len(moved)} of {len(table)} claims move under some variant; "
          f"{int((table['max_steps'] > 1).sum())} by more than one shown step")  # fmt: skip


if __name__ == "__main__":
    main()
