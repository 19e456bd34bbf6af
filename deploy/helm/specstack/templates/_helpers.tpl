{{/* Names and labels shared by every object of the chart. */}}

{{- define "specstack.plans" -}}
{{- .Files.Get "generated/plans.yaml" | fromYaml | toJson -}}
{{- end -}}

{{/* The methods of the release, one Job each, as JSON: .Values.methods, else services/methods.toml's [sweep]
     methods (the one default list), which `specstack k8s generate` writes into generated/plans.yaml. */}}
{{- define "specstack.methods" -}}
{{- .Values.methods | default (include "specstack.plans" . | fromJson).defaultMethods | toJson -}}
{{- end -}}

{{/* The Job name of a method: release-method, DNS-1123 (draft_model -> draft-model), at most 63 characters. */}}
{{- define "specstack.jobName" -}}
{{- printf "%s-%s" .root.Release.Name (.method | replace "_" "-" | lower) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "specstack.selectorLabels" -}}
app.kubernetes.io/name: specstack
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{- define "specstack.labels" -}}
{{ include "specstack.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
specstack.io/run-id: {{ .Values.runId | quote }}
{{- end -}}

{{/* The labels the PodMonitor selects Job pods by (a subset of every Job pod's labels). */}}
{{- define "specstack.jobSelector" -}}
{{ include "specstack.selectorLabels" . }}
specstack.io/component: method-job
{{- end -}}

{{/* Where a method's collector writes: --results of `specstack run` (one tree per Job, so Jobs sharing a
     ReadWriteMany volume never write the same manifest). `specstack k8s gather` reads the same path. */}}
{{- define "specstack.jobResults" -}}
{{- printf "/results/jobs/%s" . -}}
{{- end -}}
