"""The one module that touches grafanalib (pinned 0.7.1, unmaintained since 2024).

Dashboards are described with the functions below, which take and return plain values (strings, dicts, the
`Layout`); only this file imports grafanalib. To swap grafanalib for plain dicts or grafana-foundation-sdk,
re-implement these functions with the same signatures and regenerate: `generate.py --check` then shows every
byte that changed.

grafanalib emits Grafana-8-era JSON; the gaps that matter for Grafana 11/12 (instant queries need `range: false`,
`noValue` on time series, bar chart `xField`, dashboard `schemaVersion`) are filled here via `extraJson` or a
small subclass, never in the dashboard definitions; `_schema_shape` then drops the legacy keys and nulls that
Grafana 12's schema does not define (tests/test_dashboards_schema.py type-checks the JSON against @grafana/schema).
"""

from __future__ import annotations

import json
from typing import Any

import attr
import grafanalib.core as G
from grafanalib._gen import DashboardEncoder

JSON = dict[str, Any]

DATASOURCE_UID = "specstack-prometheus"
DATASOURCE: JSON = {"type": "prometheus", "uid": DATASOURCE_UID}
# Declared schema version: the JSON below is the shape Grafana 10-12 writes themselves (panels with gridPos,
# fieldConfig, datasource refs), so no migration is needed on load.
SCHEMA_VERSION = 39
GRID_WIDTH = 24

# "No drafts" instead of an empty panel or a NaN: every spec ratio drops series whose denominator is 0.
NO_DRAFTS = "No drafts"


def _special_mapping(text: str) -> list[JSON]:
    """Value mappings that show `text` for NaN and null (the guarded queries should produce neither)."""
    return [
        {"type": "special", "options": {"match": "nan", "result": {"index": 0, "text": text}}},
        {"type": "special", "options": {"match": "null", "result": {"index": 1, "text": text}}},
    ]


def _value_mapping(value: str, text: str, index: int = 2) -> JSON:
    return {"type": "value", "options": {value: {"index": index, "text": text}}}


@attr.s
class _Target(G.Target):
    """grafanalib's Target plus the fields Grafana >= 10 reads for instant and table queries."""

    range = attr.ib(default=True, validator=attr.validators.instance_of(bool))

    def to_json_data(self):
        data = super().to_json_data()
        data["range"] = self.range
        data["editorMode"] = "code"
        data.pop("target", None)  # Graphite field
        data.pop("metric", None)
        data.pop("step", None)  # legacy; the step comes from the panel and $__interval
        return data


def target(expr: str, legend: str = "", *, instant: bool = False, table: bool = False) -> _Target:
    """One PromQL query of the panel's datasource. Range query unless `instant`."""
    # grafanalib is untyped: mypy's attrs plugin sees only the field _Target adds, not Target's own
    return _Target(  # type: ignore[call-arg]
        expr=expr,
        legendFormat=legend or "__auto",
        instant=instant,
        range=not instant,
        format=G.TABLE_TARGET_FORMAT if table else G.TIME_SERIES_TARGET_FORMAT,
        intervalFactor=1,
        datasource=DATASOURCE,
    )


def _refids(targets: list[_Target]) -> list[_Target]:
    return [attr.evolve(t, refId=chr(ord("A") + i)) for i, t in enumerate(targets)]  # type: ignore[call-arg]


def color_override(name: str, color: str) -> JSON:
    return {
        "matcher": {"id": "byName", "options": name},
        "properties": [{"id": "color", "value": {"fixedColor": color, "mode": "fixed"}}],
    }


def _unit_override(name: str, unit: str) -> JSON:
    return {"matcher": {"id": "byName", "options": name}, "properties": [{"id": "unit", "value": unit}]}


def timeseries(
    title: str,
    description: str,
    targets: list[_Target],
    *,
    unit: str = "short",
    min_value: int | None = 0,
    max_value: int | None = None,
    decimals: int | None = None,
    colors: dict[str, str] | None = None,
    no_value: str | None = None,
) -> G.TimeSeries:
    """A time series panel; legend as a table with mean/max/last so overlaid methods can be read off."""
    defaults: JSON = {}
    if no_value is not None:
        defaults["noValue"] = no_value
    extra: JSON = {"options": {"legend": {"showLegend": True}}}
    if defaults:
        extra["fieldConfig"] = {"defaults": defaults}
    return G.TimeSeries(
        title=title,
        description=description,
        dataSource=DATASOURCE,
        targets=_refids(targets),
        unit=unit,
        valueMin=min_value,
        valueMax=max_value,
        valueDecimals=decimals,
        fillOpacity=10,
        showPoints="never",
        spanNulls=False,
        legendDisplayMode="table",
        legendCalcs=["mean", "max", "lastNotNull"],
        tooltipMode="multi",
        tooltipSort="desc",
        mappings=_special_mapping(no_value) if no_value else [],
        overrides=[color_override(k, v) for k, v in (colors or {}).items()],
        stacking={"mode": "none", "group": "A"},
        thresholds=[{"color": "green", "value": None}],
        maxDataPoints=None,
        extraJson=extra,
    )


