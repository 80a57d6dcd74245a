"""A run executes the galu of the checkout it runs in, whichever galu the environment installed.

The provenance sidecars record the code closure scanned from the checkout's files; the jobs must
run those files. Here the environment's galu is this repository (an editable install), and
the run is in a copy: a second clone, a test's scratch copy and `galu equivalence`'s trees
(whose base commit's run must test the base's library) are all in this position. The warm
server's children set their own path (galu/workflow/running/warm_jobs.py), so they are the case
checked here (cold jobs, whose path is Snakemake's, were checked by hand the same way): the
copy's provenance module is marked to log where it was imported from, and the Snakefile and
every job must name the copy.
"""

from __future__ import annotations

import pytest
from test_reliability_support import NO_ENV_MIRRORS, smk_command, tiny_repo

from galu.workflow.running.warm_jobs import ENABLE_ENV, SOCKET_ENV

from conftest import run

pytestmark = pytest.mark.slow

PROBE = (
    "\nimport os as _probe_os\n"
    "if _probe_os.environ.get('GALU_IMPORT_LOG'):\n"
    "    with open(_probe_os.environ['GALU_IMPORT_LOG'], 'a') as _probe:\n"
    "        _probe.write(__file__ + '\\n')\n"
)
# Four script jobs: enough for the warm server (galu/workflow/running/warm_jobs.py, MIN_JOBS).
TARGETS = [
    "results/scm/stability.csv",
    "results/normalization/coefficients.csv",
    "results/normalization/depth_scales.csv",
    "results/scm/runs/perceptron_ode.csv",
]


def test_the_snakefile_and_every_warm_job_import_the_checkouts_galu(tmp_path):
    root = tiny_repo(tmp_path / "copy")
    provenance = root / "galu/workflow/provenance.py"
    provenance.write_text(provenance.read_text() + PROBE)
    log = tmp_path / "imports.log"
    # The run's own server (not the suite's, warm_commands.py): the one a user's run starts.
    env = {**NO_ENV_MIRRORS, "GALU_IMPORT_LOG": str(log), ENABLE_ENV: "1", SOCKET_ENV: ""}
    run(smk_command(*TARGETS, "--cores", "2"), root, env=env)
    imported = log.read_text().splitlines()
    # The Snakefile (once per Snakemake process) and each of the four jobs.
    assert len(imported) >= 1 + len(TARGETS)
    assert set(imported) == {str(provenance.resolve())}
    assert (root / ".snakemake/galu/warm-jobs.log").exists()  # the jobs were warm
