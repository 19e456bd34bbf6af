"""Grafana's /api/health on :3000, answering also with what this container sees: the files under the
provisioning and dashboards mounts, whether the admin password secret is readable and not a default one (never
the password itself), whether the data volume is writable, and the GF_* settings."""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SECRET = Path(os.environ.get("GF_SECURITY_ADMIN_PASSWORD__FILE", "/nonexistent"))


def files(root: str) -> list[str]:
    base = Path(root)
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())


def seen() -> dict:
    try:
        password = SECRET.read_text().strip()
    except OSError:
        password = ""
    try:
        probe = Path("/var/lib/grafana/.standin-write-probe")
        probe.write_text("ok")
        probe.unlink()
        writable = True
    except OSError:
        writable = False
    return {
        "database": "ok",
        "standin": True,
        "uid": os.getuid(),
        "provisioning": files("/etc/grafana/provisioning"),
        "dashboards": files("/var/lib/grafana/dashboards"),
        "admin_password_readable": bool(password),
        "admin_password_is_default": password in ("", "admin"),
        "data_writable": writable,
        "settings": {k: v for k, v in os.environ.items() if k.startswith("GF_") and "PASSWORD" not in k},
    }


class Health(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        ok = self.path == "/api/health"
        body = json.dumps(seen() if ok else {"message": "not found"}).encode()
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("0.0.0.0", 3000), Health).serve_forever()