def stat(
    title: str,
    description: str,
    query: _Target,
    *,
    unit: str,
    decimals: int | None = None,
    no_value: str = "No data",
    zero_text: str | None = None,
) -> G.Stat:
    """A stat tile with the query's last value (instant queries: the value over the selected range)."""
    mappings = _special_mapping(no_value)
    if zero_text:
        mappings.append(_value_mapping("0", zero_text))
    return G.Stat(
        title=title,
        description=description,
        dataSource=DATASOURCE,
        targets=_refids([query]),
        format=unit,
        decimals=decimals,
        noValue=no_value,
        mappings=mappings,
        graphMode="none",
        colorMode="none",
        color={"mode": "thresholds"},
        reduceCalc="lastNotNull",
        textMode="value",
        thresholds=[{"color": "blue", "value": None}],
        maxDataPoints=None,
    )


def barchart(
    title: str,
    description: str,
    targets: list[_Target],
    *,
    unit: str,
    x_field: str,
    hide_fields: tuple[str, ...] = ("Time",),
    matrix: tuple[str, str] | None = None,
    sort_by: str | None = None,
    max_value: int | None = None,
    decimals: int | None = None,
    colors: dict[str, str] | None = None,
    no_value: str | None = None,
) -> G.BarChart:
    """A bar chart of instant table queries, one bar per value of `x_field`.

    `matrix=(row_label, column_label)` pivots rows into one bar group per row label and one bar per column
    label (Grafana's groupingToMatrix), e.g. positions x methods.
    """
    transformations: list[JSON] = []
    if matrix:
        row, col = matrix
        transformations.append(
            {"id": "groupingToMatrix", "options": {"rowField": row, "columnField": col, "valueField": "Value"}}
        )
    else:
        transformations.append({"id": "organize", "options": {"excludeByName": {f: True for f in hide_fields}}})
    if sort_by:
        transformations.append({"id": "sortBy", "options": {"sort": [{"field": sort_by, "desc": False}]}})
    defaults: JSON = {"unit": unit, "min": 0}
    if max_value is not None:
        defaults["max"] = max_value
    if decimals is not None:
        defaults["decimals"] = decimals
    if no_value is not None:
        defaults["noValue"] = no_value
    return G.BarChart(
        title=title,
        description=description,
        dataSource=DATASOURCE,
        targets=_refids(targets),
        transformations=transformations,
        showValue="always",
        tooltipMode="multi",
        legendDisplayMode="list",
        showLegend=bool(matrix),
        mappings=_special_mapping(no_value) if no_value else [],
        thresholdSteps=[{"color": "blue", "value": None}],
        colorMode="palette-classic" if matrix else "fixed",
        fixedColor="blue",
        overrides=[color_override(k, v) for k, v in (colors or {}).items()],
        maxDataPoints=None,
        extraJson={"options": {"xField": x_field}, "fieldConfig": {"defaults": defaults}},
    )


def table(
    title: str,
    description: str,
    targets: list[_Target],
    *,
    label_columns: dict[str, str],
    value_columns: dict[str, tuple[str, str]],
) -> G.Table:
    """A table that joins instant table queries on their label columns.

    `label_columns` maps a label to its header; `value_columns` maps each query's refId to (header, unit).
    """
    values = {f"Value #{ref}": name for ref, (name, _) in value_columns.items()}
    order = list(label_columns) + list(values)
    transformations = [
        {"id": "merge", "options": {}},
        {
            "id": "organize",
            "options": {
                "excludeByName": {"Time": True},
                "indexByName": {name: i for i, name in enumerate(order)},
                "renameByName": {**label_columns, **values},
            },
        },
        {"id": "sortBy", "options": {"sort": [{"field": next(iter(values.values())), "desc": False}]}},
    ]
    return G.Table(
        title=title,
        description=description,
        dataSource=DATASOURCE,
        targets=_refids(targets),
        transformations=transformations,
        overrides=[_unit_override(name, unit) for name, unit in value_columns.values()],
        maxDataPoints=None,
        extraJson={"options": {"cellHeight": "sm", "footer": {"show": False}}},
    )


class Layout:
    """Places panels left to right on the 24-column grid, wrapping to a new line when full."""

    def __init__(self) -> None:
        self.panels: list[G.Panel] = []
        self._x = self._y = self._line_height = 0

    def _newline(self) -> None:
        self._y += self._line_height
        self._x = self._line_height = 0

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append(G.RowPanel(title=title, gridPos=G.GridPos(h=1, w=GRID_WIDTH, x=0, y=self._y)))
        self._y += 1

    def add(self, panel: G.Panel, w: int, h: int) -> None:
        if self._x + w > GRID_WIDTH:
            self._newline()
        self.panels.append(attr.evolve(panel, gridPos=G.GridPos(h=h, w=w, x=self._x, y=self._y)))
        self._x += w
        self._line_height = max(self._line_height, h)


