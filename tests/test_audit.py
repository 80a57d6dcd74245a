"""The audit finds tampered outputs, tampered inputs, missing and orphan sidecars."""

import json
import random
import shutil

import pandas as pd
import pytest

from galu.workflow.cli import main
from galu.workflow.output import Run
from galu.workflow.provenance import sealed_sidecar
from galu.workflow.trust.audit import audit_tree


def test_clean_tree_passes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("a")
    Run("r", inputs=["in.txt"]).write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    assert audit_tree(".") == []
    assert main(["audit"]) == 0
    assert "1 output(s) consistent" in capsys.readouterr().out


def test_tampered_input_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("a")
    Run("r", inputs=["in.txt"]).write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    (tmp_path / "in.txt").write_text("b")
    findings = audit_tree(".")
    assert [str(f) for f in findings] == [
        "results/s/x.csv: input in.txt changed since this output was made"
    ]
    assert main(["audit"]) == 1
    assert "PROBLEM results/s/x.csv: input in.txt changed" in capsys.readouterr().out


def test_changed_output_missing_sidecar_orphan_and_missing_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("a")
    run = Run("r", inputs=["in.txt"])
    run.write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    run.write_csv(pd.DataFrame({"x": [2]}), "results/s/y.csv")
    with open("results/s/x.csv", "a") as handle:
        handle.write("3\n")
    (tmp_path / "results/s/hand_made.csv").write_text("x\n1\n")
    (tmp_path / "results/s/y.csv").rename(tmp_path / "figures_y.csv")
    (tmp_path / "in.txt").unlink()
    problems = {(f.path, f.problem.split(" (")[0]) for f in audit_tree(".")}
    assert problems == {
        ("results/s/x.csv", "changed after it was written"),
        ("results/s/x.csv", "input in.txt is missing"),
        ("results/s/hand_made.csv", "no provenance sidecar"),
        ("results/s/y.csv.meta.json", "sidecar without its output"),
    }


def test_edited_sidecar_is_named_by_its_seal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [1]}), "results/x.csv")
    side = tmp_path / "results/x.csv.meta.json"
    side.write_text(side.read_text().replace('"rule": "r"', '"rule": "q"'))
    [finding] = audit_tree(".")
    assert finding.path == "results/x.csv"
    assert finding.problem.startswith("sidecar results/x.csv.meta.json changed after it was")


def test_corrupt_sidecar_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [1]}), "results/x.csv")
    (tmp_path / "results/x.csv.meta.json").write_text("{not json")
    [finding] = audit_tree(".")
    assert finding.path == "results/x.csv" and "unreadable" in finding.problem


def test_leftover_temporary_file_is_not_an_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [1]}), "results/x.csv")
    (tmp_path / "results/.x.csv.abc123.tmp").write_text("half")
    assert audit_tree(".") == []


def test_tampered_raw_archive_is_named(tmp_path, monkeypatch):
    # A file under a registered dataset name is checked against the published checksums.
    monkeypatch.chdir(tmp_path)
    raw = tmp_path / "data/raw/mnist/t10k-labels-idx1-ubyte.gz"
    raw.parent.mkdir(parents=True)
    raw.write_bytes(b"\x1f\x8b not the official labels")
    [finding] = audit_tree(".")
    assert finding.path == "data/raw/mnist/t10k-labels-idx1-ubyte.gz"
    assert finding.problem.startswith("does not match the published checksums")


def test_explain_walks_the_chain_and_names_the_broken_link(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("a")
    Run("make_csv", inputs=["in.txt"]).write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    Run("plot", inputs=["results/s/x.csv"]).write_csv(pd.DataFrame({"y": [1]}), "figures/y.csv")
    assert main(["audit", "--explain", "figures/y.csv"]) == 0
    out = capsys.readouterr().out
    assert "figures/y.csv  [ok]" in out and "<- results/s/x.csv  [ok]" in out
    assert "rule make_csv" in out and "<- in.txt  [ok]" in out
    (tmp_path / "in.txt").write_text("b")
    assert main(["audit", "--explain", "figures/y.csv"]) == 1
    out = capsys.readouterr().out
    assert "results/s/x.csv  [PROBLEM: input in.txt changed since this output was made]" in out


def test_outputs_from_another_commit_are_reported(tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [1]}), "results/x.csv")
    side = tmp_path / "results/x.csv.meta.json"
    record = json.loads(side.read_text())
    record["git"] = {"commit": "0" * 40, "dirty": False}
    side.write_bytes(sealed_sidecar(record))  # as if a run on that commit had written it
    assert main(["audit"]) == 0  # consistent bytes: a note, not a failure
    assert f"NOTE 1 output(s) made on commit {'0' * 40}, e.g. results/x.csv" in (
        capsys.readouterr().out
    )
    assert main(["audit", "--strict"]) == 1
    assert f"PROBLEM 1 output(s) made on commit {'0' * 40}" in capsys.readouterr().out


