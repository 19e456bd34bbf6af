"""A stand-in `kubectl` for `specstack k8s gather`: answers the four verbs gather uses from a folder
($KUBECTL_STANDIN_ROOT) instead of a cluster, the way kubectl answers them:
  pods.json                       the pods (`get pods -l SELECTOR -o json` filters them by label, k=v,k=v)
  fs/<pod>/<container>/<path>     each container's files (`cp -c C POD:/path DEST`, as kubectl cp: DEST becomes
                                  a copy of the folder; `exec POD -c C -- touch PATH` creates a file)
  logs/<pod>/<container>.log      `logs POD -c C`
The namespace `forbidden` answers `get` as an API server refusing the user.
Every call is appended to calls.log (one JSON argv per line). Errors are kubectl's: a message on stderr, exit 1."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(os.environ["KUBECTL_STANDIN_ROOT"])


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def option(args: list[str], flag: str) -> str | None:
    if flag in args:
        i = args.index(flag)
        value = args[i + 1]
        del args[i : i + 2]
        return value
    return None


def pods(namespace: str | None) -> list[dict]:
    items = json.loads((ROOT / "pods.json").read_text())["items"]
    return [p for p in items if namespace in (None, p["metadata"].get("namespace"))]


def get(args: list[str], namespace: str | None) -> int:
    if namespace == "forbidden":  # what an API server answers a user without the right to list pods
        return fail(
            'pods is forbidden: User "dev" cannot list resource "pods" in API group "" in the namespace "forbidden"'
        )
    selector = option(args, "-l") or ""
    if args[:1] != ["pods"] or option(args, "-o") != "json":
        return fail(f"stand-in: unsupported get {args}")
    wanted = dict(kv.split("=", 1) for kv in selector.split(",") if kv)
    items = [p for p in pods(namespace) if all(p["metadata"]["labels"].get(k) == v for k, v in wanted.items())]
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return 0


def container_root(pod: str, container: str | None, namespace: str | None) -> Path | None:
    if not any(p["metadata"]["name"] == pod for p in pods(namespace)):
        return None
    return ROOT / "fs" / pod / (container or "")


def cp(args: list[str], namespace: str | None) -> int:
    container = option(args, "-c")
    src, dest = args
    pod, _, path = src.partition(":")
    root = container_root(pod, container, namespace)
    if root is None:
        return fail(f'pods "{pod}" not found')
    folder = root / path.lstrip("/")
    if not folder.exists():
        return fail(f"tar: {path}: Cannot stat: No such file or directory\ncommand terminated with exit code 2")
    shutil.copytree(folder, dest)
    return 0


def logs(args: list[str], namespace: str | None) -> int:
    container = option(args, "-c")
    (pod,) = args
    path = ROOT / "logs" / pod / f"{container}.log"
    if container_root(pod, container, namespace) is None or not path.exists():
        return fail(f'container "{container}" in pod "{pod}" not found')
    sys.stdout.write(path.read_text())
    return 0


def exec_(args: list[str], namespace: str | None) -> int:
    container = option(args, "-c")
    pod, sep, *command = args
    root = container_root(pod, container, namespace)
    if root is None or sep != "--" or command[:1] != ["touch"]:
        return fail(f"stand-in: unsupported exec {args}")
    target = root / command[1].lstrip("/")
    if not target.parent.is_dir():
        return fail(f"touch: cannot touch '{command[1]}': No such file or directory")
    target.touch()
    return 0


def main(argv: list[str]) -> int:
    with open(ROOT / "calls.log", "a") as f:
        f.write(json.dumps(argv) + "\n")
    args = list(argv)
    namespace = option(args, "-n")
    verbs = {"get": get, "cp": cp, "logs": logs, "exec": exec_}
    if not args or args[0] not in verbs:
        return fail(f"stand-in: unknown command {args[:1]}")
    return verbs[args[0]](args[1:], namespace)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
