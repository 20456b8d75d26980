{{/* Names: <release>-adze unless the release name already contains "adze". */}}
{{- define "adze.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "adze.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "adze.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "adze.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* selectorLabels: (dict "ctx" $ "component" "provisioner") */}}
{{- define "adze.selectorLabels" -}}
app.kubernetes.io/name: {{ include "adze.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "adze.componentLabels" -}}
{{ include "adze.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "adze.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "adze.extender.scheme" -}}
{{ if .Values.extender.tls.enabled }}https{{ else }}http{{ end }}
{{- end }}

{{- define "adze.extender.tlsSecret" -}}
{{- if .Values.extender.tls.certManager.enabled -}}
{{ include "adze.fullname" . }}-extender-tls
{{- else -}}
{{ .Values.extender.tls.secretName }}
{{- end -}}
{{- end }}

{{- define "adze.extender.url" -}}
{{- if .Values.schedulerConfig.extenderURL -}}
{{ .Values.schedulerConfig.extenderURL }}
{{- else -}}
{{ include "adze.extender.scheme" . }}://{{ include "adze.fullname" . }}-extender.{{ .Release.Namespace }}.svc:{{ .Values.extender.port }}
{{- end -}}
{{- end }}

{{/*
The extender stanza of a KubeSchedulerConfiguration; identical in v1beta1 and v1.
*/}}
{{- define "adze.schedulerExtender" -}}
- urlPrefix: {{ include "adze.extender.url" . }}
  filterVerb: filter
  prioritizeVerb: prioritize
  preemptVerb: preempt
  bindVerb: bind
  weight: {{ .Values.schedulerConfig.weight }}
  nodeCacheCapable: true
  httpTimeout: {{ .Values.schedulerConfig.httpTimeout }}
  ignorable: {{ .Values.schedulerConfig.ignorable }}
  enableHTTPS: {{ .Values.extender.tls.enabled }}
  {{- if .Values.extender.tls.enabled }}
  tlsConfig:
    caFile: {{ .Values.schedulerConfig.caFile }}
  {{- end }}
{{- end }}

{{/*
A whole KubeSchedulerConfiguration: (dict "ctx" $ "apiVersion" "..." "inCluster" bool).
inCluster: the chart's own second scheduler (leader election in the release namespace).
Otherwise: the file for a control plane's kube-scheduler (default profile + extender).
*/}}
{{- define "adze.schedulerConfig" -}}
{{- $ctx := .ctx -}}
apiVersion: {{ .apiVersion }}
kind: KubeSchedulerConfiguration
{{- if .inCluster }}
leaderElection:
  leaderElect: {{ gt (int $ctx.Values.scheduler.replicas) 1 }}
  resourceName: {{ $ctx.Values.scheduler.name }}
  resourceNamespace: {{ $ctx.Release.Namespace }}
profiles:
  - schedulerName: {{ $ctx.Values.scheduler.name }}
{{- else }}
# Add clientConnection/leaderElection as your control plane sets them (kubeadm: the
# scheduler's kubeconfig /etc/kubernetes/scheduler.conf).
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
profiles:
  - schedulerName: default-scheduler
{{- end }}
extenders:
{{ include "adze.schedulerExtender" $ctx | indent 2 }}
{{- end }}
