"""Summarize a whole-workflow sampling profile: where the jobs' CPU time goes, by function.

Record a run with py-spy (a sampling profiler; ``pip install py-spy``), every job included:

    py-spy record --subprocesses --rate 50 --format raw -o run.raw -- snakemake --cores 2
    python benchmarks/profile_summary.py run.raw --top 25

Each sample is one stack of one process. This prints the share of samples

- by job script (Snakemake runs ``script:`` rules as ``.snakemake/scripts/tmp*.<name>.py``;
  the scheduler itself is ``snakemake``);
- by what the sample was doing: importing modules (any frame of the import machinery),
  or else inside which project function (the innermost frame in ``galu/``; py-spy names
  files relative to their import root), or else in the script's own top level.

Samples of idle processes (waiting on a child or a pipe) are left out by py-spy unless
``--idle`` is given, so the shares are of CPU time.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]+)(?::\d+)?\)$")
SCRIPT = re.compile(r"tmp[^/.]*\.(?P<name>[A-Za-z0-9_]+)\.py")
IMPORT_FRAMES = ("_find_and_load", "_load_unlocked", "_call_with_frames_removed")


def parse(line: str) -> tuple[list[str], int]:
    """One raw line ``frame;frame;... count`` -> (frames outermost first, count)."""
    stack, _, count = line.rstrip("\n").rpartition(" ")
    return stack.split(";"), int(count)


def job_of(frames: list[str]) -> str:
    """The job script a stack belongs to, from its process frame or its script frames."""
    for frame in frames:
        found = SCRIPT.search(frame)
        if found:
            return found["name"]
    head = frames[0] if frames else ""
    return "snakemake" if "snakemake" in head else "other"


def activity(frames: list[str]) -> str:
    """``import`` or the innermost project function (``galu/module.py:function``)."""
    if any(name in frame for frame in frames for name in IMPORT_FRAMES):
        return "import"
    for frame in reversed(frames):
        match = FRAME.match(frame)
        # py-spy names files relative to their import root: the project's are galu/...
        if match and match["file"].startswith("galu/"):
            return f"{match['file']}:{match['func']}"
    return "script top level or library"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", type=Path, help="py-spy's --format raw output")
    parser.add_argument("--top", type=int, default=20, help="rows of each table")
    args = parser.parse_args()
    jobs, doing = Counter(), Counter()
    for line in args.raw.read_text().splitlines():
        if not line.strip():
            continue
        frames, count = parse(line)
        jobs[job_of(frames)] += count
        doing[activity(frames)] += count
    total = sum(jobs.values())
    for title, counter in (("job script", jobs), ("doing", doing)):
        print(f"{title:60s} {'share':>6s}")
        for name, count in counter.most_common(args.top):
            print(f"{name[:60]:60s} {count / total:6.1%}")
        print()
    print(f"{total} samples")


if __name__ == "__main__":
    main()
