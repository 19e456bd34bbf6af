"""A stand-in of the Hugging Face Hub's HTTP API for one repository, enough for huggingface_hub's own
model_info, snapshot_download and hf_hub_download (HF_ENDPOINT points at it): the model info, the file tree,
the resolve URLs, and the error codes the hub answers with (X-Error-Code)."""

from __future__ import annotations

import hashlib
import json
from http.server import BaseHTTPRequestHandler

from ..support import HttpStandIn


class Hub(HttpStandIn):
    """Serves `files` (name -> bytes) of `repo` at `commit`; `errors={"api": (status, code)}` answers the model
    info with that error instead. `requests` lists (method, path) of every request."""

    def __init__(self, repo, files, commit="a" * 40, errors=None):
        self.repo, self.files, self.commit, self.errors = repo, files, commit, errors or {}
        self.requests = []
        self.authorization: set = set()
        hub = self

        class H(BaseHTTPRequestHandler):
            def _send(self, code, body=b"", headers=None):
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_HEAD(self):
                self.do_GET()

            def do_GET(self):
                hub.requests.append((self.command, self.path))
                hub.authorization.add(self.headers.get("Authorization"))
                path = self.path.split("?")[0]
                if path.startswith(f"/api/models/{hub.repo}/tree/"):
                    body = [
                        {"type": "file", "path": f, "size": len(c), "oid": hashlib.sha1(c).hexdigest()}
                        for f, c in hub.files.items()
                    ]
                    return self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})
                if path.startswith(f"/api/models/{hub.repo}"):
                    if "api" in hub.errors:
                        code, err = hub.errors["api"]
                        return self._send(
                            code,
                            json.dumps({"error": err}).encode(),
                            {"X-Error-Code": err, "Content-Type": "application/json"},
                        )
                    body = {
                        "id": hub.repo,
                        "sha": hub.commit,
                        "siblings": [
                            {"rfilename": f, "size": len(c), "blobId": hashlib.sha1(c).hexdigest()}
                            for f, c in hub.files.items()
                        ],
                    }
                    return self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})
                prefix = f"/{hub.repo}/resolve/"
                if path.startswith(prefix):
                    rev, _, name = path[len(prefix) :].partition("/")
                    if name not in hub.files:
                        return self._send(404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": hub.commit})
                    c = hub.files[name]
                    return self._send(200, c, {"X-Repo-Commit": hub.commit, "ETag": f'"{hashlib.sha1(c).hexdigest()}"'})
                return self._send(404, b"")

        super().__init__(H)

    def downloads(self) -> list[str]:
        """The files whose content was sent (GET of a resolve URL)."""
        prefix = f"/{self.repo}/resolve/"
        return sorted(
            {
                p.split("?")[0][len(prefix) :].partition("/")[2]
                for m, p in self.requests
                if m == "GET" and p.startswith(prefix)
            }
        )
