"""GPU facts from nvidia-smi: what the GPU is (provenance), whether the driver and GPU can run the vLLM image
(checked before anything is pulled), and waiting until a stopped server's GPU memory is released."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

from specstack.host import HostError
from specstack.host.image_ref import parse_reference

# --- what the GPU is (provenance) ---------------------------------------------------------------------


def parse_nvidia_smi(query_csv: str, header: str) -> dict:
    """`nvidia-smi --query-gpu=... --format=csv,noheader,nounits` rows and the plain output's header."""
    fields = ("index", "uuid", "name", "driver_version", "memory_total_mib", "memory_used_mib", "pci_bus_id")
    gpus = []
    for line in query_csv.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(fields):
            continue
        gpu: dict[str, str | int | None] = dict(zip(fields, parts))
        for key in ("memory_total_mib", "memory_used_mib"):
            mib = parts[fields.index(key)]
            gpu[key] = int(mib) if mib.isdigit() else None
        gpus.append(gpu)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", header)
    driver = re.search(r"Driver Version:\s*([\d.]+)", header)
    return {
        "gpus": gpus,
        "driver_version": driver.group(1) if driver else (gpus[0]["driver_version"] if gpus else None),
        "cuda_version_driver": cuda.group(1) if cuda else None,
    }


_GPU_QUERY = "index,uuid,name,driver_version,memory.total,memory.used,pci.bus_id"


def nvidia_smi_host(timeout: float = 30) -> dict | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        query = subprocess.run(
            [exe, f"--query-gpu={_GPU_QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        plain = subprocess.run([exe], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"nvidia-smi did not answer in {timeout:.0f} s"}
    if query.returncode != 0:
        return {"error": f"nvidia-smi failed: {query.stderr.strip()}"}
    return {"source": "host", **parse_nvidia_smi(query.stdout, plain.stdout)}


def nvidia_smi_container(client, container: str) -> dict | None:
    rc, query = client.exec(container, ["nvidia-smi", f"--query-gpu={_GPU_QUERY}", "--format=csv,noheader,nounits"])
    if rc != 0:
        return None
    _, plain = client.exec(container, ["nvidia-smi"])
    return {"source": f"container {container}", **parse_nvidia_smi(query, plain)}


# --- host pre-check, before anything is pulled ---------------------------------------------------------

# vllm/vllm-openai's plain tags are built on CUDA 13 since v0.20.0 (the `-cu129` tags on CUDA 12.9). CUDA 13
# needs driver R580+; CUDA 12 images run on R525+ through CUDA's minor-version compatibility.
MIN_DRIVER = {13: 580, 12: 525}
# vLLM 0.32.0's CUDA arch list starts at sm_75; bfloat16 needs sm_80.
MIN_CC = {"bfloat16": (8, 0), "auto": (7, 5), "float16": (7, 5)}


def image_cuda_major(ref: str) -> int:
    """13 for a plain tag, 12 for a -cu12x tag (vllm/vllm-openai's naming)."""
    m = re.search(r"-cu(\d\d)\d*$", parse_reference(ref)["tag"] or "")
    return int(m.group(1)) if m else 13


def gpu_host_problems(gpu: str, image: str, dtype: str, runner=subprocess.run) -> list[str]:
    """Why this host's driver or GPU cannot run `image` with `dtype`, each with its fix; [] when it can."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ["nvidia-smi not found on the host: install the NVIDIA driver (it ships nvidia-smi)"]
    out = runner(
        [exe, "-i", str(gpu), "--query-gpu=driver_version,compute_cap", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if out.returncode != 0:
        return [f"nvidia-smi -i {gpu} failed: {(out.stderr or out.stdout).strip()}; is GPU={gpu} right?"]
    driver, _, cc = (p.strip() for p in out.stdout.strip().splitlines()[0].partition(","))
    problems = []
    cuda = image_cuda_major(image)
    major = int(driver.split(".")[0]) if driver.split(".")[0].isdigit() else 0
    if major < MIN_DRIVER[cuda]:
        fix = (
            "upgrade the driver to R580 or newer, or use the CUDA 12.9 build: put "
            f"VLLM_IMAGE={parse_reference(image)['name']}:{(parse_reference(image)['tag'] or 'v0.32.0')}-cu129 "
            "into images.env.local"
            if cuda == 13
            else f"upgrade the driver to R{MIN_DRIVER[cuda]} or newer"
        )
        problems.append(f"driver {driver} is too old for {image} (CUDA {cuda} needs R{MIN_DRIVER[cuda]}+): {fix}")
    want = MIN_CC.get(dtype, MIN_CC["auto"])
    have = tuple(int(x) for x in cc.split(".")) if re.match(r"^\d+\.\d+$", cc) else None
    if have is None:
        problems.append(f"nvidia-smi reports no compute capability for GPU {gpu} ({cc!r})")
    elif have < want:
        problems.append(
            f"GPU {gpu} has compute capability {cc}; {dtype} in vLLM 0.32.0 needs "
            f"{want[0]}.{want[1]}+ (sm_{want[0]}{want[1]}): use a newer GPU"
            + (", or dtype float16 in services/methods.toml [common]" if dtype == "bfloat16" else "")
        )
    return problems


# --- GPU memory ---------------------------------------------------------------------------------------


def gpu_memory_used(gpu: str, runner=subprocess.run) -> int:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise HostError(
            "nvidia-smi not found on the host; install the NVIDIA driver utilities (it ships with the driver)"
        )
    out = runner(
        [exe, "-i", str(gpu), "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if out.returncode != 0:
        raise HostError(f"nvidia-smi -i {gpu} failed: {out.stderr.strip() or out.stdout.strip()}")
    return int(out.stdout.strip().splitlines()[0])


def wait_gpu_free(
    gpu: str,
    *,
    max_used_mib: int,
    timeout: float,
    poll: float = 2.0,
    read=None,
    sleep=time.sleep,
    clock=time.monotonic,
    log=print,
) -> int:
    """Return the used MiB once it is <= max_used_mib on two polls in a row; HostError after timeout."""
    read = read or (lambda: gpu_memory_used(gpu))
    deadline = clock() + timeout
    below = 0
    while True:
        used = read()
        below = below + 1 if used <= max_used_mib else 0
        if below >= 2:
            return used
        if clock() > deadline:
            raise HostError(
                f"GPU {gpu} still has {used} MiB in use {timeout:.0f} s after the server stopped "
                f"(limit {max_used_mib} MiB). Check `nvidia-smi` for a leftover process "
                "(`make status`), or raise GPU_FREE_MIB if another tenant uses this GPU."
            )
        log(f"GPU {gpu}: {used} MiB in use, waiting until <= {max_used_mib} MiB")
        sleep(poll)
