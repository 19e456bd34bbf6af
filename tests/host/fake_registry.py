"""A registry on loopback for the image lock tests: the distribution API's manifest endpoint and an anonymous
token service, like Docker Hub's."""

from __future__ import annotations

import hashlib
import json
from http.server import BaseHTTPRequestHandler

MANIFEST = json.dumps(
    {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}
).encode()
DIGEST = "sha256:" + hashlib.sha256(MANIFEST).hexdigest()


class Registry(BaseHTTPRequestHandler):
    """The distribution API's manifest endpoint + an anonymous token service, like Docker Hub's."""

    seen: list[tuple[str, str, str | None]] = []
    send_digest_header = True

    def _manifest(self, head: bool):
        Registry.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if self.headers.get("Authorization") != "Bearer t0ken":
            self.send_response(401)
            port = self.server.server_address[1]
            self.send_header(
                "WWW-Authenticate",
                f'Bearer realm="http://127.0.0.1:{port}/token",'
                f'service="test-registry",scope="repository:team/app:pull"',
            )
            self.end_headers()
            return
        if self.path != "/v2/team/app/manifests/1.2.3":
            self.send_response(404)
            self.end_headers()
            return
        assert "application/vnd.oci.image.index.v1+json" in self.headers.get("Accept", "")
        self.send_response(200)
        if Registry.send_digest_header:
            self.send_header("Docker-Content-Digest", DIGEST)
        self.send_header("Content-Length", str(len(MANIFEST)))
        self.end_headers()
        if not head:
            self.wfile.write(MANIFEST)

    def do_HEAD(self):  # noqa: N802
        self._manifest(head=True)

    def do_GET(self):  # noqa: N802
        if self.path.startswith("/token"):
            assert "service=test-registry" in self.path and "scope=repository%3Ateam%2Fapp%3Apull" in self.path
            body = json.dumps({"token": "t0ken"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)
            return
        self._manifest(head=False)
