"""How and where a method's server runs: the runtime (specstack starts it, or attaches to one at a URL) and the
platform (a [platforms] table of services/methods.toml). StrEnums, so a member is its string everywhere: JSON,
the command line, f-strings, and comparisons with names read back from a recorded run.
host/ runs under the host's python3 (3.8, no StrEnum) and spells its two container platforms itself."""

from __future__ import annotations

from enum import StrEnum

from specstack.errors import UserError


class Runtime(StrEnum):
    NATIVE = "native"  # `vllm serve` started from the plan (server/runtime.py start_native)
    URL = "url"  # a server someone else started, at --url (server/runtime.py attach)

    @classmethod
    def of(cls, name: str) -> Runtime:
        """The member of that name, or the error a user fixes (--runtime)."""
        try:
            return cls(name)
        except ValueError:
            raise UserError(f"--runtime must be one of {', '.join(cls)}, got {name!r}") from None


class Platform(StrEnum):
    """services/methods.toml's [platforms], in its order (tests/config/test_serving.py holds them equal)."""

    GPU_CONTAINER = "gpu-container"
    GPU_NATIVE = "gpu-native"
    GPU_NATIVE_EAGER = "gpu-native-eager"
    GPU_NATIVE_V2 = "gpu-native-v2"
    CPU_NATIVE = "cpu-native"
    CPU_CONTAINER = "cpu-container"

    @classmethod
    def of(cls, name: str) -> Platform:
        """The member of that name, or serve_args.py's own refusal of an unknown platform (the same words)."""
        try:
            return cls(name)
        except ValueError:
            raise UserError(f"unknown platform {name!r}; choose one of: {', '.join(cls)}") from None

    @property
    def on_gpu(self) -> bool:
        return on_gpu(self)


def device(platform: str) -> str:
    """What a platform serves on: its name's first word, gpu or cpu (gpu-native, cpu-container, ...). A function
    of the name, so a platform recorded by an older run, a member or not, is read the same way."""
    return str(platform).partition("-")[0]


def on_gpu(platform: str) -> bool:
    return device(platform) == "gpu"
