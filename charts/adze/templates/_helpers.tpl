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

{{/* "true" unless extender.tls.insecurePlainHTTP: the extender serves HTTPS. */}}
{{- define "adze.extender.tls" -}}
{{- if not .Values.extender.tls.insecurePlainHTTP -}}true{{- end -}}
{{- end }}

{{/* Where the extender's certificates come from: certManager, secret or generated (the
chart's own CA, see adze.extender.pki); none with insecurePlainHTTP. */}}
{{- define "adze.extender.tlsSource" -}}
{{- $t := .Values.extender.tls -}}
{{- if $t.insecurePlainHTTP -}}none
{{- else if $t.certManager.enabled -}}certManager
{{- else if $t.secretName -}}secret
{{- else -}}generated
{{- end -}}
{{- end }}

{{- define "adze.extender.scheme" -}}
{{ if include "adze.extender.tls" . }}https{{ else }}http{{ end }}
{{- end }}

{{/* The Secret with the extender's tls.crt, tls.key and ca.crt. */}}
{{- define "adze.extender.tlsSecret" -}}
{{- if eq (include "adze.extender.tlsSource" .) "secret" -}}
{{ .Values.extender.tls.secretName }}
{{- else -}}
{{ include "adze.fullname" . }}-extender-tls
{{- end -}}
{{- end }}

{{/* "true" when the extender requires client certificates (TLS, and client auth not
turned off with insecureSkipClientAuth). */}}
{{- define "adze.extender.clientAuth" -}}
{{- if and (include "adze.extender.tls" .) (not .Values.extender.tls.insecureSkipClientAuth) -}}true{{- end -}}
{{- end }}

{{/* kube-scheduler's paths for the extender's CA and its own client certificate: the
values, else files in /etc/kubernetes/adze. Set while unused (no TLS, no client auth) they
are refused in scheduler-config.yaml rather than ignored. */}}
{{- define "adze.sc.caFile" -}}{{ .Values.schedulerConfig.caFile | default "/etc/kubernetes/adze/ca.crt" }}{{- end -}}
{{- define "adze.sc.clientCertFile" -}}{{ .Values.schedulerConfig.clientCertFile | default "/etc/kubernetes/adze/client.crt" }}{{- end -}}
{{- define "adze.sc.clientKeyFile" -}}{{ .Values.schedulerConfig.clientKeyFile | default "/etc/kubernetes/adze/client.key" }}{{- end -}}

{{/* The Secret holding kube-scheduler's client certificate (tls.crt, tls.key; ca.crt too
when the chart or cert-manager issues it). */}}
{{- define "adze.scheduler.clientSecret" -}}
{{- if eq (include "adze.extender.tlsSource" .) "secret" -}}
{{ .Values.extender.tls.clientSecretName }}
{{- else -}}
{{ include "adze.fullname" . }}-scheduler-client-tls
{{- end -}}
{{- end }}

