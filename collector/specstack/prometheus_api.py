"""The little of Prometheus's HTTP API the collector needs: knowing its scrape target is live."""
from __future__ import annotations

import calendar
import time

import requests


def target_scraped_since(prom_url: str, labels: dict, since: float) -> bool:
    """True when Prometheus has an active target with these labels whose last scrape succeeded after `since`."""
    r = requests.get(f"{prom_url.rstrip('/')}/api/v1/targets", params={"state": "active"}, timeout=5)
    r.raise_for_status()
    for target in r.json()["data"]["activeTargets"]:
        if all(target["labels"].get(k) == v for k, v in labels.items()) and target.get("health") == "up":
            last = target.get("lastScrape", "")
            # RFC 3339 with nanoseconds; seconds precision is enough to compare with `since`
            stamp = calendar.timegm(time.strptime(last[:19], "%Y-%m-%dT%H:%M:%S"))
            if stamp >= int(since):
                return True
    return False


POLL_SECONDS = 0.2


def wait_for_target(prom_url: str, labels: dict, since: float, timeout: float) -> str | None:
    """Poll until Prometheus scrapes the new server. Returns None when scraped, else why not (the run goes on
    without it). A steady short poll: the run is waiting on this, nothing is measured meanwhile, and a
    back-off made the wait end up to 1.5 s after the scrape (the targets API is a cheap read)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if target_scraped_since(prom_url, labels, since):
                return None
            reason = "target not scraped yet"
        except (requests.RequestException, KeyError, ValueError) as e:
            reason = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            return f"Prometheus at {prom_url} did not scrape the server within {timeout:.0f} s ({reason})"
        time.sleep(POLL_SECONDS)
