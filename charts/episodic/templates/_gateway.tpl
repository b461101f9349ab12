{{/*
The model gateway (gateway.enabled): the controller's flags and container port, kept here so the deployment
template only includes them. Pods are given the Service's cluster DNS name.
*/}}
{{- define "episodic.gatewayUrl" -}}
http://{{ include "episodic.fullname" . }}-gateway.{{ .Release.Namespace }}.svc:{{ .Values.gateway.service.port }}
{{- end }}

{{- define "episodic.gatewayArgs" -}}
{{- if .Values.gateway.enabled }}
- --gateway-addr=0.0.0.0:{{ .Values.gateway.port }}
- --gateway-url={{ include "episodic.gatewayUrl" . }}
{{- end }}
{{- end }}

{{- define "episodic.gatewayPort" -}}
{{- if .Values.gateway.enabled }}
- name: gateway
  containerPort: {{ .Values.gateway.port }}
  protocol: TCP
{{- end }}
{{- end }}

{{/* Where the controller may get Secrets and AgentCredentials: gateway.secretNamespaces, else watchNamespace, else the release's. */}}
{{- define "episodic.gatewayNamespaces" -}}
{{- if .Values.gateway.secretNamespaces }}
{{- join "," .Values.gateway.secretNamespaces }}
{{- else }}
{{- default .Release.Namespace .Values.watchNamespace }}
{{- end }}
{{- end }}
