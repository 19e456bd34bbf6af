"""deploy/helm/specstack checked by the real tools, without a cluster: helm v4.1.4 (lint --strict, template across
Kubernetes 1.29-1.35, values.schema.json), kubernetes-validate --strict (the API schemas of each version), and
assertions on the rendered objects. What this cannot show (a scheduler, a GPU, a running Prometheus Operator)
is listed in docs/kubernetes.md."""

from __future__ import annotations

import json
import re
import shutil

import kubernetes_validate
import pytest
import yaml

from specstack.cli.main import main
from specstack.config import methods as methods_config
from specstack.k8s import chart
from tests.k8s.conftest import NAMESPACE, RELEASE, RUN_ID, helm, of_kind, render, sets

pytestmark = pytest.mark.config

KUBE_VERSIONS = [f"1.{minor}.0" for minor in range(29, 36)]
ALL_METHODS = methods_config.names()


def _pod(job: dict) -> dict:
    return job["spec"]["template"]


def _containers(job: dict) -> dict[str, dict]:
    spec = _pod(job)["spec"]
    return {c["name"]: c for c in spec.get("initContainers", []) + spec["containers"]}


def test_generated_files_are_current_and_a_stale_one_is_named(tmp_path, capsys):
    assert main(["k8s", "generate", "--check"]) == 0
    assert "k8s generate --check: OK" in capsys.readouterr().out
    copy = tmp_path / "chart"
    shutil.copytree(chart.CHART_DIR, copy)
    plans = copy / chart.PLANS_FILE
    plans.write_text(plans.read_text().replace("--max-num-seqs", "--max-num-seq", 1))
    (copy / "generated" / "dashboards" / "old.json").write_text("{}")
    assert main(["k8s", "generate", "--check", "--chart", str(copy)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"k8s generate --check: {plans} is stale; run `specstack k8s generate`",
        f"k8s generate --check: {copy / 'generated/dashboards/old.json'} is not generated any more; run `specstack k8s "
        "generate`",
    ]
    assert main(["k8s", "generate", "--chart", str(copy)]) == 0
    assert capsys.readouterr().out == f"wrote {plans}\nremoved {copy / 'generated/dashboards/old.json'}\n"
    assert chart.check(copy) == [] and not (copy / "generated/dashboards/old.json").exists()


def test_the_default_methods_are_methods_tomls_sweep(rendered):
    """values.yaml names no methods: a release runs methods.toml's [sweep] methods (the one default list), which the
    generator writes into generated/plans.yaml (its --check above keeps that copy current)."""
    default = methods_config.default_sweep_methods()
    assert chart.plans()["defaultMethods"] == default
    assert "methods" not in yaml.safe_load((chart.CHART_DIR / "values.yaml").read_text())
    assert sorted(j["metadata"]["labels"]["specstack.io/method"] for j in of_kind(rendered, "Job")) == sorted(default)
    given = of_kind(render({"methods": ["ngram"]}), "Job")
    assert [j["metadata"]["labels"]["specstack.io/method"] for j in given] == ["ngram"]
    notes = helm(
        "install", RELEASE, str(chart.CHART_DIR), "--dry-run=client", "--namespace", NAMESPACE, *sets({"runId": RUN_ID})
    ).stdout
    assert f"specstack run {RUN_ID}: {len(default)} Job(s) ({', '.join(default)}), one GPU each." in notes


@pytest.mark.parametrize(
    "values",
    [
        {},
        {
            "results": {"existingClaim": "r", "holdSeconds": 0},
            "prefixCaching": True,
            "hfToken": {"secretName": "hf", "key": "token"},
            "kueue": {"queueName": "q"},
        },
    ],
)
def test_helm_lint_strict_passes(values):
    proc = helm("lint", "--strict", str(chart.CHART_DIR), *sets({"runId": RUN_ID, **values}))
    assert "1 chart(s) linted, 0 chart(s) failed" in proc.stdout


def test_the_packaged_chart_renders_the_same_objects(rendered, tmp_path):
    """helm package takes only files inside the chart folder: the generated copies travel, a symlink would not."""
    helm("package", str(chart.CHART_DIR), "--destination", str(tmp_path))
    (tgz,) = tmp_path.glob("specstack-*.tgz")
    out = helm(
        "template", RELEASE, str(tgz), "--namespace", NAMESPACE, "--kube-version", "1.35.0", *sets({"runId": RUN_ID})
    ).stdout
    assert [d for d in yaml.safe_load_all(out) if d] == rendered


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_object_is_valid_for_kubernetes(kube_version):
    objects = render(
        {
            "methods": ALL_METHODS,
            "results": {"existingClaim": "specstack-results", "holdSeconds": 0},
            "hfToken": {"secretName": "hf", "key": "token"},
            "kueue": {"queueName": "gpus"},
        },
        kube_version,
    )
    assert len(of_kind(objects, "Job")) == len(ALL_METHODS)
    for obj in objects:
        if obj["kind"] == "PodMonitor":  # a CRD: checked against its own schema (test_podmonitor_check.py)
            continue
        kubernetes_validate.validate(obj, kube_version, strict=True)


def test_the_validation_can_fail(rendered):
    job = json.loads(json.dumps(of_kind(rendered, "Job")[0]))
    job["spec"]["template"]["spec"]["initContainers"][0]["restartPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError, match="restartPolicyy"):
        kubernetes_validate.validate(job, "1.29.0", strict=True)


def test_a_cluster_older_than_native_sidecars_is_refused():
    proc = helm(
        "template", RELEASE, str(chart.CHART_DIR), "--kube-version", "1.28.0", *sets({"runId": RUN_ID}), check=False
    )
    assert proc.returncode != 0
    assert "requires kubeVersion: >=1.29.0-0 which is incompatible with Kubernetes v1.28.0" in proc.stderr


@pytest.mark.parametrize("prefix_caching", [False, True])
def test_serve_args_are_serve_args_py_output(prefix_caching):
    jobs = of_kind(render({"methods": ALL_METHODS, "prefixCaching": prefix_caching}), "Job")
    for job in jobs:
        method = job["metadata"]["labels"]["specstack.io/method"]
        plan = methods_config.build(
            method, model_set_name="default", platform="gpu-container", prefix_caching=prefix_caching
        )
        vllm = _containers(job)["vllm"]
        assert vllm["args"] == plan.argv
        env = {e["name"]: e.get("value") for e in vllm["env"]}
        assert {k: env[k] for k in plan.env} == plan.env
        expected = (
            "specstack-vllm-suffix:v0.32.0-arctic-inference-0.3.0" if plan.requires else "vllm/vllm-openai:v0.32.0"
        )
        assert vllm["image"] == expected
        args = _containers(job)["collector"]["args"]
        assert args[args.index("--method") + 1] == method and ("--prefix-caching" in args) == prefix_caching
    assert sorted(j["metadata"]["labels"]["specstack.io/method"] for j in jobs) == sorted(ALL_METHODS)


def test_one_gpu_per_job_on_a_native_sidecar(rendered):
    for job in of_kind(rendered, "Job"):
        spec = _pod(job)["spec"]
        (sidecar,) = spec["initContainers"]
        assert sidecar["restartPolicy"] == "Always" and spec["restartPolicy"] == "Never"
        gpus = [
            c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0)
            for c in spec["initContainers"] + spec["containers"]
        ]
        assert sorted(gpus) == [0, 1], job["metadata"]["name"]
        assert sidecar["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
        args = spec["containers"][0]["args"]
        assert args[:4] == ["run", "--runtime", "url", "--url"] and args[4] == "http://127.0.0.1:8000"
        assert spec["automountServiceAccountToken"] is False


def test_podmonitor_selects_exactly_the_job_pods(rendered):
    (pm,) = of_kind(rendered, "PodMonitor")
    assert pm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    wanted = pm["spec"]["selector"]["matchLabels"]
    for job in of_kind(rendered, "Job"):
        labels = _pod(job)["metadata"]["labels"]
        assert wanted.items() <= labels.items()
        ports = {p["name"] for c in _containers(job).values() for p in c.get("ports", [])}
        assert {e["port"] for e in pm["spec"]["podMetricsEndpoints"]} <= ports
        # Prometheus names a pod label __meta_kubernetes_pod_label_<name with every other character as _>
        for e in pm["spec"]["podMetricsEndpoints"]:
            for r in e.get("relabelings", []):
                (source,) = r["sourceLabels"]
                assert any(
                    source == "__meta_kubernetes_pod_label_" + re.sub(r"[^A-Za-z0-9_]", "_", k) for k in labels
                ), source
    with_claim = render(
        {
            "results": {"existingClaim": "specstack-results", "holdSeconds": 0},
            "podMonitor": {"enabled": True, "release": "prom", "interval": "5s"},
        }
    )
    (access,) = of_kind(with_claim, "Pod")
    (pm,) = of_kind(with_claim, "PodMonitor")
    assert pm["metadata"]["labels"]["release"] == "prom"
    assert not pm["spec"]["selector"]["matchLabels"].items() <= access["metadata"]["labels"].items()


def test_dashboards_are_configmaps_for_grafanas_sidecar(rendered):
    maps = [m for m in of_kind(rendered, "ConfigMap") if m["metadata"]["labels"].get("grafana_dashboard") == "1"]
    committed = {p.name: p.read_text() for p in (chart.REPO / "grafana" / "dashboards").glob("*.json")}
    assert sorted(k for m in maps for k in m["data"]) == sorted(committed)
    for m in maps:
        ((name, text),) = m["data"].items()
        assert json.loads(text) == json.loads(committed[name].replace('"specstack-prometheus"', '"prometheus"'))
        assert m["metadata"]["annotations"]["grafana_folder"] == "specstack"


def test_only_namespaced_objects_and_no_rbac(rendered):
    with_claim = render({"results": {"existingClaim": "specstack-results", "holdSeconds": 0}})
    kinds = {o["kind"] for o in rendered + with_claim}
    assert kinds == {"Job", "ConfigMap", "PodMonitor", "Pod"}
    assert all("namespace" not in o["metadata"] or o["metadata"]["namespace"] == NAMESPACE for o in rendered)


def test_token_kueue_and_claim_options():
    objects = render(
        {
            "hfToken": {"secretName": "hf", "key": "token"},
            "kueue": {"queueName": "gpus"},
            "results": {"existingClaim": "specstack-results", "holdSeconds": 600},
        }
    )
    job = of_kind(objects, "Job")[0]
    assert job["spec"]["suspend"] is True and job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpus"
    vllm, collector = _containers(job)["vllm"], _containers(job)["collector"]
    assert not any("TOKEN" in e["name"] and "value" in e and e["name"] != "HF_TOKEN_PATH" for e in vllm["env"])
    assert {"name": "hf-token", "mountPath": "/run/secrets", "readOnly": True} in vllm["volumeMounts"]
    volumes = {v["name"]: v for v in _pod(job)["spec"]["volumes"]}
    assert volumes["hf-token"]["secret"]["items"] == [{"key": "token", "path": "hf_token"}]
    assert volumes["results"]["persistentVolumeClaim"] == {"claimName": "specstack-results"}
    assert {"name": "SPECSTACK_HOLD_SECONDS", "value": "0"} in collector["env"]  # the access pod serves gather
    plain = of_kind(render(), "Job")[0]
    assert "suspend" not in plain["spec"] and "hf-token" not in {v["name"] for v in _pod(plain)["spec"]["volumes"]}


@pytest.mark.parametrize(
    "values, message",
    [
        ({"gpu": {"resource": "nvidia.com/gpu", "count": 2}}, "at '/gpu/count': value must be 1"),
        ({"methods": ["baseline", "medusa"]}, "at '/methods/1': value must be one of"),
        ({"runId": "Run 1"}, "at '/runId': 'Run 1' does not match pattern"),
        ({"modelSet": "tiny"}, "at '/modelSet': value must be 'default'"),
        (
            {"podMonitor": {"enabled": True, "release": "prom", "interval": "5 seconds"}},
            "at '/podMonitor/interval': '5 seconds' does not match pattern",
        ),
    ],
)
def test_bad_values_are_refused_by_the_schema(values, message):
    proc = helm("template", RELEASE, str(chart.CHART_DIR), *sets({"runId": RUN_ID, **values}), check=False)
    assert proc.returncode != 0 and "values don't meet the specifications of the schema" in proc.stderr
    assert message in proc.stderr, proc.stderr
