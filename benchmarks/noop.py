"""Wall time of a no-op rerun (``snakemake -n`` on a finished run) against Snakemake's floor.

Every Snakemake call pays for parsing the workflow, galu's checks before the DAG (the
configuration against its schema, the contradictions, the pre-flight over data and
results, the code closures) and Snakemake's own start-up. The floor is the same
Snakemake, from the same virtual environment, on a one-rule Snakefile whose output
exists: what any workflow costs. A second floor gives that rule a ``params:`` entry: when a
rule has params and pandas is installed (a galu dependency), Snakemake imports pandas to
compare them with the recorded ones (snakemake.persistence), 0.2-0.5 s on a 2-core machine
that any such workflow pays. All three are run in turn (so a busy machine slows each alike)
and the medians are printed with galu's own share: the workflow minus each floor.

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
# The same rule with a parameter: Snakemake's parameter check imports pandas.
PARAMS_SNAKEFILE = FLOOR_SNAKEFILE.replace("    shell:", "    params:\n        n=3,\n    shell:")
FLOORS = {"one-rule floor": FLOOR_SNAKEFILE, "floor, params": PARAMS_SNAKEFILE}
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
        folders = {"galu workflow": args.root}
        for number, (label, text) in enumerate(FLOORS.items()):
            folders[label] = Path(tmp) / f"floor{number}"
            folders[label].mkdir()
            (folders[label] / "Snakefile").write_text(text)
            # a first real run makes done.txt and records its params, as a finished run has
            made = [str(snakemake), "-q", "--cores", "1"]
            subprocess.run(made, cwd=folders[label], capture_output=True, check=True)
        _, out = dry_run(snakemake, args.root, args.cores)  # warm-up: caches, stamps
        if NOTHING not in out:
            print(f"the dry run in {args.root} plans jobs (not a finished run):\n{out[-2000:]}")
            return 1
        times: dict[str, list[float]] = {label: [] for label in folders}
        for _ in range(args.repeats):
            for label, folder in folders.items():
                times[label].append(dry_run(snakemake, folder, args.cores)[0])
    medians = {label: statistics.median(t) for label, t in times.items()}
    print(f"snakemake -n --cores {args.cores}, median of {args.repeats} alternating runs:")
    for label, median in medians.items():
        spread = f"{min(times[label]):.2f}-{max(times[label]):.2f}"
        print(f"  {label:15s} {median:6.2f} s  (range {spread} s)")
    for floor in FLOORS:
        own = medians["galu workflow"] - medians[floor]
        print(f"  galu's share   {own:6.2f} s  (workflow minus {floor})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
