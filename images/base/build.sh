#!/usr/bin/env bash
# The base image every CPU image builds FROM: a minimal Debian bookworm made here with mmdebstrap and
# `docker import`ed (no image registry is needed). Debian's own packages and CA bundle only: nothing of
# this host (its proxy CA, its pip config) goes into the image.
#   usage: images/base/build.sh IMAGE_TAG      (e.g. specstack-base:bookworm)
set -euo pipefail
TAG=${1:?usage: images/base/build.sh IMAGE_TAG}
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DOCKER=${DOCKER:-docker}

command -v mmdebstrap >/dev/null || { echo "mmdebstrap is missing: apt-get install mmdebstrap" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# minbase + python3 (the venvs of the derived images) + ca-certificates (Debian's bundle only).
# policy-rc.d: package scripts in later `apt-get install` steps must not try to start services.
# Documentation and man pages are left out (copyright files stay).
timeout 900 mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook='printf "#!/bin/sh\nexit 101\n" > "$1/usr/sbin/policy-rc.d" && chmod 755 "$1/usr/sbin/policy-rc.d"' \
  "$SUITE" "$WORK/base.tar" "$MIRROR"

# Versions for the image labels, read from the tarball itself.
DEBIAN=$(tar -xOf "$WORK/base.tar" ./etc/debian_version)
# awk reads to the end: an early `exit` closes the pipe under tar, whose SIGPIPE (141) pipefail turns into a
# silent failure of this script (CI, 2026-12-02: "images-base Error 141")
PYTHON=$(tar -xOf "$WORK/base.tar" ./var/lib/dpkg/status \
  | awk '/^Package: /{p=$2} /^Version: /{if (p=="python3" && v=="") v=$2} END{print v}')
[ -n "$DEBIAN" ] && [ -n "$PYTHON" ] || { echo "could not read the Debian/Python versions from the tarball" >&2; exit 1; }

"$DOCKER" import \
  --change "LABEL org.specstack.image=base org.specstack.debian=$DEBIAN org.specstack.debian-suite=$SUITE" \
  --change "LABEL org.specstack.python3-deb=$PYTHON org.specstack.built-with=mmdebstrap-$(mmdebstrap --version | awk '{print $2}')" \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  "$WORK/base.tar" "$TAG" >/dev/null
echo "built $TAG (Debian $DEBIAN, python3 $PYTHON)"
