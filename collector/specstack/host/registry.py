"""The digest an image tag points to now, asked of its registry (the distribution API, with the anonymous
bearer token Docker Hub and others hand out), or of `docker buildx imagetools` when the registry says no."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request

from specstack.host import HostError
from specstack.host.image_ref import parse_reference

_ACCEPT = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)


def _registry_host(registry: str) -> tuple[str, str]:
    if registry == "docker.io":
        return "https", "registry-1.docker.io"
    insecure = registry.startswith(("localhost", "127.0.0.1", "[::1]"))
    return ("http" if insecure else "https"), registry


def _bearer_token(challenge: str, timeout: float) -> str | None:
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = params.pop("realm", None)
    if not realm:
        return None
    url = realm + "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = json.loads(r.read())
    return body.get("token") or body.get("access_token")


def resolve_digest(ref: str, timeout: float = 30) -> str:
    """The digest the tag of `ref` points to now (the multi-arch index when there is one)."""
    parts = parse_reference(ref)
    if not parts["tag"]:
        raise HostError(f"{ref}: needs a tag to resolve")
    scheme, host = _registry_host(parts["registry"])
    url = f"{scheme}://{host}/v2/{parts['repository']}/manifests/{parts['tag']}"
    headers = {"Accept": _ACCEPT}
    for _ in range(2):
        req = urllib.request.Request(url, method="HEAD", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                digest = r.headers.get("Docker-Content-Digest")
                if digest:
                    return digest
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as r:
                return "sha256:" + hashlib.sha256(r.read()).hexdigest()
        except urllib.error.HTTPError as e:
            challenge = e.headers.get("WWW-Authenticate", "")
            if e.code == 401 and challenge.lower().startswith("bearer") and "Authorization" not in headers:
                token = _bearer_token(challenge, timeout)
                if token:
                    headers["Authorization"] = f"Bearer {token}"
                    continue
            raise HostError(f"{ref}: registry answered HTTP {e.code} for {url}") from None
        except urllib.error.URLError as e:
            raise HostError(f"{ref}: cannot reach {host} ({e.reason})") from None
    raise HostError(f"{ref}: registry {host} refused the anonymous token; `docker login {parts['registry']}`?")


def resolve_with_buildx(ref: str) -> str:
    out = subprocess.run(
        ["docker", "buildx", "imagetools", "inspect", ref, "--format", "{{json .Manifest}}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode != 0:
        raise HostError(f"{ref}: docker buildx imagetools inspect failed: {out.stderr.strip()}")
    return json.loads(out.stdout)["digest"]
