"""Corruption: one flipped byte in a raw archive, a processed array, a result CSV or a sidecar.

The audit names the damaged file and exits 1. The workflow never uses a raw archive or a
processed array whose hash does not match: its pre-flight (workflow/rules/common.smk, main
process only) sets the file aside as ``<name>.rejected`` and the file is rebuilt from a
source that verifies; ``load_processed`` refuses such an array outright.

MNIST comes from the site's mirror (config/local.yaml), copied into a mirror folder this
module owns, so the bytes of the shared mirror are never at risk (flips also always write a
new file, never through a hard link).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from galu.workflow.data import DATASETS, DataError, load_processed, prepare
from galu.workflow.data.mirrors import local_candidates, local_folder
from galu.workflow.output import Run
from galu.workflow.provenance import seal_problem, sealed_sidecar, sha256_file
from galu.workflow.running.preflight import preflight
from galu.workflow.settings.config import load_yaml
from galu.workflow.trust.audit import audit_tree

from conftest import REPO, copy_repo, run, tool

NPZ = "data/processed/mnist.npz"
RAW = "data/raw/mnist/train-labels-idx1-ubyte.gz"
CSV = "results/normalization/coefficients.csv"
TARGETS = [NPZ, CSV]


def flip(path: Path, offset: int | None = None) -> None:
    """Flip the lowest bit of one byte (the middle one by default), writing a new file."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if offset is None else offset] ^= 0x01
    tmp = path.with_name(path.name + ".flipping")
    tmp.write_bytes(bytes(data))
    os.replace(tmp, path)


def _site_mnist() -> Path | None:
    """The folder of a mirror that holds MNIST's four official files, if the site has one."""
    site = REPO / "config/local.yaml"
    mirrors = (load_yaml(site).get("data") or {}).get("mirrors", []) if site.is_file() else []
    mirrors += os.environ.get("GALU_DATA_MIRRORS", "").split(":")
    mirrors.append("/usr/share/datasets")
    for mirror in filter(None, mirrors):
        found = [
            local_candidates(local_folder(mirror), DATASETS["mnist"], f.name)
            for f in DATASETS["mnist"].files
        ]
        if all(found):
            return found[0][0].parent
    return None


# The tests choose their mirrors in reliability.yaml; a site's GALU_DATA_MIRRORS (searched
# first) would otherwise change which source each file is recorded from.
NO_ENV_MIRRORS = {"GALU_DATA_MIRRORS": ""}


