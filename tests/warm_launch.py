"""Run a command as a fresh Python would, in a child of the suite's warm server
(warm_commands.py): ``warm_launch.py SCRIPT ARGS`` as ``python SCRIPT ARGS`` (a console
script), ``warm_launch.py -m MODULE ARGS`` as ``python -m MODULE ARGS``. Imports nothing of
galu, which the command must import from disk itself (a repository copy's, under ``-m``)."""

import os
import runpy
import sys
from pathlib import Path

import snakemake.workflow

# Snakemake notes the working directory when snakemake.workflow is imported (the run directory
# its log shows); the server imported it elsewhere.
snakemake.workflow.Workflow._rundir = str(Path.cwd().absolute())
if sys.argv[1] == "-m":
    sys.argv = [sys.argv[2], *sys.argv[3:]]  # run_module puts the module's file in argv[0]
    sys.path[0] = os.getcwd()
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(sys.argv[0])
    runpy.run_path(sys.argv[0], run_name="__main__")
