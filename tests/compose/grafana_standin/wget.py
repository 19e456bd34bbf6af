#!/usr/bin/python3
"""`wget -q -O /dev/null URL`, as compose.yaml's Grafana healthcheck calls it: exit 0 on HTTP 200."""

import sys
import urllib.request

try:
    sys.exit(0 if urllib.request.urlopen(sys.argv[-1], timeout=4).status == 200 else 1)
except OSError:
    sys.exit(1)
