"""collector/specstack/host/gpu.py: nvidia-smi's output parsed, and the bounded wait for a GPU's memory."""

from __future__ import annotations

import pytest

from specstack.host import HostError, gpu

pytestmark = pytest.mark.unit


def test_wait_gpu_free_needs_two_low_readings_and_is_bounded():
    readings = iter([30000, 500, 20000, 400, 300])
    now = [0.0]
    used = gpu.wait_gpu_free(
        "0",
        max_used_mib=1024,
        timeout=60,
        read=lambda: next(readings),
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        clock=lambda: now[0],
        log=lambda *_: None,
    )
    assert used == 300
    now[0] = 0.0
    with pytest.raises(HostError, match="still has 30000 MiB"):
        gpu.wait_gpu_free(
            "0",
            max_used_mib=1024,
            timeout=10,
            read=lambda: 30000,
            sleep=lambda s: now.__setitem__(0, now[0] + s),
            clock=lambda: now[0],
            log=lambda *_: None,
        )


def test_parse_nvidia_smi():
    facts = gpu.parse_nvidia_smi(
        "0, GPU-1, NVIDIA L4, 550.54.15, 23034, 1, 00000000:00:03.0\n",
        "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |",
    )
    assert facts["driver_version"] == "550.54.15" and facts["cuda_version_driver"] == "12.4"
    assert facts["gpus"] == [
        {
            "index": "0",
            "uuid": "GPU-1",
            "name": "NVIDIA L4",
            "driver_version": "550.54.15",
            "memory_total_mib": 23034,
            "memory_used_mib": 1,
            "pci_bus_id": "00000000:00:03.0",
        }
    ]
