"""services/methods.toml's [sweep]: the one default list of a sweep (config/sweep.py, config/methods.py), read with
tomllib and, for the host's python3, without it; a name that is no method is refused naming the fix."""

from __future__ import annotations

import ast
import tomllib

import pytest

from specstack.config import methods, sweep

from ..support import REPO

pytestmark = pytest.mark.unit

TOML = REPO / "services" / "methods.toml"


def test_the_table_is_read_in_its_order():
    table = tomllib.loads(TOML.read_text())["sweep"]
    assert methods.default_sweep_methods() == table["methods"]
    assert methods.default_mtp_sweep_methods() == table["mtp_methods"]
    # the default before [sweep] held it (issue 40): unchanged
    assert table == {
        "methods": ["baseline", "ngram", "draft_model", "eagle3", "suffix"],
        "mtp_methods": ["mtp-baseline", "mtp"],
    }


def test_the_reader_without_tomllib_agrees_with_tomllib():
    text = TOML.read_text()
    assert sweep.minimal_table(text) == tomllib.loads(text)["sweep"]
    odd = (
        "[methods.a]\nx = 1\n\n[sweep]   # the default\nmethods = [\n  \"a\",   # first\n  'b',\n]\n"
        'mtp_methods = []\n[platforms.x]\nmethods = ["not", "this"]\n'
    )
    assert sweep.minimal_table(odd) == tomllib.loads(odd)["sweep"] == {"methods": ["a", "b"], "mtp_methods": []}
    assert sweep.minimal_table("[methods.a]\n") is None
    assert sweep.minimal_table('[sweep]\nmethods = "a"\n') == {"methods": '"a"'}  # refused by check()


def test_the_module_is_python_3_8():
    """The host helper imports it, run by make with the host's python3 (3.8 or newer)."""
    ast.parse((REPO / "collector" / "specstack" / "config" / "sweep.py").read_text(), feature_version=(3, 8))


NAMES = ["baseline", "ngram", "mtp-baseline", "mtp"]


@pytest.mark.parametrize(
    "table, message",
    [
        (
            {"methods": ["baseline", "medusa"]},
            "services/methods.toml [sweep] methods names 'medusa', which is no method "
            "of services/methods.toml (no [methods.medusa] table): fix the name or remove it from [sweep]; the methods: "
            "baseline, ngram, mtp-baseline, mtp",
        ),
        (
            {"methods": ["baseline", "NGRAM"]},
            "names 'NGRAM', which is no method of services/methods.toml (no "
            "[methods.NGRAM] table); method names are case-sensitive: use 'ngram': fix the name",
        ),
        ({"methods": ["baseline"], "mtp_methods": ["mtp_baseline"]}, "[sweep] mtp_methods names 'mtp_baseline'"),
        (
            None,
            "services/methods.toml has no [sweep] table, the default methods of a sweep: add one, e.g. [sweep] with "
            "methods = ",
        ),
        ({"methods": []}, "[sweep] methods is empty: a sweep needs at least one method"),
        (
            {"mtp_methods": ["mtp"]},
            '[sweep] methods must be a list of method names, like methods = ["baseline", "ngram"], got None',
        ),
        ({"methods": "baseline ngram"}, "[sweep] methods must be a list of method names"),
        ({"methods": ["baseline"], "method": ["ngram"]}, "[sweep] has 'method'; it holds only methods and mtp_methods"),
        ({"methods": ["baseline", "mtp"], "mtp_methods": ["mtp"]}, "[sweep] names 'mtp' twice"),
        ([1], "sweep must be a table"),
    ],
)
def test_a_bad_table_is_refused_naming_the_fix(table, message):
    with pytest.raises(sweep.SweepError) as e:
        sweep.check(table, NAMES)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_mtp_methods_may_be_empty_or_left_out():
    assert sweep.check({"methods": ["ngram"]}, NAMES) == {"methods": ["ngram"], "mtp_methods": []}
    assert sweep.check({"methods": ["ngram"], "mtp_methods": []}, NAMES)["mtp_methods"] == []


def test_the_package_refuses_it_as_a_method_error(monkeypatch):
    """A MethodError: the command line prints it as one line and exits 2 (specstack: error: ...)."""
    cfg = methods.load()
    monkeypatch.setattr(methods, "load", lambda: {**cfg, "sweep": {"methods": ["baseline", "medusa"]}})
    with pytest.raises(methods.MethodError, match=r"methods.toml \[sweep\] methods names 'medusa'"):
        methods.default_sweep_methods()