{{/*
The chart's own PKI (tlsSource "generated"), made once per render and kept in .Values under
a key no values file can set (the schema refuses unknown keys): every template that needs
it (the Secrets, the webhook's caBundle) sees the same CA. The CA is read back from its
Secret when one exists (an upgrade), so the CA kube-scheduler trusts stays; the serving and
client certificates are issued anew from it on every render (1 year each).
Returns nothing; read it with (index .Values "_adzeGeneratedPKI").
*/}}
{{- define "adze.extender.pki" -}}
{{- if not (hasKey .Values "_adzeGeneratedPKI") -}}
{{- $fullname := include "adze.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $caName := printf "%s-extender-ca" $fullname -}}
{{- $existing := lookup "v1" "Secret" $ns $caName -}}
{{- $data := dict -}}
{{- if $existing }}{{ $data = $existing.data | default dict }}{{ end -}}
{{- $ca := dict -}}
{{- if and (index $data "tls.crt") (index $data "tls.key") -}}
{{- $ca = buildCustomCert (index $data "tls.crt") (index $data "tls.key") -}}
{{- else -}}
{{- $ca = genCA $caName 3650 -}}
{{- end -}}
{{- $svc := printf "%s-extender" $fullname -}}
{{- $dns := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- $ips := list -}}
{{- with .Values.extender.service.clusterIP }}{{ $ips = list . }}{{ end -}}
{{- $server := genSignedCert (printf "%s.%s.svc" $svc $ns) $ips $dns 365 $ca -}}
{{- $client := genSignedCert (printf "%s-scheduler" $fullname) nil nil 365 $ca -}}
{{- $_ := set .Values "_adzeGeneratedPKI" (dict "caCert" $ca.Cert "caKey" $ca.Key "tlsCert" $server.Cert "tlsKey" $server.Key "clientCert" $client.Cert "clientKey" $client.Key) -}}
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
No prioritizeVerb unless schedulerConfig.prioritize: the extender's filter already places a
pod on the node launched for it, and each verb is one more HTTP exchange inside
kube-scheduler's serial scheduling cycle.
*/}}
{{- define "adze.schedulerExtender" -}}
{{- $ctx := .ctx -}}
- urlPrefix: {{ include "adze.extender.url" $ctx }}
  filterVerb: filter
  {{- if $ctx.Values.schedulerConfig.prioritize }}
  prioritizeVerb: prioritize
  weight: {{ $ctx.Values.schedulerConfig.weight | default 5 }}
  {{- else if not (kindIs "invalid" $ctx.Values.schedulerConfig.weight) }}
  {{- fail "schedulerConfig.weight has no effect without schedulerConfig.prioritize: true (weight scales the prioritize score, which kube-scheduler is not asked for)" }}
  {{- end }}
  preemptVerb: preempt
  {{- if include "adze.extenderBinds" . }}
  bindVerb: bind
  {{- end }}
  nodeCacheCapable: true
  httpTimeout: {{ $ctx.Values.schedulerConfig.httpTimeout }}
  ignorable: {{ $ctx.Values.schedulerConfig.ignorable }}
  enableHTTPS: {{ include "adze.extender.tls" $ctx | eq "true" }}
  {{- if include "adze.extender.tls" $ctx }}
  tlsConfig:
    caFile: {{ include "adze.sc.caFile" $ctx }}
    {{- if include "adze.extender.clientAuth" $ctx }}
    certFile: {{ include "adze.sc.clientCertFile" $ctx }}
    keyFile: {{ include "adze.sc.clientKeyFile" $ctx }}
    {{- end }}
  {{- end }}
{{- end }}

{{/* Comment lines for a control plane's kube-scheduler: where the files of tlsConfig come
from, as commands. */}}
{{- define "adze.schedulerConfig.certHelp" -}}
{{- $ns := .Release.Namespace -}}
{{- $src := include "adze.extender.tlsSource" . -}}
{{- if ne $src "none" }}
{{- $secret := include "adze.scheduler.clientSecret" . }}
{{- if or (eq $src "secret") (not (include "adze.extender.clientAuth" .)) }}{{ $secret = include "adze.extender.tlsSecret" . }}{{ end }}
# The extender serves HTTPS{{ if include "adze.extender.clientAuth" . }} and answers only clients presenting a certificate of its CA{{ end }}.
# Put the files of tlsConfig below on every control-plane node, readable by kube-scheduler only:
#   umask 077; mkdir -p {{ dir (include "adze.sc.caFile" .) }}
#   kubectl -n {{ $ns }} get secret {{ $secret }} -o jsonpath='{.data.ca\.crt}' | base64 -d >{{ include "adze.sc.caFile" . }}
{{- if include "adze.extender.clientAuth" . }}
{{- if eq $src "secret" }}
# and kube-scheduler's client certificate, signed by that CA, as
#   {{ include "adze.sc.clientCertFile" . }} and {{ include "adze.sc.clientKeyFile" . }}
{{- else }}
#   kubectl -n {{ $ns }} get secret {{ $secret }} -o jsonpath='{.data.tls\.crt}' | base64 -d >{{ include "adze.sc.clientCertFile" . }}
#   kubectl -n {{ $ns }} get secret {{ $secret }} -o jsonpath='{.data.tls\.key}' | base64 -d >{{ include "adze.sc.clientKeyFile" . }}
{{- end }}
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
{{- include "adze.schedulerConfig.certHelp" $ctx }}
{{- if eq $ctx.Values.extender.preemption.policy "hold" }}
# On 1.24+ also run kube-scheduler with --pod-max-in-unschedulable-pods-duration=60s: from
# 1.28 a pod whose preemption the extender holds is retried only after a cluster event that
# could free room for it or after that duration (default 5m), so the hold limit would end late.
{{- end }}
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