def smk(root: Path, *args: str, check: bool = True):
    """Snakemake with this module's overlay (targets first: --configfile takes several files)."""
    return run(
        [tool("snakemake"), *args, "--cores", "1", "--configfile", "reliability.yaml"],
        root,
        check=check,
        env=NO_ENV_MIRRORS,
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository with MNIST downloaded and prepared and one result CSV."""
    source = _site_mnist()
    if source is None:
        pytest.skip("no mirror with MNIST's official files (set data.mirrors in local.yaml)")
    base = tmp_path_factory.mktemp("corruption")
    first, second = base / "mirror-a" / "mnist", base / "mirror-b" / "mnist"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    for spec in DATASETS["mnist"].files:
        shutil.copyfile(source / spec.name, first / spec.name)
    root = copy_repo(base / "repo")
    overlay = {
        "data": {
            "mirrors": [str(first.parent), str(second.parent)],
            "link": False,
            "download": False,
        }
    }
    (root / "reliability.yaml").write_text(yaml.safe_dump(overlay))
    smk(root, *TARGETS)
    assert audit_tree(root) == []
    return root


@pytest.fixture
def work(made: Path, tmp_path: Path) -> Path:
    """A private copy of the prepared repository (its Snakemake metadata included)."""
    return Path(shutil.copytree(made, tmp_path / "repo", symlinks=True))


def audit(root: Path) -> tuple[int, str]:
    proc = run([tool("galu"), "audit"], root, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def stat(path: Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, sha256_file(path)


# -- the audit names each damaged file --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "rel", [RAW, NPZ, CSV, f"{CSV}.meta.json"], ids=["raw", "npz", "csv", "sidecar"]
)
def test_audit_names_the_file_with_a_flipped_byte(work, rel):
    assert audit(work)[0] == 0
    flip(work / rel, offset=0 if rel.endswith(".json") else None)  # '{' -> 'z': unreadable
    code, out = audit(work)
    assert code == 1, out
    problems = [line for line in out.splitlines() if line.startswith("PROBLEM")]
    assert len(problems) == 1, out
    # A sidecar's problem is reported on its output's line, naming the sidecar file.
    names = [CSV, Path(rel).name] if rel.endswith(".json") else [rel]
    assert all(name in problems[0] for name in names), out


def _sidecar_offsets(text: str) -> dict[str, int]:
    """Byte offsets of one digit of the recorded output hash and of the finish time."""
    record = json.loads(text)
    return {
        "recorded_hash": text.index(record["output"]["sha256"]) + 5,
        "finish_time": text.index(record["finished"]) + 3,
    }


@pytest.mark.slow
@pytest.mark.parametrize("field", ["recorded_hash", "finish_time"])
def test_audit_names_the_sidecar_whatever_byte_flipped(work, field):
    side = work / f"{CSV}.meta.json"
    flip(side, _sidecar_offsets(side.read_text())[field])
    code, out = audit(work)
    assert code == 1
    assert f"{CSV}.meta.json" in out, out


def test_every_bit_of_a_sealed_sidecar_is_checked(tmp_path):
    record = {
        "output": {"path": "results/x.csv", "sha256": "0123abcd" * 8},
        "params": {"tolerance": 1e-10, "grid": [0.5, 1.5], "name": "tilted \u00e9"},
        "finished": "2026-01-01T00:00:00.000+00:00",
        "seeds": [0, 1],
    }
    data = sealed_sidecar(record)
    assert seal_problem(data) is None and json.loads(data)["params"] == record["params"]
    missed = []
    for i in range(len(data)):
        for bit in range(8):
            damaged = bytearray(data)
            damaged[i] ^= 1 << bit
            if seal_problem(bytes(damaged)) is None:
                missed.append((i, bit))
    assert missed == []  # e.g. 1e-10 -> 1E-10 or a hex digit's case would slip past a JSON hash


# -- the workflow refuses damaged data and rebuilds it ----------------------------------------


@pytest.mark.slow
def test_load_processed_refuses_an_array_that_does_not_match_its_sidecar(made, tmp_path):
    folder = tmp_path / "data/processed"
    folder.mkdir(parents=True)
    for name in ("mnist.npz", "mnist.npz.meta.json"):
        shutil.copyfile(made / "data/processed" / name, folder / name)
    npz = folder / "mnist.npz"
    assert load_processed(npz)["x_train"].shape == (60000, 28, 28)
    flip(npz)
    with pytest.raises(DataError) as error:
        load_processed(npz)
    message = str(error.value)
    assert str(npz) in message and "is not what its provenance sidecar says" in message
    assert "changed after it was written" in message
    assert f"snakemake --cores 2 {npz}" in message


@pytest.mark.slow
def test_corrupt_processed_array_is_set_aside_and_rebuilt(work):
    npz = work / NPZ
    good = sha256_file(npz)
    manifest = stat(work / "data/raw/mnist/sources.json")
    flip(npz)
    bad = npz.read_bytes()
    dry = smk(work, "-n", NPZ)
    assert f"galu: {NPZ}: changed after it was written" in dry.stderr
    assert npz.read_bytes() == bad and not Path(f"{npz}.rejected").exists()  # dry: untouched
    assert not (work / "logs/integrity.log").exists()  # and nothing written
    done = smk(work, NPZ)
    note = f"galu: {NPZ}: changed after it was written"
    assert note in done.stderr and f"moved it to {NPZ}.rejected" in done.stderr
    assert note in (work / "logs/integrity.log").read_text()
    assert Path(f"{npz}.rejected").read_bytes() == bad  # kept for inspection, never used
    assert sha256_file(npz) == good  # rebuilt from the verified raw archives
    assert stat(work / "data/raw/mnist/sources.json") == manifest  # no download needed
    assert audit(work)[0] == 0


@pytest.mark.slow
def test_a_flip_is_caught_even_with_the_old_mtime_put_back(work):
    npz = work / NPZ
    assert preflight(work, dry_run=True) == []  # passes, and is remembered as passed
    assert preflight(work, dry_run=True) == []
    before = npz.stat()
    flip(npz)
    os.utime(npz, ns=(before.st_atime_ns, before.st_mtime_ns))
    found = preflight(work, dry_run=True)
    assert [f.path for f in found] == [NPZ]
    assert "a real run moves it to" in found[0].action


@pytest.mark.slow
def test_corrupt_raw_archive_is_restored_from_its_recorded_source(work):
    raw, npz = work / RAW, work / NPZ
    good, before = sha256_file(raw), stat(npz)
    flip(raw)
    done = smk(work, NPZ)
    assert f"galu: {RAW}: does not match the published checksums" in done.stderr
    assert f"moved it to {RAW}.rejected and restored it from" in done.stderr
    assert sha256_file(raw) == good
    assert sha256_file(Path(f"{raw}.rejected")) != good
    assert stat(npz) == before  # the processed array was sound: not recomputed
    assert "Nothing to be done" in smk(work, "-n", NPZ).stdout
    assert audit(work)[0] == 0


@pytest.mark.slow
def test_corrupt_raw_archive_without_its_source_is_fetched_again(work):
    raw, npz = work / RAW, work / NPZ
    good, npz_sha = sha256_file(raw), sha256_file(npz)
    mirrors = yaml.safe_load((work / "reliability.yaml").read_text())["data"]["mirrors"]
    first, second = (Path(m) / "mnist" / raw.name for m in mirrors)
    flip(raw)
    os.replace(first, second)  # the recorded source is gone; another mirror has the file
    try:
        done = smk(work, NPZ)
    finally:
        os.replace(second, first)
    assert f"moved it to {RAW}.rejected; set aside data/raw/mnist/sources.json" in done.stderr
    assert f"{NPZ}.rejected; this run fetches the archive again" in done.stderr
    assert sha256_file(raw) == good
    sources = json.loads((work / "data/raw/mnist/sources.json").read_text())["files"]
    assert {f["name"]: f["source"] for f in sources}[raw.name] == str(second)
    assert sha256_file(npz) == npz_sha  # rebuilt, to the same bytes
    assert audit(work)[0] == 0


@pytest.mark.slow
def test_an_array_passed_off_as_another_dataset_is_never_read(work):
    """MNIST's real array copied with its sidecar to where Fashion-MNIST's goes: the run's
    pre-flight names it and sets it aside, the loader refuses it; MNIST's own files and
    the mirror are left as they were (#39, pattern 4)."""
    fashion = "data/processed/fashion_mnist.npz"
    for suffix in ("", ".meta.json"):
        shutil.copyfile(work / f"{NPZ}{suffix}", work / f"{fashion}{suffix}")
    mnist = [stat(work / NPZ), stat(work / f"{NPZ}.meta.json")]
    with pytest.raises(DataError, match=f"its sidecar describes {NPZ}, not this file"):
        load_processed(work / fashion)
    dry = smk(work, "-n", fashion)
    assert f"galu: {fashion}: its sidecar describes {NPZ}, not this file" in dry.stderr
    assert "Traceback" not in dry.stderr
    (finding,) = preflight(work)
    assert finding.path == fashion and (work / f"{fashion}.rejected").is_file()
    assert [stat(work / NPZ), stat(work / f"{NPZ}.meta.json")] == mnist
    assert load_processed(work / NPZ)["x_train"].shape == (60000, 28, 28)


MANIFEST = "data/raw/mnist/sources.json"


def _mirror_sums(work: Path) -> dict[str, str]:
    """sha256 of every file in the module's two mirrors."""
    mirrors = yaml.safe_load((work / "reliability.yaml").read_text())["data"]["mirrors"]
    files = (p for m in mirrors for p in sorted(Path(m).rglob("*")) if p.is_file())
    return {str(p): sha256_file(p) for p in files}


def _archives(work: Path) -> dict[str, str]:
    folder = work / "data/raw/mnist"
    return {p.name: sha256_file(p) for p in sorted(folder.glob("*.gz"))}


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "not_json", "resealed"])
def test_a_damaged_download_manifest_is_fetched_again(work, damage):
    """#39, pattern 7: a manifest that its sidecar does not vouch for never reaches the
    prepare job (which would have crashed on its JSON); the run sets it aside, the download
    job writes it again from the archives already there (verified, not downloaded), and the
    array is rebuilt to the same bytes. Nothing else changes, the mirrors least of all."""
    manifest = work / MANIFEST
    archives, npz, mirrors = _archives(work), sha256_file(work / NPZ), _mirror_sums(work)
    good = json.loads(manifest.read_text())
    if damage == "truncated":
        manifest.write_bytes(manifest.read_bytes()[:100])
    elif damage == "not_json":
        manifest.write_text("[]")
    else:  # entries without their source, under a sidecar that vouches for these bytes
        manifest.write_text(json.dumps({"files": [{"name": f["name"]} for f in good["files"]]}))
        with contextlib.chdir(work):
            Run("hand").stamp(MANIFEST)
    elsewhere = work / "elsewhere"  # the library names the file and the fix, no traceback
    with pytest.raises(DataError, match=f"{MANIFEST} is not a readable download manifest"):
        prepare("mnist", work / "data/raw", elsewhere)
    assert not elsewhere.exists()
    dry = smk(work, "-n", NPZ)
    assert f"galu: {MANIFEST}: " in dry.stderr and "Traceback" not in dry.stderr
    assert f"a real run moves it to {MANIFEST}.rejected and fetches the dataset again" in (
        dry.stderr
    )
    done = smk(work, NPZ)
    assert f"moved it to {MANIFEST}.rejected" in done.stderr
    assert f"{NPZ}.rejected; this run fetches the archive again" in done.stderr
    assert "Traceback" not in done.stderr
    # The same archives, verified where they lie ("already present": the damaged manifest's
    # record of where each came from is not trusted).
    again = json.loads(manifest.read_text())["files"]
    assert {f["name"]: f["sha256"] for f in again} == {
        f["name"]: f["sha256"] for f in good["files"]
    }
    assert {f["source"] for f in again} == {"already present"}
    assert _archives(work) == archives and sha256_file(work / NPZ) == npz
    assert _mirror_sums(work) == mirrors
    assert audit(work)[0] == 0
    assert "Nothing to be done" in smk(work, "-n", NPZ).stdout