def test_summary_names_outputs_made_from_substitute_data(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("a")
    Run("r", inputs=["in.txt"]).write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    flagged = Run("r", inputs=["in.txt"], extra={"data_substitute": True})
    flagged.write_csv(pd.DataFrame({"x": [2]}), "results/s/y.csv")
    assert main(["audit"]) == 0  # a substitute is declared, not a problem
    out = capsys.readouterr().out
    assert "NOTE 1 output(s) descend from substitute data" in out
    assert "e.g. results/s/y.csv" in out and "2 output(s) consistent" in out


def _coded_tree(root):
    """A one-module project: scripts/make.py imports galu.maths."""
    (root / "galu").mkdir()
    (root / "galu/__init__.py").write_text("")
    (root / "galu/maths.py").write_text("def f():\n    return 1\n")
    (root / "scripts").mkdir()
    (root / "scripts/make.py").write_text("from galu.maths import f\n")
    (root / "scripts/plot.py").write_text("import json\n")


def test_stale_output_names_the_changed_module_and_the_command_that_fixes_it(
    tmp_path, monkeypatch, capsys
):
    from galu.workflow.closure import CodeScanner
    from galu.workflow.trust.audit import Finding

    monkeypatch.chdir(tmp_path)
    _coded_tree(tmp_path)
    scanner = CodeScanner(tmp_path)
    made = Run("make", code=scanner.closure("scripts/make.py").record())
    made.write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    plot = Run("plot", inputs=["results/s/x.csv"], code=scanner.closure("scripts/plot.py").record())
    plot.write_csv(pd.DataFrame({"y": [1]}), "figures/y.csv")
    assert audit_tree(".") == []

    (tmp_path / "galu/maths.py").write_text('"""Doc."""\n\n\ndef f():  # one\n    return 1\n')
    assert audit_tree(".") == []  # docstrings and comments are not code
    (tmp_path / "galu/maths.py").write_text("def f():\n    return 2\n")
    assert audit_tree(".") == [
        Finding("results/s/x.csv", "stale: made with older code; changed since: galu/maths.py"),
        Finding("figures/y.csv", "stale: its input results/s/x.csv is stale"),
    ]
    assert main(["audit"]) == 1
    out = capsys.readouterr().out
    assert "(2 stale: made with code that changed since)" in out
    assert (  # the figure is not named: forcing the CSV reruns what reads it
        "To rebuild them and what depends on them: "
        "snakemake --cores all --forcerun results/s/x.csv\n"
    ) in out
    assert main(["audit", "--explain", "figures/y.csv"]) == 1
    out = capsys.readouterr().out
    assert (
        "<- results/s/x.csv  [PROBLEM: stale: made with older code; changed since: galu/maths.py]"
    ) in out
    # the broken link, not the figure: forcing it reruns everything downstream
    assert "from where it broke: snakemake --cores all --forcerun results/s/x.csv\n" in out

    (tmp_path / "scripts/make.py").write_text("import json\n")  # no longer imports maths
    [finding, _] = audit_tree(".")
    assert finding.problem == (
        "stale: made with older code; changed since: galu/__init__.py (no longer used), "
        "galu/maths.py (no longer used), scripts/make.py"
    )


def test_sidecar_records_the_jobs_code_apart_from_params(tmp_path, monkeypatch):
    import json
    from types import SimpleNamespace

    from galu.workflow.closure import CodeScanner

    monkeypatch.chdir(tmp_path)
    _coded_tree(tmp_path)
    expected = CodeScanner(tmp_path).closure("scripts/make.py")
    planned = {"script": "scripts/make.py", "sha256": expected.sha256}
    smk = SimpleNamespace(
        rule="make", log=[], input=[], wildcards={}, params={"n": 3, "code": planned}
    )
    Run.from_snakemake(smk).write_csv(pd.DataFrame({"x": [1]}), "results/x.csv")
    record = json.loads((tmp_path / "results/x.csv.meta.json").read_text())
    assert record["params"] == {"n": 3}
    assert record["code"] == expected.record()
    assert sorted(record["code"]["files"]) == [
        "galu/__init__.py",
        "galu/maths.py",
        "scripts/make.py",
    ]


def test_outputs_without_code_are_a_note(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [1]}), "results/x.csv")
    assert main(["audit"]) == 0
    assert "NOTE 1 output(s) record no code closure" in capsys.readouterr().out
    assert main(["audit", "--strict"]) == 1
    out = capsys.readouterr().out
    assert "To rebuild them: snakemake --cores all --forcerun results/x.csv" in out