def query_variable(
    name: str, label: str, query: str, *, multi: bool = False, include_all: bool = False, newest_first: bool = False
) -> G.Template:
    """A variable filled from Prometheus, e.g. `label_values(metric, label)`; refreshed on time range change."""
    return G.Template(
        name=name,
        label=label,
        query=query,
        dataSource=DATASOURCE,
        multi=multi,
        includeAll=include_all,
        allValue=".*" if include_all else None,
        default="All" if include_all else None,
        refresh=G.REFRESH_ON_TIME_RANGE_CHANGE,
        sort=G.SORT_ALPHA_DESC if newest_first else G.SORT_ALPHA_ASC,
    )


def annotation(
    name: str, expr: str, *, color: str, step: str, title: str, text: str, tag_keys: tuple[str, ...]
) -> JSON:
    """A Prometheus annotation: Grafana turns each series' non-zero points into regions (gaps <= step merge)."""
    return {
        "name": name,
        "datasource": DATASOURCE,
        "enable": True,
        "hide": False,
        "iconColor": color,
        "target": {"expr": expr, "interval": step, "refId": "Anno"},
        "titleFormat": title,
        "textFormat": text,
        "tagKeys": ",".join(tag_keys),
        "useValueForTime": False,
    }


def dashboard_links(tag: str) -> list[JSON]:
    """Links to every dashboard carrying `tag`, keeping the time range and variables."""
    return [
        {
            "type": "dashboards",
            "tags": [tag],
            "asDropdown": False,
            "includeVars": True,
            "keepTime": True,
            "targetBlank": False,
            "title": tag,
            "icon": "external link",
        }
    ]


def dashboard(
    *,
    uid: str,
    title: str,
    description: str,
    tags: list[str],
    layout: Layout,
    variables: list[G.Template],
    annotations: list[JSON],
    time_from: str = "now-3h",
    links: list[JSON] | None = None,
) -> JSON:
    """The finished dashboard as plain JSON data (what Grafana's file provisioner reads)."""
    dash = G.Dashboard(
        uid=uid,
        title=title,
        description=description,
        tags=tags,
        panels=layout.panels,
        templating=G.Templating(list=variables),
        annotations=G.Annotations(list=annotations),
        links=links or [],
        time=G.Time(time_from, "now"),
        timezone="browser",
        refresh="10s",
        graphTooltip=G.GRAPH_TOOLTIP_MODE_SHARED_CROSSHAIR,
        schemaVersion=SCHEMA_VERSION,
        editable=True,
    ).auto_panel_ids()
    data = json.loads(json.dumps(dash.to_json_data(), cls=DashboardEncoder))
    for key in ("rows", "style", "hideControls", "sharedCrosshair"):  # pre-Grafana-5 fields
        data.pop(key, None)
    for var in data["templating"]["list"]:
        var["definition"] = var["query"]  # what Grafana's variable editor shows
        # "All" selected for multi variables; otherwise empty, so Grafana selects the first value on load.
        var["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]} if var["includeAll"] else {}
    return _schema_shape(data)


# grafanalib fields that Grafana 12's dashboard schema (@grafana/schema 12.0.2) does not define.
_LEGACY_PANEL_KEYS = ("editable", "error", "height", "minSpan", "span")
_LEGACY_TABLE_KEYS = ("color", "columns", "fontSize")
_ROW_KEYS = ("collapsed", "datasource", "gridPos", "id", "panels", "repeat", "title", "type")
_LEGACY_VARIABLE_KEYS = ("auto", "auto_count", "auto_min", "tagsQuery", "tagValuesQuery", "useTags")


def _drop_nulls(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """The schema has optional keys, not nullable ones: leave unset keys out (threshold steps keep
    their `value: null`, which means "from -infinity")."""
    if isinstance(value, dict):
        return {
            k: _drop_nulls(v, frozenset({"value"}) if k == "steps" else frozenset())
            for k, v in value.items()
            if v is not None or k in keep
        }
    if isinstance(value, list):
        return [_drop_nulls(v, keep) for v in value]
    return value


def _schema_shape(data: JSON) -> JSON:
    """Reduce grafanalib's Grafana-8-era JSON to the keys Grafana 12's schema defines; Grafana ignores the
    rest, and tests/test_dashboards_schema.py type-checks the result against @grafana/schema."""
    data.pop("__inputs", None)
    data.get("timepicker", {}).pop("time_options", None)
    for panel in data["panels"]:
        if panel["type"] == "row":
            for key in [k for k in panel if k not in _ROW_KEYS]:
                del panel[key]
            continue
        for key in _LEGACY_PANEL_KEYS + (_LEGACY_TABLE_KEYS if panel["type"] == "table" else ()):
            panel.pop(key, None)
        if panel["type"] == "table" and "mappings" in panel:  # mappings live in the field config now
            mappings = panel.pop("mappings")
            if mappings:
                panel["fieldConfig"]["defaults"]["mappings"] = mappings
    for var in data["templating"]["list"]:
        for key in _LEGACY_VARIABLE_KEYS:
            var.pop(key, None)
    nulls_kept = {"id": data.get("id")}  # `id: null` asks Grafana to assign one
    return {**_drop_nulls(data), **nulls_kept}


def to_text(data: JSON) -> str:
    """The committed file content for a dashboard: stable key order, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