@pytest.mark.slow
def test_an_archive_hard_linked_into_the_mirror_gets_bytes_of_its_own(work):
    """#39, pattern 6: an archive an older galu hard-linked into the shared mirror is
    replaced by a copy of its own before any job runs; afterwards an in-place write under
    data/raw/ leaves the mirror as it was, and nothing is rebuilt (the bytes are the same)."""
    raw = work / RAW
    entries = json.loads((work / MANIFEST).read_text())["files"]
    source = Path({f["name"]: f["source"] for f in entries}[raw.name])
    os.unlink(raw)
    os.link(source, raw)  # what `data.link: true` used to do
    mirrors, npz = _mirror_sums(work), stat(work / NPZ)
    dry = smk(work, "-n", NPZ)
    assert f"galu: {RAW}: is a hard link to the mirror's {source}" in dry.stderr
    assert "a real run replaces it by a copy of its own" in dry.stderr
    assert os.path.samefile(raw, source)  # a dry run changes nothing
    done = smk(work, NPZ)
    assert "replaced it by a copy of its own (same bytes); the mirror is untouched" in done.stderr
    assert not os.path.samefile(raw, source) and raw.stat().st_nlink == 1
    with open(raw, "r+b") as handle:  # an in-place write, as root: permissions do not stop it
        handle.write(b"\0")
    assert _mirror_sums(work) == mirrors
    assert stat(work / NPZ) == npz  # same bytes: nothing was rebuilt