def test_rebuild_command_names_the_job_of_each_broken_file():
    from galu.workflow.trust.audit import Finding, rebuild_command

    findings = [
        Finding("data/raw/mnist/train.gz", "does not match the published checksums (x)"),
        Finding("data/raw/mnist/t10k.gz", "does not match the published checksums (y)"),
        Finding("results/a.csv.meta.json", "sidecar without its output"),
        Finding("figures/f.png", "changed after it was written"),
        Finding("figures/f.pdf", "stale: its input results/a.csv is stale"),
    ]
    assert rebuild_command(findings) == (
        "snakemake --cores all --forcerun data/raw/mnist/sources.json results/a.csv figures/f.png"
    )


# Sidecars that are valid JSON of a wrong shape: the audit names them, never crashes.
SHAPES = [
    None, [], "text", 3, {}, {"output": None}, {"output": "a string"},
    {"output": {"sha256": None}}, {"output": {"sha256": 5, "path": "results/s/x.csv"}},
    {"output": {"sha256": "0" * 64}},  # no path
    {"output": {"sha256": "0" * 64, "path": "results/s/x.csv"}, "inputs": None},
    {"output": {"sha256": "0" * 64, "path": "results/s/x.csv"}, "inputs": "in.txt"},
    {"output": {"sha256": "0" * 64, "path": "results/s/x.csv"}, "inputs": [None]},
    {"output": {"sha256": "0" * 64, "path": "results/s/x.csv"}, "inputs": [{"path": 1}]},
    {"output": {"sha256": "0" * 64, "path": "results/s/x.csv"}, "code": "script.py"},
    {"output": {"sha256": "0" * 64, "path": "results/s/x.csv"}, "code": {"script": None}},
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: json.dumps(s)[:40])
def test_a_sidecar_of_the_wrong_shape_is_named_not_a_crash(tmp_path, monkeypatch, capsys, shape):
    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    Run("r").write_csv(pd.DataFrame({"x": [2]}), "results/s/y.csv")
    (tmp_path / "results/s/x.csv.meta.json").write_text(json.dumps(shape))
    assert main(["audit"]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM results/s/x.csv: sidecar x.csv.meta.json" in out
    assert "PROBLEM results/s/y.csv" not in out  # the other output is fine


def test_random_json_never_crashes_the_audit(tmp_path, monkeypatch, capsys):
    """A property test: 300 random JSON values as the sidecar; the audit always answers."""
    rng = random.Random(0)

    def value(depth=0):
        kinds = ["null", "int", "str", "hash", "list", "dict"] if depth < 3 else ["int", "str"]
        kind = rng.choice(kinds)
        if kind == "dict":
            keys = ["output", "inputs", "sha256", "path", "code", "script", "files", "x"]
            return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 4))}
        if kind == "list":
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {"null": None, "int": rng.randint(-5, 5), "str": "results/s/x.csv",
                "hash": "0" * 64}[kind]  # fmt: skip

    monkeypatch.chdir(tmp_path)
    Run("r").write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    for _ in range(300):
        (tmp_path / "results/s/x.csv.meta.json").write_text(json.dumps(value()))
        assert main(["audit"]) == 1  # never a well-formed, matching sidecar by chance
    assert "Traceback" not in capsys.readouterr().err


