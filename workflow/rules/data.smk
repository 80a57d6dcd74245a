# Datasets: verified raw archives (mirrors first, then the official URLs, then an
# opted-in substitute) and converted arrays. Experiment stages request the processed arrays
# they need, e.g. "data/processed/mnist.npz"; nothing here is added to ALL_TARGETS.
from galu.workflow.planning.costs import download_sizes, prepare_sizes
from galu.workflow.data import dataset_names
from galu.workflow.settings.sitekeys import data_result_settings, dataset_substitutes

DATASET_NAMES = "|".join(dataset_names())


# The datasets are shared by every scale: their paths, logs and benchmarks are not under
# out() (job_log/job_benchmark would put them in a scale's output root).
# The output is the manifest only: Snakemake deletes a job's outputs before running it, and
# raw files a user placed in data/raw/<dataset>/ by hand must survive a re-run.
rule download:
    output:
        **with_sidecars(manifest="data/raw/{dataset}/sources.json"),
    log:
        "logs/data/download_{dataset}.log",
    benchmark:
        "logs/benchmarks/data/download_{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_NAMES,
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(download_sizes),
    # Only what can change this dataset's bytes (its own substitutes): mirrors, timeouts and
    # retries are site settings (galu/workflow/settings/sitekeys.py) the script reads from the
    # config, so moving a mirror reruns nothing, nor does another dataset's substitute.
    params:
        settings=lambda wildcards: data_result_settings(
            config["data"], wildcards.dataset
        ),
    script:
        "../../scripts/data_download.py"


rule prepare:
    input:
        manifest=rules.download.output.manifest,
    output:
        **with_sidecars(npz="data/processed/{dataset}.npz"),
    log:
        "logs/data/prepare_{dataset}.log",
    benchmark:
        "logs/benchmarks/data/prepare_{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_NAMES,
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(prepare_sizes),
    params:
        substitutes=lambda wildcards: dataset_substitutes(
            config["data"]["substitutes"], wildcards.dataset
        ),
    script:
        "../../scripts/data_prepare.py"
