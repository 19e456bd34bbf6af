"""A stand-in for a vLLM server left behind by an earlier run: its own process and session (as start_native starts
vLLM), listening on the given port, answering /health, /v1/models (served name spec-demo), /version and /metrics
with spec-decode counters, as the left-over draft_model server on the H200 did.

    python stale_vllm.py PORT      prints "listening" once the socket is bound, then serves until killed
"""

from __future__ import annotations

import http.server
import json
import sys

METRICS = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="spec-demo"} 575.0
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
""" + "".join(
    f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="spec-demo",position="{p}"}} 9.0\n'
    for p in range(4)
)

ANSWERS = {
    "/health": ("text/plain", ""),
    "/version": ("application/json", json.dumps({"version": "0.32.0"})),
    "/v1/models": (
        "application/json",
        json.dumps(
            {
                "object": "list",
                "data": [{"id": "spec-demo", "object": "model", "root": "/models/tiny-qwen3", "max_model_len": 4096}],
            }
        ),
    ),
    "/metrics": ("text/plain; version=0.0.4", METRICS),
}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        kind, body = ANSWERS.get(self.path.split("?")[0], ("text/plain", None))
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write((body or "").encode())


if __name__ == "__main__":
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print("listening", flush=True)
    server.serve_forever()
