"""Built-in workloads are deterministic; user JSONL is validated with file:line messages."""

import json

import pytest

from specstack.config.workloads import WorkloadError, load_task, read_jsonl, sha256, write_defaults

pytestmark = pytest.mark.unit


def test_defaults_are_deterministic_and_shaped(tmp_path):
    a = write_defaults(tmp_path / "a")
    b = write_defaults(tmp_path / "b")
    for task in ("code", "chat"):
        assert sha256(a[task].perf_path) == sha256(b[task].perf_path)
        assert len(a[task].acceptance) == 64
        perf = read_jsonl(a[task].perf_path)
        assert [r["prompt"] for r in perf] == [r["prompt"] for r in a[task].acceptance]  # same requests
        assert {r["output_tokens"] for r in perf} == {128}
    code = a["code"].acceptance[13]["prompt"]
    assert "scale_1 to 113" in code and code.count("def scale_") == 12
    assert "two full paragraphs" in a["chat"].acceptance[0]["prompt"]
    assert len({r["prompt"] for r in a["chat"].acceptance}) == 64


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "has no prompts"),
        (b'{"prompt": "a"}\nnot json\n', ":2: not valid JSON"),
        (b'{"prompt": "a"}\n{"text": "b"}\n', ':2: missing a non-empty string field "prompt"'),
        (b'{"prompt": ""}\n', ':1: missing a non-empty string field "prompt"'),
        (b'["prompt"]\n', ":1: expected a JSON object"),
        (b'{"prompt": "a"}\n{"prompt": "\xff\xfe"}\n', ":2: not UTF-8"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "w.jsonl"
    path.write_bytes(content)
    with pytest.raises(WorkloadError, match=message) as e:
        read_jsonl(path)
    assert str(path) in str(e.value)


def test_missing_file_and_wrong_suffix(tmp_path):
    with pytest.raises(WorkloadError, match="not found"):
        read_jsonl(tmp_path / "nope.jsonl")
    perf = tmp_path / "perf.json"
    perf.write_text('{"prompt": "a"}\n')
    with pytest.raises(WorkloadError, match="must end in .jsonl"):
        load_task("x", perf, perf)


def test_user_files_and_max_tokens(tmp_path):
    perf, acc = tmp_path / "p.jsonl", tmp_path / "a.jsonl"
    perf.write_text(json.dumps({"prompt": "hi"}) + "\n")
    acc.write_text(json.dumps({"prompt": "hi", "max_tokens": 5}) + "\n" + json.dumps({"prompt": "yo"}) + "\n")
    task = load_task("mine", perf, acc, default_max_tokens=7)
    assert [r["max_tokens"] for r in task.acceptance] == [5, 7]
    acc.write_text(json.dumps({"prompt": "hi", "max_tokens": 0}) + "\n")
    with pytest.raises(WorkloadError, match=":1: max_tokens must be a positive integer"):
        load_task("mine", perf, acc)
