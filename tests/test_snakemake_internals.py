"""The Snakemake internals galu relies on, pinned by their source (Snakemake 9.27.1).

No supported interface does what these are used for: the warm jobs replace
``PythonScript.execute_script`` and call ``ScriptBase._execute_cmd`` with the attributes
``ScriptBase.__init__`` sets (no plugin chooses how a script job's interpreter starts;
galu/workflow/running/run_hooks.py); the DAG reader calls ``Workflow._prepare_dag`` and
``_build_dag`` as ``--dry-run`` does and reads ``Resource._evaluator``, which
``Resource.__init__`` sets (nothing public hands out a DAG's jobs or the callable behind a
resource; galu/workflow/planning/dag.py). When an upgrade changes one, its test fails: read the new
source, check the galu module named against it, then update the hash.
"""

from __future__ import annotations

import hashlib
import inspect

import pytest
import snakemake.api  # noqa: F401  (imports snakemake.workflow in the order it needs)
from snakemake.resources import Resource
from snakemake.script import PythonScript, ScriptBase
from snakemake.workflow import Workflow

# name -> (the internal, its source's sha256, the galu code that relies on it)
PINNED = {
    "PythonScript.execute_script": (
        PythonScript.execute_script,
        "f8f5d2f25a6908fe7a34698ffea662a9107e32b3a44aa44c54d3b30e14fee3f5",
        "run_hooks._warm_execute (a one-thread job without conda, container or modules)",
    ),
    "ScriptBase._execute_cmd": (
        ScriptBase._execute_cmd,
        "b9b67e04996c10c51ebaf7af77119715f05a4be8a3734825866b4ad04e6ff6ee",
        "run_hooks._warm_execute",
    ),
    "ScriptBase.__init__": (
        ScriptBase.__init__,
        "318dfe47f8b553ed952168f3bfcea9ca7d22753262710b28eac7bece176f1ca6",
        "run_hooks._warm_execute",
    ),
    "Workflow._prepare_dag": (
        Workflow._prepare_dag,
        "ebf5bb8da7c83cd4b53c30139361f74d5666763d60940dd686b90871a2b8dcf1",
        "dag.read_dag",
    ),
    "Workflow._build_dag": (
        Workflow._build_dag,
        "246d9c8ae4dd927682f2552c1ca13219616e847426cffa578598539256c87b1f",
        "dag.read_dag",
    ),
    "Resource.__init__": (
        Resource.__init__,
        "5a2de6b4714bd356f1cd9773ab32d3bea61a937ea9206b04b49321092ff16f83",
        "dag.rule_cost (Resource._evaluator)",
    ),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_snakemake_internals_galu_relies_on_are_unchanged(name):
    function, pinned, user = PINNED[name]
    source = inspect.getsource(function)
    assert hashlib.sha256(source.encode()).hexdigest() == pinned, (
        f"Snakemake's {name} changed: check galu.workflow.{user} against it"
    )
