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

{{/* "true" when the extender requires client certificates (TLS on, clientAuth on). */}}
{{/* kube-scheduler's paths for the extender's CA and its own client certificate: the
values, else files in /etc/kubernetes/adze. Set while unused (no TLS, no client auth) they
are refused in scheduler-config.yaml rather than ignored. */}}
{{- define "adze.sc.caFile" -}}{{ .Values.schedulerConfig.caFile | default "/etc/kubernetes/adze/ca.crt" }}{{- end -}}
{{- define "adze.sc.clientCertFile" -}}{{ .Values.schedulerConfig.clientCertFile | default "/etc/kubernetes/adze/client.crt" }}{{- end -}}
{{- define "adze.sc.clientKeyFile" -}}{{ .Values.schedulerConfig.clientKeyFile | default "/etc/kubernetes/adze/client.key" }}{{- end -}}

{{- define "adze.extender.clientAuth" -}}
{{- if and .Values.extender.tls.enabled .Values.extender.tls.clientAuth -}}true{{- end -}}
{{- end }}

{{/* The Secret holding the chart scheduler's client certificate. */}}
{{- define "adze.scheduler.clientSecret" -}}
{{- if .Values.extender.tls.certManager.enabled -}}
{{ include "adze.fullname" . }}-scheduler-client-tls
{{- else -}}
{{ .Values.extender.tls.clientSecretName }}
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
Whether kube-scheduler should send binds to the extender: (dict "ctx" $ "version" "v1.33.0")
renders "true" or nothing. kube-scheduler before 1.30 does not skip an ignorable extender's
bind when the extender is down (it skips only filter, prioritize and preempt; fixed upstream
in 1.30), so there binding through the extender would stop all scheduling during an extender
outage. schedulerConfig.bind: auto binds through the extender only where that cannot happen.
*/}}
{{- define "adze.extenderBinds" -}}
{{- $sc := .ctx.Values.schedulerConfig -}}
{{- $v := regexFind "[0-9]+\\.[0-9]+\\.[0-9]+" (toString .version) -}}
{{- $skips := and $v (semverCompare ">=1.30.0" $v) -}}
{{- if eq $sc.bind "extender" -}}
{{- if and $sc.ignorable (not $skips) -}}
{{- fail (printf "schedulerConfig.bind=extender with schedulerConfig.ignorable=true: kube-scheduler %s does not skip a down extender's bind (only 1.30+ does), so an extender outage would stop all binding; use schedulerConfig.bind=auto, or ignorable=false to wait for the extender on purpose" (default "of unknown version" .version)) -}}
{{- end -}}
true
{{- else if and (eq $sc.bind "auto") (or (not $sc.ignorable) $skips) -}}
true
{{- end -}}
{{- end }}

{{/*
The extender stanza of a KubeSchedulerConfiguration; identical in v1beta1 and v1.
(dict "ctx" $ "version" "<the kube-scheduler's version>")
*/}}
{{- define "adze.schedulerExtender" -}}
{{- $ctx := .ctx -}}
- urlPrefix: {{ include "adze.extender.url" $ctx }}
  filterVerb: filter
  prioritizeVerb: prioritize
  preemptVerb: preempt
  {{- if include "adze.extenderBinds" . }}
  bindVerb: bind
  {{- end }}
  weight: {{ $ctx.Values.schedulerConfig.weight }}
  nodeCacheCapable: true
  httpTimeout: {{ $ctx.Values.schedulerConfig.httpTimeout }}
  ignorable: {{ $ctx.Values.schedulerConfig.ignorable }}
  enableHTTPS: {{ $ctx.Values.extender.tls.enabled }}
  {{- if $ctx.Values.extender.tls.enabled }}
  tlsConfig:
    caFile: {{ include "adze.sc.caFile" $ctx }}
    {{- if include "adze.extender.clientAuth" $ctx }}
    certFile: {{ include "adze.sc.clientCertFile" $ctx }}
    keyFile: {{ include "adze.sc.clientKeyFile" $ctx }}
    {{- end }}
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
{{- with $ctx.Values.schedulerConfig }}
{{- if not (kindIs "invalid" .podInitialBackoffSeconds) }}
podInitialBackoffSeconds: {{ int .podInitialBackoffSeconds }}
{{- end }}
{{- if not (kindIs "invalid" .podMaxBackoffSeconds) }}
podMaxBackoffSeconds: {{ int .podMaxBackoffSeconds }}
{{- end }}
{{- end }}
extenders:
{{- /* Whose version decides bindVerb: the chart's own scheduler runs its image; a control
plane's kube-scheduler runs the cluster's version, and v1beta1 exists only up to 1.22. */}}
{{- $version := $ctx.Capabilities.KubeVersion.Version -}}
{{- if .inCluster }}{{ $version = $ctx.Values.scheduler.image.tag }}
{{- else if hasSuffix "v1beta1" .apiVersion }}{{ $version = "1.22.0" }}{{ end }}
{{ include "adze.schedulerExtender" (dict "ctx" $ctx "version" $version) | indent 2 }}
{{- end }}