@pytest.mark.slow
def test_a_manifest_an_older_galu_wrote_without_a_sidecar_is_adopted_not_refetched(work):
    """`galu data fetch` wrote manifests without a sidecar before 07b7f57. Fetching again
    would rebuild the arrays and rerun every job made from them (hours at the paper level);
    a readable one whose archives all verify gets a sidecar instead, and nothing reruns.
    With an archive that fails, nothing is adopted: the archive is restored as ever."""
    manifest = work / MANIFEST
    side = Path(f"{manifest}.meta.json")
    side.unlink()
    before, npz, mirrors = stat(manifest), stat(work / NPZ), _mirror_sums(work)
    dry = smk(work, "-n", NPZ)
    assert f"galu: {MANIFEST}: has no provenance sidecar (an older `galu data fetch`)" in dry.stderr
    assert "its archives verify: a real run gives it a sidecar" in dry.stderr
    assert not side.exists()  # a dry run writes nothing
    done = smk(work, NPZ)
    assert "so it was given a sidecar; nothing is fetched again or rebuilt" in done.stderr
    record = json.loads(side.read_text())
    assert record["rule"] == "pre-flight: adopted" and record["output"]["path"] == MANIFEST
    assert stat(manifest) == before and stat(work / NPZ) == npz  # nothing rewritten or rebuilt
    assert _mirror_sums(work) == mirrors
    assert "Nothing to be done" in smk(work, "-n", NPZ).stdout
    assert audit(work)[0] == 0
    side.unlink()
    flip(work / RAW)  # now one archive fails: no adoption; the archive check restores it
    done = smk(work, NPZ)
    assert "so it was given a sidecar" not in done.stderr
    assert f"moved it to {MANIFEST}.rejected" in done.stderr
