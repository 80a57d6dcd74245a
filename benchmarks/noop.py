"""Wall time of a no-op rerun (``snakemake -n`` on a finished run) against Snakemake's floor.

Every Snakemake call pays for parsing the workflow, galu's checks before the DAG (the
configuration against its schema, the contradictions, the pre-flight over data and
results, the code closures) and Snakemake's own start-up. The floor is the same
Snakemake, from the same virtual environment, on a one-rule Snakefile whose output
exists: what any workflow costs. Both are run alternately (so a busy machine slows both
alike) and the medians are printed with their difference, galu's own share.

    python benchmarks/noop.py                # in a checkout with a finished run
    python benchmarks/noop.py --repeats 9 --cores 2

Exits 1 when the dry run plans jobs: then it is not a no-op, and its time means nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR_SNAKEFILE = """rule all:
    input:
        "done.txt",


rule done:
    output:
        "done.txt",
    shell:
        "touch {output}"
"""
NOTHING = "Nothing to be done"


def dry_run(snakemake: Path, folder: Path, cores: int) -> tuple[float, str]:
    """Seconds of one ``snakemake -n`` in ``folder``, and what it printed."""
    start = time.perf_counter()
    done = subprocess.run(
        [str(snakemake), "-n", "--cores", str(cores)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - start, done.stdout + done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each (median)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--root", type=Path, default=Path("."), help="checkout with a run")
    args = parser.parse_args()
    snakemake = Path(sys.executable).with_name("snakemake")
    with tempfile.TemporaryDirectory() as tmp:
        floor_dir = Path(tmp)
        (floor_dir / "Snakefile").write_text(FLOOR_SNAKEFILE)
        (floor_dir / "done.txt").write_text("")
        _, out = dry_run(snakemake, args.root, args.cores)  # warm-up: caches, stamps
        if NOTHING not in out:
            print(f"the dry run in {args.root} plans jobs (not a finished run):\n{out[-2000:]}")
            return 1
        dry_run(snakemake, floor_dir, args.cores)
        times: dict[str, list[float]] = {"galu workflow": [], "one-rule floor": []}
        for _ in range(args.repeats):
            times["galu workflow"].append(dry_run(snakemake, args.root, args.cores)[0])
            times["one-rule floor"].append(dry_run(snakemake, floor_dir, args.cores)[0])
    medians = {label: statistics.median(t) for label, t in times.items()}
    print(f"snakemake -n --cores {args.cores}, median of {args.repeats} alternating runs:")
    for label, median in medians.items():
        spread = f"{min(times[label]):.2f}-{max(times[label]):.2f}"
        print(f"  {label:15s} {median:6.2f} s  (range {spread} s)")
    own = medians["galu workflow"] - medians["one-rule floor"]
    print(f"  galu's share   {own:6.2f} s  (workflow minus floor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
