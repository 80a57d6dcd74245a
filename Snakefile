import sys
from pathlib import Path

from galu.workflow.settings.config import ConfigError, fill_declared, read_site_file
from galu.workflow.landing import LANDING_PAGE

# galu: one command reproduces three papers on how ReLU networks learn.
#
#   snakemake --cores 2                              the quick scale (config/config.yaml)
#   snakemake --cores 2 --configfile config/paper.yaml   the papers' scale
#
# The configuration is validated against workflow/schemas/config.schema.yaml before any job
# runs. Each stage's compute rules live in workflow/rules/<stage>.smk, or in <stage>_<part>.smk
# files named for what they hold (normalization: static, training); its figures are declared
# in galu/<paper>/stage.py and made into plot rules by figures.smk. Each appends its final
# outputs to ALL_TARGETS, which `rule all` (the default target) requests.


configfile: "config/config.yaml"


# Site settings (data mirrors, substitutes, device) that belong to one machine, not to the
# repository: git-ignored, merged over config/config.yaml when present (see README, Datasets).
# A YAML mistake there is named with its line; a file of comments only is simply no settings.
if Path("config/local.yaml").exists():
    try:
        SITE_SETTINGS = read_site_file("config/local.yaml")
    except ConfigError as error:
        print(f"galu: {error}", file=sys.stderr)
        sys.exit(2)
    if SITE_SETTINGS:

        configfile: "config/local.yaml"


# The keys config/config.yaml leaves to the stages' declarations (`stages`: every declared
# stage), where no --configfile or --config sets them.
fill_declared(config)


include: "workflow/rules/common.smk"


# The report opens on the verdict (written by the claims rule); before a first full run, on
# a description of the workflow.
report:
    out(LANDING_PAGE)
    if Path(out(LANDING_PAGE)).is_file()
    else "workflow/report/workflow.rst"


ALL_TARGETS = []


include: "workflow/rules/data.smk"


# Each declared stage's compute rules (galu/<paper>/stage.py; workflow/rules/<stage>.smk or
# <stage>_<part>.smk, in name order), then every stage's figures, from the declarations.
for stage_rules in STAGE_RULE_FILES:

    include: stage_rules


include: "workflow/rules/figures.smk"
# The verdict reads every stage's outputs: keep it last.
include: "workflow/rules/report.smk"


# Once all the rules are defined: the pre-flight of the files the rules make, and each
# script rule's code closure as its `code` param.
after_rules(workflow.rules)


rule all:
    default_target: True
    input:
        ALL_TARGETS,
