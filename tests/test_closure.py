"""Code closures (galu/workflow/closure.py) on a tiny synthetic package, and the site-only
keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from galu.workflow.closure import CodeScanner, changed_files, source_hash
from galu.workflow.settings.sitekeys import (
    DATA_SITE_KEYS,
    data_result_settings,
    dataset_substitutes,
    site_device,
)

from conftest import REPO

PACKAGE = {
    "pkg/__init__.py": '"""The package."""\n',
    "pkg/a.py": "from pkg.b import f\n\ndef g():\n    return f()\n",
    "pkg/b.py": "import pkg.sub.c\n\ndef f():\n    return 1\n",
    "pkg/sub/__init__.py": "from . import d\n",
    "pkg/sub/c.py": "from ..a import g  # a cycle: a -> b -> sub.c -> a\n",
    "pkg/sub/d.py": "def late():\n    from .e import h  # function-local\n    return h\n",
    "pkg/sub/e.py": "STYLE = 'style.txt'\nh = 2\n",
    "pkg/sub/style.txt": "colour: red\n",
    "pkg/lonely.py": "import numpy\nimport os.path\nx = 1\n",
    "pkg/star.py": "from pkg.sub.e import *\nfrom pkg import lonely as alone\n",
    "scripts/one.py": "from pkg.a import g\nimport numpy as np\n",
    "scripts/two.py": "import pkg.lonely\n",
    "scripts/three.py": "from pkg import star\n",
    "scripts/none.py": "import json\nimport torch\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel, text in PACKAGE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def scan(root: Path, script: str, **kw) -> list[str]:
    return CodeScanner(root, packages=("pkg",), **kw).closure(script).modules


def test_direct_transitive_relative_cycle_and_function_local_imports(tree):
    """one -> a -> b -> sub.c -> a (cycle); `import pkg.sub.c` runs pkg/sub/__init__, which
    imports d (relative); d imports e inside a function; e names its data file."""
    assert scan(tree, "scripts/one.py") == [
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/b.py",
        "pkg/sub/__init__.py",
        "pkg/sub/c.py",
        "pkg/sub/d.py",
        "pkg/sub/e.py",
        "pkg/sub/style.txt",
        "scripts/one.py",
    ]


def test_import_dotted_form_runs_each_package_init_and_ignores_other_packages(tree):
    assert scan(tree, "scripts/two.py") == ["pkg/__init__.py", "pkg/lonely.py", "scripts/two.py"]
    assert scan(tree, "scripts/none.py") == ["scripts/none.py"]


def test_from_package_import_submodule_and_star(tree):
    """`from pkg import star` reaches the submodule; `from pkg.sub.e import *` runs sub/__init__
    (which imports d) and e; `from pkg import lonely as alone` reaches lonely."""
    assert scan(tree, "scripts/three.py") == [
        "pkg/__init__.py",
        "pkg/lonely.py",
        "pkg/star.py",
        "pkg/sub/__init__.py",
        "pkg/sub/d.py",
        "pkg/sub/e.py",
        "pkg/sub/style.txt",
        "scripts/three.py",
    ]


def test_hash_ignores_comments_docstrings_and_layout_but_not_code():
    base = source_hash('"""Doc."""\ndef f(x):\n    """Doc."""\n    return x + 1\n')
    assert source_hash("def f(x):\n    return x+1  # comment\n") == base
    assert source_hash("def f(x):\n\n    return (x + 1)\n") == base
    assert source_hash("def f(x):\n    return x + 2\n") != base
    assert source_hash("def f(x):\n    return x + 1.0\n") != base
    assert source_hash("def f(y):\n    return y + 1\n") != base
    # a function whose body is only a docstring keeps a body
    assert source_hash('def f():\n    """Doc."""\n') == source_hash("def f():\n    pass\n")


def test_closure_hash_follows_each_file_and_a_data_file(tree):
    before = CodeScanner(tree, packages=("pkg",)).closure("scripts/one.py")
    (tree / "pkg/sub/e.py").write_text("STYLE = 'style.txt'  # only a comment\nh = 2\n")
    same = CodeScanner(tree, packages=("pkg",)).closure("scripts/one.py")
    assert same.sha256 == before.sha256
    (tree / "pkg/sub/style.txt").write_text("colour: blue\n")
    restyled = CodeScanner(tree, packages=("pkg",)).closure("scripts/one.py")
    assert changed_files(before.files, restyled.files) == ["pkg/sub/style.txt"]
    (tree / "pkg/b.py").write_text("def f():\n    return 1\n")  # drops the import of sub.c
    cut = CodeScanner(tree, packages=("pkg",)).closure("scripts/one.py")
    assert changed_files(restyled.files, cut.files) == [
        "pkg/b.py",
        "pkg/sub/__init__.py (no longer used)",
        "pkg/sub/c.py (no longer used)",
        "pkg/sub/d.py (no longer used)",
        "pkg/sub/e.py (no longer used)",
        "pkg/sub/style.txt (no longer used)",
    ]
    record = cut.record()
    assert record["script"] == "scripts/one.py"
    assert record["sha256"] == cut.sha256 != restyled.sha256
    assert sorted(record["files"]) == ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "scripts/one.py"]


def test_parse_cache_is_used_and_keyed_by_content(tree, monkeypatch):
    cache = tree / "cache/code.json"
    first = CodeScanner(tree, packages=("pkg",), cache=cache)
    expected = first.closure("scripts/one.py")
    first.save_cache()
    assert len(json.loads(cache.read_text())["entries"]) == 8  # eight Python files parsed

    parsed = []
    original = CodeScanner._parse
    monkeypatch.setattr(
        CodeScanner,
        "_parse",
        lambda self, src, path, named: parsed.append(path.name) or original(self, src, path, named),
    )
    again = CodeScanner(tree, packages=("pkg",), cache=cache).closure("scripts/one.py")
    assert parsed == [] and again == expected
    (tree / "pkg/b.py").write_text("import pkg.sub.c\n\ndef f():\n    return 3\n")
    edited = CodeScanner(tree, packages=("pkg",), cache=cache).closure("scripts/one.py")
    assert parsed == ["b.py"]
    assert changed_files(expected.files, edited.files) == ["pkg/b.py"]


def test_the_workflow_scripts_closures():
    """Spot checks on the real tree: the ODE script reaches the ODEs but no plotting; the plot
    scripts reach the style sheet; the claims script reaches galu.workflow.claims."""
    scanner = CodeScanner(REPO)
    ode = scanner.closure("scripts/scm_ode.py").modules
    assert {"galu/scm/odes.py", "galu/scm/averages.py", "galu/workflow/output.py"} <= set(ode)
    assert "galu/workflow/provenance.py" not in ode  # machinery: sidecars, not results
    assert "galu/plotting.py" not in ode and "galu/styles/galu.mplstyle" not in ode
    plot = scanner.closure("scripts/plot.py", ["galu.scm.figures"])
    assert {"galu/plotting.py", "galu/styles/galu.mplstyle", "galu/scm/figures.py"} <= set(
        plot.modules
    )
    assert not any(m.startswith(("galu/memorization", "galu/normalization")) for m in plot.modules)
    assert plot.record()["imports"] == ["galu.scm.figures"]
    assert plot.sha256 != scanner.closure("scripts/plot.py", ["galu.memorization.figures"]).sha256
    with pytest.raises(ValueError, match="imports galu.nope: no such project module"):
        scanner.closure("scripts/plot.py", ["galu.nope"])
    assert "galu/workflow/claims.py" in scanner.closure("scripts/report_claims.py").modules


def test_site_device_and_data_settings():
    assert site_device("auto", local=True, gpu=False) == "cpu"
    assert site_device("auto", local=True, gpu=True) == "auto"
    assert site_device("auto", local=False, gpu=False) == "auto"  # a cluster decides there
    assert site_device("cuda", local=True, gpu=True) == "cuda"
    assert site_device("cpu", local=True, gpu=True) == "cpu"
    section = {"mirrors": ["/m"], "substitutes": [{"dataset": "cifar10"}], "download": True,
               "link": False, "timeout_s": 5, "retries": 1, "backoff_s": 0.5}  # fmt: skip
    assert data_result_settings(section) == {"substitutes": [{"dataset": "cifar10"}]}
    assert set(section) - set(DATA_SITE_KEYS) == {"substitutes"}


def test_a_download_params_carry_only_its_own_datasets_substitutes():
    """Opting into the CIFAR-10 reconstruction changes nothing an MNIST job is planned from."""
    cifar, mnist = {"dataset": "cifar10", "file": "a"}, {"dataset": "mnist", "file": "b"}
    section = {
        "mirrors": ["/m"],
        "substitutes": [cifar, mnist, {"dataset": "cifar10", "file": "c"}],
    }
    assert data_result_settings(section, "mnist") == {"substitutes": [mnist]}
    assert data_result_settings(section, "fashion_mnist") == {"substitutes": []}
    assert dataset_substitutes(section["substitutes"], "cifar10") == [
        cifar,
        section["substitutes"][2],
    ]
    assert section["substitutes"][0] is cifar  # the config itself is left as it was
    assert dataset_substitutes(None, "mnist") == []
    # A malformed entry stays in every dataset's list, for the job's own check to name it.
    assert dataset_substitutes(["oops", mnist], "cifar10") == ["oops"]
