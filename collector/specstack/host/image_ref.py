"""Image references (Docker's rules): their parts, and whether one is pinned (an exact version tag or a digest)."""

from __future__ import annotations

import re

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
FLOATING_TAGS = {"latest", "stable", "main", "master", "nightly", "edge", "dev", "rolling", "release", "lts"}


def parse_reference(ref: str) -> dict:
    """Split an image reference into registry, repository, tag and digest (Docker's rules)."""
    rest, _, digest = ref.partition("@")
    name, tag = rest, None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = rest.rsplit(":", 1)
    first = name.split("/", 1)[0]
    if "/" in name and ("." in first or ":" in first or first == "localhost"):
        registry, repo = name.split("/", 1)
    else:
        registry, repo = "docker.io", name
    if registry == "docker.io" and "/" not in repo:
        repo = f"library/{repo}"
    return {"registry": registry, "repository": repo, "tag": tag, "digest": digest or None, "name": name}


def pin_problem(ref: str) -> str | None:
    """Why an image reference is not pinned, or None. Exact version tags and digests are pinned."""
    parts = parse_reference(ref)
    if parts["digest"] is not None and not DIGEST_RE.match(parts["digest"]):
        return f"{ref}: malformed digest (expected sha256:<64 hex>)"
    tag = parts["tag"]
    if tag is None:
        return None if parts["digest"] else f"{ref}: no tag and no digest means `latest`"
    if tag.lower() in FLOATING_TAGS:
        return f"{ref}: tag {tag!r} floats (it moves to new builds)"
    if parts["digest"]:
        return None
    if not re.match(r"^v?\d+\.\d+\.\d+([.\-+][0-9A-Za-z.\-+]*)?$", tag):
        return f"{ref}: tag {tag!r} is not an exact version (x.y.z); pin one or run `make lock`"
    return None
