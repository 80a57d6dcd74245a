"""Fetching a dataset: raw folder, mirrors (folders and URLs), official URLs, substitutes,
the environment over the config, and the offline message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_data_fixtures import (
    CIFAR_NAME,
    IDX_NAMES,
    FileServer,
    cifar_members,
    gzip_bytes,
    tar_gz,
    tiny_cifar,
    tiny_idx,
)

from galu.workflow.data.errors import ChecksumMismatchError, InsecureURLError, MissingFilesError
from galu.workflow.data.fetch import fetch, fetch_many, manifest_path
from galu.workflow.data.mirrors import (
    Mirror,
    _clone,
    _clone_or_copy,
    mirror_list,
    split_mirror_list,
)
from galu.workflow.data.prepare import prepare
from galu.workflow.data.settings import DataSettings
from galu.workflow.data.substitutes import parse_substitutes
from galu.workflow.data.verify import file_digests
from galu.workflow.provenance import sha256_file

NO_ENV: dict[str, str] = {}


def _mirror(root: Path, blobs: dict[str, bytes], sub: str = "") -> Path:
    folder = root / sub if sub else root
    folder.mkdir(parents=True, exist_ok=True)
    for name, blob in blobs.items():
        (folder / name).write_bytes(blob)
    return root


def _settings(*mirrors: Path | str, **kwargs) -> DataSettings:
    return DataSettings(mirrors=tuple(str(m) for m in mirrors), download=False, **kwargs)


def _sources(raw: Path, name: str) -> dict[str, str]:
    manifest = json.loads(manifest_path(raw, name).read_text())
    return {f["name"]: f["source"] for f in manifest["files"]}


def _corrupt(blob: bytes) -> bytes:
    data = bytearray(blob)
    data[-9] ^= 0x01  # inside the deflate stream
    return bytes(data)


# -- mirror lists ----------------------------------------------------------------------------


def test_mirror_list_splits_on_colons_but_keeps_urls_whole() -> None:
    value = "/a:https://h.example:8443/x:/b::file:///c:http://127.0.0.1:8000"
    assert split_mirror_list(value) == [
        "/a",
        "https://h.example:8443/x",
        "/b",
        "file:///c",
        "http://127.0.0.1:8000",
    ]
    assert split_mirror_list("") == []


def test_environment_mirrors_come_first_without_repeats() -> None:
    env = {"GALU_DATA_MIRRORS": "/env1:/shared"}
    assert mirror_list(["/shared", "/cfg"], env) == [
        Mirror("/env1", "GALU_DATA_MIRRORS"),
        Mirror("/shared", "GALU_DATA_MIRRORS"),
        Mirror("/cfg", "data.mirrors"),
    ]


# -- folder mirrors --------------------------------------------------------------------------


def test_happy_path_from_a_folder_mirror_sub_folder(tmp_path: Path) -> None:
    tiny = tiny_idx()
    mirror = _mirror(tmp_path / "m", tiny.blobs, sub="tiny-idx")  # an alias folder name
    raw = tmp_path / "raw"
    report = fetch(tiny.dataset, raw, _settings(mirror), NO_ENV)
    for name, blob in tiny.blobs.items():
        assert (raw / "tiny_idx" / name).read_bytes() == blob
    assert _sources(raw, "tiny_idx") == {n: str(mirror / "tiny-idx" / n) for n in tiny.blobs}
    assert report.substitute is False
    assert {f.method for f in report.files} == {"archive"}
    leftovers = [p.name for p in (raw / "tiny_idx").iterdir() if p.name.startswith(".")]
    assert leftovers == []


@pytest.mark.parametrize("link", [True, False])
def test_a_write_under_data_raw_never_reaches_the_mirror(tmp_path: Path, link: bool) -> None:
    """#39, pattern 6: with or without ``link``, the raw file has bytes of its own (a clone
    or a copy, never a hard link), so an in-place write to it (as root, which permissions
    do not stop) leaves the shared mirror as it was."""
    tiny = tiny_idx()
    mirror = _mirror(tmp_path / "m", tiny.blobs)
    before = {p.name: sha256_file(p) for p in sorted(mirror.iterdir())}
    fetch(tiny.dataset, tmp_path / "raw", _settings(mirror, link=link), NO_ENV)
    for name in before:
        raw = tmp_path / "raw/tiny_idx" / name
        assert raw.stat().st_ino != (mirror / name).stat().st_ino
        assert raw.stat().st_nlink == 1
        with open(raw, "r+b") as handle:  # an editor or a tool writing in place
            handle.write(b"\0\0\0\0")
    assert {p.name: sha256_file(p) for p in sorted(mirror.iterdir())} == before


def test_a_clone_is_a_copy_of_its_own_or_nothing(tmp_path: Path) -> None:
    """Where the file system has reflinks the clone holds the same bytes under another
    inode; where it has none, nothing is left behind and the caller copies."""
    src, tmp = tmp_path / "a.gz", tmp_path / ".a.gz.tmp"
    src.write_bytes(b"archive bytes" * 1000)
    if _clone(src, tmp):
        assert tmp.read_bytes() == src.read_bytes()
        assert tmp.stat().st_ino != src.stat().st_ino
    else:
        assert not tmp.exists()
    _clone_or_copy(src, tmp, clone=True)
    assert tmp.read_bytes() == src.read_bytes() and tmp.stat().st_nlink == 1


def test_mirror_order_decides_which_copy_is_used(tmp_path: Path) -> None:
    tiny = tiny_idx()
    first = _mirror(tmp_path / "first", tiny.blobs)
    second = _mirror(tmp_path / "second", tiny.blobs)
    fetch(tiny.dataset, tmp_path / "raw", _settings(first, second), NO_ENV)
    assert set(_sources(tmp_path / "raw", "tiny_idx").values()) == {
        str(first / n) for n in tiny.blobs
    }


def test_a_bad_copy_in_the_first_mirror_falls_through_to_the_next(tmp_path: Path) -> None:
    tiny = tiny_idx()
    name = IDX_NAMES["train_images"]
    bad = _mirror(tmp_path / "bad", {**tiny.blobs, name: _corrupt(tiny.blobs[name])})
    good = _mirror(tmp_path / "good", tiny.blobs)
    fetch(tiny.dataset, tmp_path / "raw", _settings(bad, good), NO_ENV)
    sources = _sources(tmp_path / "raw", "tiny_idx")
    assert sources[name] == str(good / name)
    assert sources[IDX_NAMES["test_labels"]] == str(bad / IDX_NAMES["test_labels"])


def test_the_environment_takes_precedence_over_the_config(tmp_path: Path) -> None:
    tiny = tiny_idx()
    from_config = _mirror(tmp_path / "cfg", tiny.blobs)
    from_env = _mirror(tmp_path / "env", tiny.blobs)
    env = {"GALU_DATA_MIRRORS": str(from_env)}
    fetch(tiny.dataset, tmp_path / "raw", _settings(from_config), env)
    assert set(_sources(tmp_path / "raw", "tiny_idx").values()) == {
        str(from_env / n) for n in tiny.blobs
    }


def test_a_debian_style_repack_in_a_mirror_is_accepted_by_content(tmp_path: Path) -> None:
    tiny = tiny_idx()
    repacked = {n: gzip_bytes(tiny.contents[n], None, mtime=0) for n in tiny.blobs}
    mirror = _mirror(tmp_path / "usr-share-datasets", repacked, sub="tiny-idx")
    report = fetch(tiny.dataset, tmp_path / "raw", _settings(mirror), NO_ENV)
    assert {f.method for f in report.files} == {"gzip_content"}
    prepared = prepare(tiny.dataset, tmp_path / "raw", tmp_path / "processed")
    assert prepared.substitute is False


def test_wrong_checksums_in_every_mirror_are_all_reported(tmp_path: Path) -> None:
    tiny = tiny_idx()
    name = IDX_NAMES["train_labels"]
    bad = _corrupt(tiny.blobs[name])
    mirrors = [_mirror(tmp_path / f"m{i}", {**tiny.blobs, name: bad}) for i in range(2)]
    with pytest.raises(MissingFilesError) as err:
        fetch(tiny.dataset, tmp_path / "raw", _settings(*mirrors), NO_ENV)
    assert [m.spec.name for m in err.value.missing] == [name]
    message = str(err.value)
    spec = tiny.dataset.file(name)
    actual_md5 = file_digests(mirrors[0] / name).md5
    for mirror in mirrors:
        assert f"- {mirror / name}: rejected (expected size {spec.size}, md5 {spec.md5}" in message
    assert message.count(f"got size {len(bad)}, md5 {actual_md5}") == 2
    assert not (tmp_path / "raw" / "tiny_idx" / name).exists()
    assert not manifest_path(tmp_path / "raw", "tiny_idx").exists()


# -- the raw folder itself -------------------------------------------------------------------


def test_files_already_in_the_raw_folder_are_verified_and_kept(tmp_path: Path) -> None:
    tiny = tiny_idx()
    raw = tmp_path / "raw"
    _mirror(raw / "tiny_idx", tiny.blobs)
    fetch(tiny.dataset, raw, _settings(), NO_ENV)
    assert set(_sources(raw, "tiny_idx").values()) == {"already present"}


def test_a_bad_file_in_the_raw_folder_is_set_aside_and_replaced(tmp_path: Path) -> None:
    tiny = tiny_idx()
    name = IDX_NAMES["test_images"]
    raw = tmp_path / "raw"
    _mirror(raw / "tiny_idx", {name: _corrupt(tiny.blobs[name])})
    mirror = _mirror(tmp_path / "m", tiny.blobs)
    (raw / "tiny_idx" / f"{name}.part").write_bytes(b"stale")  # an old interrupted download
    fetch(tiny.dataset, raw, _settings(mirror), NO_ENV)
    assert (raw / "tiny_idx" / name).read_bytes() == tiny.blobs[name]
    assert (raw / "tiny_idx" / f"{name}.rejected").read_bytes() == _corrupt(tiny.blobs[name])
    assert not (raw / "tiny_idx" / f"{name}.part").exists()


# -- URLs ------------------------------------------------------------------------------------


def test_an_http_mirror_with_a_dataset_sub_folder(tmp_path: Path) -> None:
    tiny = tiny_idx()
    with FileServer({f"/data/tiny_idx/{n}": b for n, b in tiny.blobs.items()}) as server:
        settings = _settings()
        env = {"GALU_DATA_MIRRORS": f"{server.base}/data"}
        report = fetch(tiny.dataset, tmp_path / "raw", settings, env)
    assert {f.source for f in report.files} == {
        f"{server.base}/data/tiny_idx/{n}" for n in tiny.blobs
    }
    # Each file: first the mirror's top level (404), then the dataset's own sub-folder.
    assert server.requests[:2] == [
        (f"/data/{IDX_NAMES['train_images']}", None),
        (f"/data/tiny_idx/{IDX_NAMES['train_images']}", None),
    ]


def test_official_urls_are_used_after_the_mirrors(tmp_path: Path) -> None:
    with FileServer({}) as server:
        tiny = tiny_idx(url_base=f"{server.base}/official")
        server.files.update({f"/official/{n}": b for n, b in tiny.blobs.items()})
        settings = DataSettings(mirrors=(str(tmp_path / "empty"),))
        report = fetch(tiny.dataset, tmp_path / "raw", settings, NO_ENV)
    assert {f.source for f in report.files} == {f"{server.base}/official/{n}" for n in tiny.blobs}


def test_a_plain_http_mirror_on_a_remote_host_is_refused() -> None:
    with pytest.raises(InsecureURLError, match="data.mirrors: refusing to download http://"):
        DataSettings.from_config({"mirrors": ["http://mirror.example.org/datasets"]})
    tiny = tiny_idx()
    env = {"GALU_DATA_MIRRORS": "http://mirror.example.org/datasets"}
    with pytest.raises(InsecureURLError, match="mirror list"):
        fetch(tiny.dataset, Path("unused"), _settings(), env)


# -- substitutes -----------------------------------------------------------------------------


@pytest.fixture
def reconstructed(tmp_path: Path):
    """A tiny CIFAR and a re-packed copy of it (same members, other archive bytes)."""
    tiny = tiny_cifar()
    copy = tmp_path / "site" / "cifar-rebuilt.tar.gz"
    copy.parent.mkdir()
    copy.write_bytes(tar_gz(cifar_members(tiny.arrays), mtime=1))
    assert copy.read_bytes() != tiny.blobs[CIFAR_NAME]
    return tiny, copy


def _opt_in(tiny, copy: Path, sha256: str | None = None) -> DataSettings:
    entry = {
        "dataset": tiny.dataset.name,
        "file": CIFAR_NAME,
        "path": str(copy),
        "sha256": sha256 or file_digests(copy).sha256,
    }
    return DataSettings.from_config(
        {"mirrors": [], "download": False, "substitutes": [entry]},
        datasets={tiny.dataset.name: tiny.dataset},
    )


def test_a_substitute_without_opt_in_is_rejected(tmp_path: Path, reconstructed) -> None:
    tiny, copy = reconstructed
    mirror = tmp_path / "m" / "tiny_cifar"
    mirror.mkdir(parents=True)
    (mirror / CIFAR_NAME).write_bytes(copy.read_bytes())
    with pytest.raises(MissingFilesError, match=r"tiny_cifar/cifar-10-binary.tar.gz: rejected"):
        fetch(tiny.dataset, tmp_path / "raw", _settings(tmp_path / "m"), NO_ENV)


def test_a_substitute_with_opt_in_is_accepted_and_marked(tmp_path: Path, reconstructed) -> None:
    tiny, copy = reconstructed
    settings = _opt_in(tiny, copy)
    report = fetch(tiny.dataset, tmp_path / "raw", settings, NO_ENV)
    assert report.substitute is True
    manifest = json.loads(manifest_path(tmp_path / "raw", "tiny_cifar").read_text())
    assert manifest["data_substitute"] is True
    assert manifest["files"][0]["source"] == f"substitute {copy}"
    prepared = prepare(tiny.dataset, tmp_path / "raw", tmp_path / "processed", settings.substitutes)
    sidecar = json.loads(prepared.sidecar.read_text())
    assert sidecar["data_substitute"] is True
    assert sidecar["raw_files"][0]["accepted_by"] == "substitute"
    # Without the opt-in, the same raw file no longer passes.
    with pytest.raises(ChecksumMismatchError, match="failed verification"):
        prepare(tiny.dataset, tmp_path / "raw", tmp_path / "processed")


def test_a_substitute_with_the_wrong_pin_is_rejected(tmp_path: Path, reconstructed) -> None:
    tiny, copy = reconstructed
    with pytest.raises(MissingFilesError) as err:
        fetch(tiny.dataset, tmp_path / "raw", _opt_in(tiny, copy, "ab" * 32), NO_ENV)
    assert f"substitute {copy} (data.substitutes): rejected" in str(err.value)
    assert "sha256 " + "ab" * 32 + " (pinned substitute)" in str(err.value)


def test_a_relative_substitute_path_is_found_inside_a_mirror(tmp_path, reconstructed) -> None:
    # A committed overlay names the copy relative to a mirror (no machine-specific folder);
    # the mirror given by the environment is where it is found.
    tiny, copy = reconstructed
    entry = {
        "dataset": tiny.dataset.name,
        "file": CIFAR_NAME,
        "path": "site/cifar-rebuilt.tar.gz",
        "sha256": file_digests(copy).sha256,
    }
    settings = DataSettings.from_config(
        {"mirrors": [], "download": False, "substitutes": [entry]},
        datasets={tiny.dataset.name: tiny.dataset},
    )
    report = fetch(tiny.dataset, tmp_path / "raw", settings, {"GALU_DATA_MIRRORS": str(tmp_path)})
    assert report.substitute is True
    assert report.files[0].source == f"substitute {copy}"
    with pytest.raises(MissingFilesError, match="file does not exist .looked at site/cifar"):
        fetch(tiny.dataset, tmp_path / "raw2", settings, NO_ENV)


def test_the_official_file_wins_over_an_opted_in_substitute(tmp_path, reconstructed) -> None:
    tiny, copy = reconstructed
    mirror = _mirror(tmp_path / "m", tiny.blobs)
    settings = _opt_in(tiny, copy)
    settings = DataSettings(
        mirrors=(str(mirror),), substitutes=settings.substitutes, download=False
    )
    assert fetch(tiny.dataset, tmp_path / "raw", settings, NO_ENV).substitute is False


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"dataset": "cifar100"}, "dataset 'cifar100' is not one of"),
        ({"file": "x.tar"}, "file 'x.tar' is not one of: cifar-10-binary.tar.gz"),
        ({"sha256": "abc"}, "must be 64 hex digits"),
        ({"colour": "red"}, r"unknown keys \['colour'\]"),
    ],
)
def test_substitute_entries_are_validated(entry: dict, message: str) -> None:
    base = {
        "dataset": "cifar10",
        "file": "cifar-10-binary.tar.gz",
        "path": "/x",
        "sha256": "0" * 64,
    }
    with pytest.raises(ValueError, match=r"data\.substitutes\[0\]"):
        parse_substitutes([{**base, **entry}])
    with pytest.raises(ValueError, match=message):
        parse_substitutes([{**base, **entry}])


# -- the offline message ---------------------------------------------------------------------


def test_the_offline_message_lists_each_file_every_place_and_the_fixes(tmp_path: Path) -> None:
    # Port 1 on loopback refuses connections, as an official host does on an offline node.
    tiny = tiny_idx(url_base="http://127.0.0.1:1/official")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"GALU_DATA_MIRRORS": str(tmp_path / "nowhere")}
    settings = DataSettings(mirrors=(str(empty),))
    with pytest.raises(MissingFilesError) as err:
        fetch(tiny.dataset, tmp_path / "raw", settings, env)
    message = str(err.value)
    assert message.startswith("4 dataset file(s) could not be obtained")
    raw = tmp_path / "raw" / "tiny_idx"
    for spec in tiny.dataset.files:
        header = f"tiny_idx: {spec.name} ({spec.size} bytes, md5 {spec.md5}, sha256 {spec.sha256})"
        assert header in message
        assert f"- {raw / spec.name}: not present" in message
        assert f"- http://127.0.0.1:1/official/{spec.name}: unreachable" in message
    assert (
        message.count(f"- {tmp_path / 'nowhere'} (GALU_DATA_MIRRORS): folder does not exist") == 4
    )
    assert message.count(f"- {empty} (data.mirrors): not found (looked in: ., tiny_idx") == 4
    for fix in (
        "export GALU_DATA_MIRRORS=",
        "data.mirrors",
        f"Copy the files into {raw}",
        "data.substitutes",
    ):
        assert fix in message
    assert not raw.exists() or not any(raw.iterdir())


def test_several_datasets_fail_with_one_message(tmp_path: Path) -> None:
    tiny, other = tiny_idx(), tiny_cifar()
    with pytest.raises(MissingFilesError) as err:
        fetch_many([tiny.dataset, other.dataset], tmp_path / "raw", _settings(), NO_ENV)
    assert len(err.value.missing) == 5
    assert str(err.value).startswith("5 dataset file(s)")
    assert "tiny_cifar: cifar-10-binary.tar.gz" in str(err.value)
    assert "official URLs: not tried (data.download is false)" in str(err.value)


def test_settings_from_config_reads_every_key_and_rejects_unknown_ones() -> None:
    settings = DataSettings.from_config(
        {
            "mirrors": ["/a"],
            "download": False,
            "link": False,
            "timeout_s": 5,
            "retries": 1,
            "backoff_s": 0.25,
        }
    )
    assert settings.mirrors == ("/a",) and not settings.download and not settings.link
    assert (settings.policy.timeout, settings.policy.retries, settings.policy.backoff) == (
        5,
        1,
        0.25,
    )
    assert DataSettings.from_config(None).mirrors == ("/usr/share/datasets",)
    with pytest.raises(ValueError, match=r"unknown key\(s\) under data: \['mirror'\]"):
        DataSettings.from_config({"mirror": ["/a"]})
