"""images.lock (and images.cpu.lock): NAME_IMAGE=reference lines, read, and rewritten with every tag resolved
to its digest (`make lock`)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from specstack.host import HostError
from specstack.host.image_ref import DIGEST_RE, parse_reference
from specstack.host.registry import resolve_digest, resolve_with_buildx
from specstack.results.files import atomic_write_text


def read_lock(path: Path) -> dict[str, str]:
    images = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        key, sep, value = s.partition("=")
        if not sep or not re.match(r"^[A-Z][A-Z0-9_]*_IMAGE$", key) or not value or " " in value:
            raise HostError(f"{path}:{n}: expected NAME_IMAGE=reference, got {line!r}")
        images[key] = value
    return images


def lock(path: Path, resolver=resolve_digest, log=print, keys: list[str] | None = None) -> dict[str, str]:
    """Rewrite every NAME_IMAGE=repo:tag line (or only those of `keys`) as repo:tag@sha256:..., keeping
    comments and order."""
    path = Path(path)
    images = read_lock(path)
    unknown = sorted(set(keys or []) - set(images))
    if unknown:
        raise HostError(f"{path} has no line for {', '.join(unknown)}; it has {', '.join(images)}")
    resolved = {}
    for key, ref in images.items():
        if keys and key not in keys:
            log(f"{key}={ref} (left as it is)")
            continue
        parts = parse_reference(ref)
        tagged = f"{parts['name']}:{parts['tag']}" if parts["tag"] else parts["name"]
        try:
            digest = resolver(tagged)
        except HostError as first:
            try:
                digest = resolve_with_buildx(tagged)
            except (HostError, OSError, subprocess.TimeoutExpired, KeyError, json.JSONDecodeError):
                raise first from None
        if not DIGEST_RE.match(digest):
            raise HostError(f"{tagged}: registry returned a malformed digest {digest!r}")
        resolved[key] = f"{tagged}@{digest}"
        log(f"{key}={resolved[key]}")
    lines = []
    for line in path.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        lines.append(f"{key}={resolved[key]}" if key in resolved and not line.lstrip().startswith("#") else line)
    atomic_write_text(path, "\n".join(lines) + "\n")
    return resolved
