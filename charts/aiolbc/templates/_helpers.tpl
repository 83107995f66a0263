{{/* The chart's name, or nameOverride. */}}
{{- define "aiolbc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name (upstream's rule): the release name when it holds the chart's. */}}
{{- define "aiolbc.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "aiolbc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aiolbc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every object's labels; `component` names the part, as in manifests/. */}}
{{- define "aiolbc.labels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "aiolbc.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
app.kubernetes.io/part-of: aiolbc
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- with $root.Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "aiolbc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "aiolbc.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Upstream's names for the webhook objects, which the controller's flags default to (a
switch from upstream finds them where they were). */}}
{{- define "aiolbc.webhookService" -}}aws-load-balancer-webhook-service{{- end -}}
{{- define "aiolbc.webhookConfiguration" -}}aws-load-balancer-webhook{{- end -}}
{{- define "aiolbc.webhookSecret" -}}aws-load-balancer-tls{{- end -}}
{{- /* The controller's default --leader-election-id: with --controller-id, its own. */ -}}
{{- define "aiolbc.leaseName" -}}aws-load-balancer-controller-leader{{ with .Values.controllerId }}-{{ . }}{{ end }}{{- end -}}

{{/* How the webhook serving certificate comes: self-managed, cert-manager or given. */}}
{{- define "aiolbc.webhookTLSMode" -}}
{{- if .Values.enableCertManager -}}cert-manager
{{- else if and .Values.webhookTLS.caCert .Values.webhookTLS.cert .Values.webhookTLS.key -}}given
{{- else -}}self-managed
{{- end -}}
{{- end -}}

{{- define "aiolbc.metricsSecure" -}}
{{- if .Values.metricsSecure -}}true{{- end -}}
{{- end -}}

{{- define "aiolbc.metricsBindAddr" -}}
{{- if .Values.metricsBindAddr -}}{{ .Values.metricsBindAddr }}
{{- else if .Values.metricsSecure -}}:8443
{{- else -}}:8080
{{- end -}}
{{- end -}}

{{- define "aiolbc.metricsPort" -}}
{{- $addr := include "aiolbc.metricsBindAddr" . -}}
{{- $parts := splitList ":" $addr -}}
{{- last $parts -}}
{{- end -}}

{{- define "aiolbc.webhookPort" -}}
{{- .Values.webhookBindPort | default 9443 -}}
{{- end -}}

{{/* name=value,... of a map, keys sorted. */}}
{{- define "aiolbc.csv" -}}
{{- $pairs := list -}}
{{- range $key, $value := . -}}
{{- $pairs = append $pairs (printf "%s=%v" $key $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}
