"""A method's label is what every report table shows in its place, so it must name the method itself."""

import pytest

from specstack.config import methods
from specstack.results.reader import display_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", methods.names())
def test_every_label_starts_with_its_methods_name_so_tables_show_it(name):
    label = methods.build(name).label
    assert label == name or label.startswith(f"{name} ("), (
        f"services/methods.toml: label of {name!r} must read '{name} (what it is)', not {label!r}"
    )
    assert display_name(name, {"label": label}) == label
