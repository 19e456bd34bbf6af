"""Which figures come from trained weights and which from random ones: every model set of methods.toml says what its
weights are, a run's manifest records it, and the console table and the report print it above the figures."""

from __future__ import annotations

import pytest

from specstack.config import methods
from specstack.report.format import weights_line

pytestmark = pytest.mark.unit


def test_every_model_set_says_what_its_weights_are():
    cfg = methods.load()
    assert set(cfg["model_weights"]) == set(cfg["model_sets"])
    assert {methods.weights_of(s) for s in cfg["model_sets"]} <= {"trained", "random"}
    assert (methods.weights_of("smollm2"), methods.weights_of("tiny")) == ("trained", "random")


def test_the_line_names_the_set_and_what_its_figures_mean():
    assert (
        weights_line({"model_set": "smollm2", "model_weights": "trained"})
        == "model set smollm2: trained weights: acceptance and speed are a real model's"
    )
    assert (
        weights_line({"model_set": "tiny", "model_weights": "random"})
        == "model set tiny: random weights: the accounting only, acceptance and speed mean nothing"
    )
    assert weights_line({"model_set": "tiny"}) is None  # a bundle from before the field: nothing claimed
