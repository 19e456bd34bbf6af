"""What the pre-flight's chat-template refusal prevents, on the real engine (vLLM 0.32.0, CPU): a base model whose
tokenizer has no chat template answers the collector's acceptance request with HTTP 400; with the fix the
refusal names (--chat-template template_basic.jinja, vLLM's own), the same request is answered, and the prompt
is sent as written: the same tokens and the same greedy text as /v1/completions of that prompt."""

from __future__ import annotations

import pytest
import requests

from specstack.config import methods
from specstack.measure.chat import chat_payload
from specstack.server.runtime import start_native, stop_native

from ..support import free_port
from .tiny_base import without_chat_template

pytestmark = pytest.mark.integration

PROMPT = "def fibonacci(n):\n    "
MAX_TOKENS = 24


@pytest.fixture(scope="module")
def base_models(models_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-base-engine")
    without_chat_template(models_dir / "tiny-mimo", folder / "tiny-mimo")
    return folder


def _serve(base_models, tmp_path, **extra):
    plan = methods.build(
        "mtp-baseline",
        model_set_name="tiny",
        platform="cpu-native",
        models_dir=str(base_models),
        extra={"port": free_port(), **extra},
    )
    return start_native(plan, tmp_path / "server.log", 300)


def test_without_a_template_every_chat_request_gets_http_400(base_models, tmp_path):
    server = _serve(base_models, tmp_path)
    ipc = server.ipc_dir
    try:
        r = requests.post(
            f"{server.base_url}/v1/chat/completions",
            json=chat_payload(server.served_model_name, PROMPT, MAX_TOKENS),
            timeout=120,
        )
        # the same real server, for runtime.py: vLLM's IPC sockets are in a folder of this server's own ...
        sockets = [p for p in ipc.iterdir() if p.is_socket()] if ipc else []
    finally:
        stop_native(server)
    assert r.status_code == 400, r.text
    assert "chat template" in r.json()["error"]["message"]
    assert ipc is not None and ipc.name.startswith("specstack-vllm-ipc-") and sockets, (ipc, sockets)
    assert not ipc.exists()  # ... gone with it (a killed vLLM leaves them in the temp folder)


def test_with_the_named_fix_the_prompt_goes_as_written(base_models, tmp_path):
    server = _serve(base_models, tmp_path, **{"chat-template": "template_basic.jinja"})
    try:
        chat = requests.post(
            f"{server.base_url}/v1/chat/completions",
            json=chat_payload(server.served_model_name, PROMPT, MAX_TOKENS),
            timeout=120,
        )
        plain = requests.post(
            f"{server.base_url}/v1/completions",
            json={
                "model": server.served_model_name,
                "prompt": PROMPT,
                "max_tokens": MAX_TOKENS,
                "temperature": 0,
                "top_p": 1,
                "seed": 42,
            },
            timeout=120,
        )
    finally:
        stop_native(server)
    assert chat.status_code == 200 and plain.status_code == 200, (chat.text, plain.text)
    chat, plain = chat.json(), plain.json()
    assert chat["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"]
    assert chat["choices"][0]["message"]["content"] == plain["choices"][0]["text"]
    assert chat["usage"]["completion_tokens"] > 0
