{{/* The chart's name, or nameOverride. */}}
{{- define "vigil.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: fullnameOverride, the release's name when it holds
the chart's, else RELEASE-CHART. It is also the Prometheus job label (the
Service's name), which dashboards/rules.yml and the scaling query group by. */}}
{{- define "vigil.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Selector labels: stable over upgrades. */}}
{{- define "vigil.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vigil.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of the pods: those of every object but part-of, which the
kustomize base sets on the objects only. */}}
{{- define "vigil.podLabels" -}}
{{ include "vigil.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "vigil.labels" -}}
{{ include "vigil.selectorLabels" . }}
app.kubernetes.io/part-of: vigil
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The image reference: REPOSITORY:TAG, or REPOSITORY:TAG@DIGEST. */}}
{{- define "vigil.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* terminationGracePeriodSeconds: the preStop sleep, vigil's drain
(-shutdown-grace) and a margin for closing, so that SIGKILL never cuts a
drain short. */}}
{{- define "vigil.terminationGrace" -}}
{{- add .Values.drain.preStopSeconds .Values.drain.shutdownGraceSeconds .Values.drain.closeMarginSeconds }}
{{- end }}

{{/* -allowed-hosts: the values', or without authorization the Service's
names. */}}
{{- define "vigil.allowedHosts" -}}
{{- if .Values.allowedHosts }}
{{- join "," .Values.allowedHosts }}
{{- else if .Values.auth.allowUnauthenticated }}
{{- $n := include "vigil.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- printf "%s,%s.%s,%s.%s.svc,%s.%s.svc.cluster.local" $n $n $ns $n $ns $n $ns }}
{{- end }}
{{- end }}

{{/* The environment variable that carries secret header I of upstream U. */}}
{{- define "vigil.headerEnv" -}}
{{- printf "VIGIL_UPSTREAM_%s_HEADER_%d" (.upstream | upper | replace "-" "_") .index }}
{{- end }}

{{/* Checks of combinations the schema cannot express. */}}
{{- define "vigil.validate" -}}
{{- if and .Values.autoscaling.hpa.enabled .Values.autoscaling.keda.enabled }}
{{- fail "autoscaling: hpa.enabled and keda.enabled are exclusive (KEDA makes an HPA of its own)" }}
{{- end }}
{{- if and (eq .Values.mode "gateway") (not .Values.gateway.upstreams) }}
{{- fail "mode gateway needs gateway.upstreams" }}
{{- end }}
{{- if and (eq .Values.mode "service") (or .Values.gateway.upstreams .Values.gateway.catalog) }}
{{- fail "gateway.upstreams and gateway.catalog need mode: gateway" }}
{{- end }}
{{- if and (not .Values.auth.allowUnauthenticated) (not .Values.auth.issuer) }}
{{- fail "auth.issuer (with auth.resource) is required unless auth.allowUnauthenticated: vigil refuses to serve /mcp on 0.0.0.0 without authorization" }}
{{- end }}
{{- if and .Values.auth.issuer (not .Values.auth.resource) }}
{{- fail "auth.resource (the public https URL of /mcp) is required with auth.issuer" }}
{{- end }}
{{- if and .Values.redis.url (not .Values.redis.existingSecret) }}
{{- fail "redis.url needs redis.existingSecret (the Redis password, the request-state key and the cluster key)" }}
{{- end }}
{{- if and (eq .Values.sandbox.boundary "vigil") (eq .Values.sandbox.seccompProfile.type "RuntimeDefault") }}
{{- fail "sandbox.boundary vigil needs sandbox.seccompProfile Localhost (a profile allowing unprivileged user namespaces) or Unconfined: RuntimeDefault refuses the user namespaces vigil's sandbox starts in (see the chart's README)" }}
{{- end }}
{{- if and .Values.autoscaling.keda.enabled (lt (int .Values.autoscaling.keda.scaleDownStabilizationSeconds) (int (include "vigil.terminationGrace" .))) }}
{{- fail "autoscaling.keda.scaleDownStabilizationSeconds must be at least the drain (terminationGracePeriodSeconds)" }}
{{- end }}
{{- if and .Values.autoscaling.hpa.enabled (lt (int .Values.autoscaling.hpa.scaleDownStabilizationSeconds) (int (include "vigil.terminationGrace" .))) }}
{{- fail "autoscaling.hpa.scaleDownStabilizationSeconds must be at least the drain (terminationGracePeriodSeconds)" }}
{{- end }}
{{- end }}
