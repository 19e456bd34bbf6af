"""`specstack report` through the command line: --tokenizer for a bundle moved from another machine, whose
recorded target (the tokenizer) is not here."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from specstack.cli.main import main
from tests.bundles import manifest, tokenizer_folder, write_method

pytestmark = pytest.mark.unit

CELLS = {("code", 1): [(10.0, 100.0, {})]}


@pytest.fixture
def moved(tmp_path) -> Path:
    """A baseline and ngram whose summaries name /nonexistent/tokenizer (tests/bundles.py), as a bundle unpacked
    on another machine does; ngram's first answer differs at word 2 (character 4)."""
    run = tmp_path / "moved"
    write_method(run, "baseline", baseline=None, k=None, cells=CELLS, texts={"code": {"r0": ("a b c d", "stop")}})
    write_method(run, "ngram", baseline="baseline", cells=CELLS, texts={"code": {"r0": ("a b X d", "stop")}})
    manifest(run, {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "ngram")})
    return run


def _equality(run: Path, capsys, *extra: str) -> tuple[dict, str]:
    assert main(["report", str(run), *extra]) == 0
    capsys.readouterr()
    summary = pd.read_csv(run / "report" / "tables" / "equality_summary.csv").to_dict("records")
    assert len(summary) == 1
    return summary[0], (run / "report.md").read_text()


def test_tokenizer_option_counts_tokens_with_the_given_tokenizer(moved, tmp_path, capsys):
    folder = str(tokenizer_folder(tmp_path / "tok", ["a", "b", "c", "d", "X"]))
    s, md = _equality(moved, capsys, "--tokenizer", folder)
    assert (s["unit"], s["tokenizer"], s["first_divergence_min"]) == ("token", folder, 2)
    assert f"Tokenizer: {folder}" in md
    requests = pd.read_csv(moved / "report" / "tables" / "equality_requests.csv")
    assert list(requests["unit"]) == ["token"] and list(requests["first_token_divergence"]) == [2]


def test_without_it_the_missing_target_falls_back_to_characters_and_says_why(moved, capsys):
    s, md = _equality(moved, capsys)
    assert (s["unit"], s["first_divergence_min"]) == ("character", 4)
    assert "no folder /nonexistent/tokenizer on this machine" in s["tokenizer"]
    assert "Tokenizer: not loaded (no folder /nonexistent/tokenizer on this machine); character index" in md


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_tokenizer_folder_that_is_not_here_is_refused_naming_the_fix(command, moved, capsys):
    argv = [command, str(moved)] + ([str(moved)] if command == "compare" else []) + ["--tokenizer", "/no/such/tok"]
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert (
        e.value.code == 2
        and "argument --tokenizer: no folder /no/such/tok on this machine; pass a tokenizer "
        "folder that exists here (one holding tokenizer.json) or a hub id"
        in err
    )
    assert not (moved / "report").exists()
