{{/* Chart name, truncated to 63 characters (a DNS label). */}}
{{- define "episodic.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name when it already contains the chart name ("episodic" -> "episodic"). */}}
{{- define "episodic.fullname" -}}
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

{{- define "episodic.selectorLabels" -}}
app.kubernetes.io/name: {{ include "episodic.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "episodic.labels" -}}
{{ include "episodic.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: episodic
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "episodic.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "episodic.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "episodic.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* "true" when the controller runs with --leader-elect. */}}
{{- define "episodic.leaderElect" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}

{{- define "episodic.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{/* The episode-pod defaults file (--episode-defaults): only the fields that are set. */}}
{{- define "episodic.episodeDefaults" -}}
{{- $e := .Values.episodes }}
{{- $d := dict }}
{{- range $key := list "image" "imagePullPolicy" "serviceAccountName" "priorityClassName" }}
{{- if get $e $key }}{{ $_ := set $d $key (get $e $key) }}{{ end }}
{{- end }}
{{- range $key := list "imagePullSecrets" "nodeSelector" "tolerations" "affinity" "resources" "podSecurityContext" "securityContext" "podLabels" "podAnnotations" }}
{{- if get $e $key }}{{ $_ := set $d $key (get $e $key) }}{{ end }}
{{- end }}
{{- if $e.apiKeys }}
{{- $env := list }}
{{- range $e.apiKeys }}
{{- $env = append $env (dict "name" .env "valueFrom" (dict "secretKeyRef" (dict "name" .secretName "key" .secretKey "optional" (ne (toString .optional) "false")))) }}
{{- end }}
{{- $_ := set $d "env" $env }}
{{- end }}
{{- $s := dict }}
{{- $sv := .Values.sandbox | default dict }}
{{- if $sv.defaultRuntimeClass }}{{ $_ := set $s "runtimeClassName" $sv.defaultRuntimeClass }}{{ end }}
{{- if $sv.enforce }}{{ $_ := set $s "enforce" true }}{{ end }}
{{- if $sv.gateway }}{{ $_ := set $s "gateway" $sv.gateway }}{{ end }}
{{- if ($sv.proxy | default dict).enabled }}
{{- $labels := include "episodic.selectorLabels" . | fromYaml }}
{{- $host := printf "%s-sandbox-proxy.%s.svc" (include "episodic.fullname" .) .Release.Namespace }}
{{- $_ := set $s "proxy" (dict "host" $host "port" (int $sv.proxy.port) "namespace" .Release.Namespace "podLabels" $labels) }}
{{- end }}
{{- if $s }}{{ $_ := set $d "sandbox" $s }}{{ end }}
{{- if $d }}{{ toYaml $d }}{{ end }}
{{- end }}