def test_an_output_copied_with_its_sidecar_is_not_taken_for_another(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Run("prepare").write_csv(pd.DataFrame({"x": [1]}), "data/processed/mnist.csv")
    for suffix in ("", ".meta.json"):
        shutil.copy(f"data/processed/mnist.csv{suffix}", f"data/processed/fashion.csv{suffix}")
    (finding,) = audit_tree(".")
    assert finding.path == "data/processed/fashion.csv"
    assert "its sidecar describes data/processed/mnist.csv, not this file" in finding.problem


def test_an_audit_that_checks_nothing_fails_and_bad_places_are_usage_errors(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["audit"]) == 1
    assert "galu audit: nothing to check" in capsys.readouterr().out
    assert main(["audit", "--root", str(tmp_path / "none")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    (tmp_path / "results").mkdir()
    assert main(["audit", "--folders", "resutls"]) == 2
    assert "no folder resutls under" in capsys.readouterr().err


def test_a_published_note_names_the_first_changed_files_and_counts_the_rest():
    from galu.workflow.trust.audit import _first_files

    long = "stale: made with older code; changed since: a.py, b.py, c.py, d.py, e.py"
    assert (
        _first_files(long)
        == "stale: made with older code; changed since: a.py, b.py, c.py and 2 more"
    )
    short = "stale: made with older code; changed since: a.py"
    assert _first_files(short) == short and _first_files("other") == "other"


def test_explain_names_the_drawing_and_computing_functions():
    from galu.workflow.trust.lineage import _describe

    record = {
        "rule": "scm_plot_perceptron",
        "git": {"commit": "a" * 40, "dirty": False},
        "drawn_by": "galu.scm.figures.draw_perceptron",
        "params": {"computed_by": {"stability": ["galu.scm.experiments.stability_table"]}},
        "code": {"script": "scripts/plot.py", "imports": ["galu.scm.figures"],
                 "sha256": "b" * 64, "files": {"scripts/plot.py": "c", "galu/scm/figures.py": "d"}},
    }  # fmt: skip
    said = _describe(record)
    # the figures module the plot script ran is named beside it
    assert f"code {'b' * 12} (scripts/plot.py (galu.scm.figures) + 1 file(s))" in said
    assert said.endswith(
        ", drawn by galu.scm.figures.draw_perceptron, tables computed: stability by"
        " galu.scm.experiments.stability_table"
    ), said
    del record["drawn_by"], record["params"]
    assert "drawn by" not in _describe(record) and "computed" not in _describe(record)


# Every JSON type a hand edit or a broken tool could put in a sidecar field.
JSON_TYPES = {"null": None, "number": 7, "string": "text", "list": [], "object": {}, "bool": True}


def _field_paths(value, prefix=()):
    """Every field of a JSON value, as key/index paths, the containers included."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        yield (*prefix, key)
        if isinstance(child, (dict, list)) and child:
            yield from _field_paths(child, (*prefix, key))


def _replaced(record, path, new):
    import copy

    out = copy.deepcopy(record)
    holder = out
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    return out


def _full_chain(root):
    """A figure made from a table made by coded scripts from a processed dataset with its
    raw archive: a sidecar with every field the audit and --explain read."""
    from galu.workflow.closure import CodeScanner

    _coded_tree(root)
    scanner = CodeScanner(root)
    (root / "data/raw/toy").mkdir(parents=True)
    (root / "data/raw/toy/train.gz").write_bytes(b"raw")
    Run("download").stamp("data/raw/toy/train.gz")
    dataset = Run(
        "prepare", wildcards={"dataset": "toy"}, extra={"raw_files": [{"name": "train.gz"}]}
    )
    dataset.write_csv(pd.DataFrame({"x": [1]}), "data/processed/toy.csv")
    table = Run(
        "make",
        wildcards={"a": 1},
        params={"lr": 0.1, "computed_by": {"t": ["galu.maths.f"]}},
        inputs=["data/processed/toy.csv"],
        code=scanner.closure("scripts/make.py").record(),
        extra={"drawn_by": "galu.maths.f", "data_substitute": False},
    )
    table.write_csv(pd.DataFrame({"x": [1]}), "results/s/x.csv")
    plot = Run("plot", inputs=["results/s/x.csv"], code=scanner.closure("scripts/plot.py").record())
    plot.write_csv(pd.DataFrame({"y": [1]}), "figures/y.csv")


def test_every_sidecar_field_of_every_json_type_is_named_never_a_crash(
    tmp_path, monkeypatch, capsys
):
    """A property test over every field of a full sidecar (the table's, and the dataset's
    with its raw_files) times every JSON type: `galu audit`, `galu audit --explain` of the
    figure above it and of the file itself always answer (exit 0 or 1, never an exception);
    a field the commands read that has the wrong type is named as a malformed sidecar, with
    what was expected, and the other outputs are still judged."""
    from galu.workflow.trust.audit import shape_problem

    monkeypatch.chdir(tmp_path)
    _full_chain(tmp_path)
    assert main(["audit"]) == 0
    named = cases = 0
    for rel in ("results/s/x.csv", "data/processed/toy.csv"):
        side = tmp_path / f"{rel}.meta.json"
        original = side.read_bytes()
        record = json.loads(original)
        for path in _field_paths(record):
            for kind, new in JSON_TYPES.items():
                mutated = _replaced(record, path, new)
                side.write_bytes(sealed_sidecar(mutated))  # sealed: the field itself is judged
                capsys.readouterr()
                case = f"{rel} {'.'.join(map(str, path))} = {kind}"
                assert main(["audit"]) in (0, 1), case
                out = capsys.readouterr().out
                for target in ("figures/y.csv", rel):
                    assert main(["audit", "--explain", target]) in (0, 1), case
                problem = shape_problem(mutated)
                if problem:
                    assert f"PROBLEM {rel}: sidecar {side.name} {problem}" in out, case
                    assert "PROBLEM figures/y.csv: sidecar" not in out, case
                    named += 1
                cases += 1
        side.write_bytes(original)
    assert "Traceback" not in capsys.readouterr().err
    # output, inputs, code, git and raw_files of either sidecar, in every type they cannot take
    assert cases > 300 and named > 120, (cases, named)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("inputs", [{"path": "../secret.txt"}], "input whose path '../secret.txt' lies outside"),
        ("inputs", [{"path": "SECRET"}], "lies outside the repository"),
        ("inputs", [{"path": "results/\0x"}], "is not a plain path"),
        ("code", {"script": "SECRET"}, "has a code script"),
        ("code", {"script": "../secret.txt"}, "code script '../secret.txt' that lies outside"),
        ("code", {"script": "scripts/make.py", "imports": ["..secret"]}, "malformed code record"),
        ("raw_files", [{"name": "../../../secret.txt"}], "has malformed raw_files"),
        ("wildcards", {"dataset": "../.."}, "has raw_files but no dataset name"),
        ("git", {"commit": ["a"], "dirty": "yes"}, "has a malformed git record"),
    ],
)  # fmt: skip
def test_a_sidecar_never_makes_galu_read_a_file_outside_the_repository(
    tmp_path, monkeypatch, capsys, field, value, problem
):
    """Paths in a sidecar that lead out of the repository (``..``, absolute, NUL): the
    sidecar is named as malformed and no file outside the repository is opened by the audit,
    its --explain or ``galu explain``'s chain (every open is recorded)."""
    import builtins
    import io

    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    _full_chain(root)
    rel = "data/processed/toy.csv" if field in ("raw_files", "wildcards") else "results/s/x.csv"
    side = root / f"{rel}.meta.json"
    record = json.loads(side.read_text())
    if field == "inputs":
        value = [{**value[0], "sha256": "0" * 64}]
    if field == "code":
        value = {**record["code"], **value}
    value = json.loads(json.dumps(value).replace("SECRET", str(secret)))
    record[field] = value
    side.write_bytes(sealed_sidecar(record))
    opened = []
    real_open = builtins.open

    def recording_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    monkeypatch.setattr(io, "open", recording_open)
    assert main(["audit"]) == 1
    out = capsys.readouterr().out
    assert f"PROBLEM {rel}: sidecar {side.name} " in out and problem in out, out
    assert main(["audit", "--explain", "figures/y.csv"]) == 1
    assert problem in capsys.readouterr().out
    assert main(["audit", "--explain", rel]) == 1
    assert opened and [p for p in opened if "secret" in p] == []  # (every open was recorded)
