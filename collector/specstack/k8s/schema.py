"""values.schema.json of the Helm chart, as data: helm refuses values that break it (install, template, lint)
with the description below in its message. Method and model-set names come from services/methods.toml
(chart.py passes them), so the schema cannot name a method the chart has no plan for."""

from __future__ import annotations

# A label value (run id, method): what Kubernetes accepts in a label, at most 63 characters.
LABEL_VALUE = r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
IMAGE = {"type": "string", "minLength": 1, "pattern": r"^\S+$"}
DURATION = {"type": "string", "pattern": r"^[0-9]+(ms|s|m|h)$"}


def _obj(props: dict, required: tuple[str, ...] = (), description: str | None = None) -> dict:
    out = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        out["required"] = list(required)
    if description:
        out["description"] = description
    return out


def _free(description: str) -> dict:
    return {"type": "object", "description": description}


def _nullable_int(minimum: int, description: str) -> dict:
    return {"type": ["integer", "null"], "minimum": minimum, "description": description}


def _claim(description: str) -> dict:
    return {"type": "string", "pattern": r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)?$", "description": description}


def values_schema(methods: list[str], model_sets: list[str]) -> dict:
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "specstack chart values",
        **_obj(
            {
                "global": {"type": "object"},
                "runId": {
                    "type": "string",
                    "pattern": LABEL_VALUE,
                    "description": "the run id every Job writes under (results/<runId>/): letters, digits, "
                    "- _ . (at most 63); set it with --set runId=...",
                },
                "methods": {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"type": "string", "enum": methods},
                    "description": "one Job per method, named as in services/methods.toml (left out: its "
                    "[sweep] methods, generated/plans.yaml's defaultMethods)",
                },
                "modelSet": {
                    "type": "string",
                    "enum": model_sets,
                    "description": "a model set of services/methods.toml whose models are hub ids",
                },
                "prefixCaching": {"type": "boolean", "description": "enable-prefix-caching for every method alike"},
                "images": _obj(
                    {
                        "vllm": IMAGE,
                        "vllmSuffix": IMAGE,
                        "collector": IMAGE,
                        "pullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"]},
                    },
                    ("vllm", "vllmSuffix", "collector"),
                ),
                "imagePullSecrets": {
                    "type": "array",
                    "items": _obj({"name": {"type": "string", "minLength": 1}}, ("name",)),
                },
                "gpu": _obj(
                    {
                        "resource": {
                            "type": "string",
                            "minLength": 1,
                            "description": "the extended resource of one GPU (nvidia.com/gpu)",
                        },
                        "count": {
                            "const": 1,
                            "description": "one GPU per Job: methods.toml serves with "
                            "tensor-parallel-size 1, and a comparison needs the same GPU",
                        },
                    },
                    ("resource", "count"),
                ),
                "vllm": _obj(
                    {
                        "startupSeconds": {
                            "type": "integer",
                            "minimum": 60,
                            "description": "how long the server may take to download, load and compile",
                        },
                        "shmSize": {"type": "string", "pattern": r"^[0-9]+(Mi|Gi)$"},
                        "resources": _free("cpu/memory requests and limits of the server (the GPU is set by gpu:)"),
                    },
                    ("startupSeconds", "shmSize"),
                ),
                "collector": _obj(
                    {
                        "args": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "extra `specstack run` options, e.g. [--concurrency, '1,4', --repeats, '3']",
                        },
                        "windowsPort": {"type": "integer", "minimum": 1024, "maximum": 65535},
                        "prometheusUrl": {"type": "string", "pattern": r"^(https?://\S+)?$"},
                        "resources": _free("cpu/memory requests and limits of the collector"),
                    },
                    ("args", "windowsPort"),
                ),
                "results": _obj(
                    {
                        "existingClaim": _claim(
                            "a ReadWriteMany PVC every Job writes to (empty: an emptyDir per pod, "
                            "held until `specstack k8s gather` copied it)"
                        ),
                        "holdSeconds": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "emptyDir: how long a finished collector waits to be gathered",
                        },
                    },
                    ("existingClaim", "holdSeconds"),
                ),
                "modelCache": _obj(
                    {
                        "existingClaim": _claim(
                            "a PVC for the Hugging Face cache (empty: an emptyDir, the models downloaded by every pod)"
                        )
                    }
                ),
                "hfToken": _obj(
                    {
                        "secretName": _claim("a Secret holding the Hugging Face token (empty: no token)"),
                        "key": {"type": "string", "minLength": 1},
                    },
                    ("secretName", "key"),
                ),
                "kueue": _obj(
                    {
                        "queueName": {
                            "type": "string",
                            "pattern": r"^([a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?)?$",
                            "description": "a Kueue LocalQueue: the Jobs are created suspended with "
                            "its label and Kueue admits them",
                        }
                    }
                ),
                "job": _obj(
                    {
                        "backoffLimit": {"type": "integer", "minimum": 0},
                        "activeDeadlineSeconds": _nullable_int(1, "a deadline for each Job (null: none)"),
                        "ttlSecondsAfterFinished": _nullable_int(
                            0, "delete a finished Job after this long (null: keep)"
                        ),
                    }
                ),
                "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
                "tolerations": {"type": "array", "items": {"type": "object"}},
                "affinity": {"type": "object"},
                "podMonitor": _obj(
                    {
                        "enabled": {"type": "boolean"},
                        "release": {
                            "type": "string",
                            "description": "the `release` label your Prometheus Operator "
                            "selects PodMonitors by (kube-prometheus-stack: its "
                            "release name)",
                        },
                        "interval": DURATION,
                    },
                    ("enabled", "release", "interval"),
                ),
                "dashboards": _obj(
                    {
                        "enabled": {"type": "boolean"},
                        "label": {
                            "type": "string",
                            "minLength": 1,
                            "description": "the label Grafana's dashboard sidecar watches (grafana_dashboard)",
                        },
                        "labelValue": {"type": "string"},
                        "folder": {"type": "string"},
                        "datasourceUid": {
                            "type": "string",
                            "minLength": 1,
                            "description": "the uid of your Grafana's Prometheus data source",
                        },
                    },
                    ("enabled", "label", "labelValue", "datasourceUid"),
                ),
            },
            ("runId", "modelSet", "images", "gpu", "vllm", "collector", "results"),
        ),
    }
