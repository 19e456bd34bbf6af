#!/usr/bin/env bash
# Builds the vLLM CPU image (images/vllm-cpu/Dockerfile) with the wheelhouse's files served to the build, and to
# nothing else: on the host's loopback, on a port the kernel picks, for as long as `docker build` runs
# (`--network host` lets the build's RUN steps reach the host's loopback). So no wheel is ever a layer, and the
# venv is installed in one layer of the final image, with no build stage to copy it from.
#   usage: WHEELHOUSE=.specstack/wheelhouse [DOCKER=docker] images/vllm-cpu/build.sh DOCKER_BUILD_ARGS...
set -euo pipefail
: "${WHEELHOUSE:?the wheelhouse folder to serve (make images sets it)}"
DOCKER=${DOCKER:-docker}
LOG=$(mktemp)
# -u: the "Serving HTTP on ... port N" line is read from the log while the server runs.
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$WHEELHOUSE" >"$LOG" 2>&1 </dev/null &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -f "$LOG"' EXIT
PORT=
for _ in $(seq 200); do
  PORT=$(sed -n 's/^Serving HTTP on [^ ]* port \([0-9][0-9]*\) .*/\1/p' "$LOG")
  [ -n "$PORT" ] || ! kill -0 "$SERVER" 2>/dev/null && break
  sleep 0.05
done
[ -n "$PORT" ] || { echo "could not serve the wheelhouse $WHEELHOUSE on 127.0.0.1: $(cat "$LOG")" >&2; exit 1; }
# NO_PROXY: a proxy Docker hands to builds (its client config) must not be asked for the host's own loopback.
"$DOCKER" build --network host --build-arg "WHEELS=http://127.0.0.1:$PORT/" \
  --build-arg NO_PROXY=127.0.0.1 --build-arg no_proxy=127.0.0.1 "$@"
