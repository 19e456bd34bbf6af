"""The GPU form of the stack, checked without a Docker engine or a GPU: compose.yaml itself (render.py
interprets it as compose would) and the make orchestration against a stand-in `docker` and `nvidia-smi`
(stand_in.py)."""
