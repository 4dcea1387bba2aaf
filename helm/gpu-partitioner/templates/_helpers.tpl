{{/* The chart name, or nameOverride. */}}
{{- define "gpu-partitioner.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects. */}}
{{- define "gpu-partitioner.fullname" -}}
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

{{/* --payload-namespaces: DCM's namespace, then dcm.payloadNamespaces, each once. */}}
{{- define "gpu-partitioner.payloadNamespaces" -}}
{{- prepend .Values.dcm.payloadNamespaces .Values.dcm.namespace | uniq | join "," }}
{{- end }}

{{/* The ConfigMaps the operator may write as DCM's config, comma-separated; "" for any.
dcm.configMap, an older chart's single name, still counts. */}}
{{- define "gpu-partitioner.dcmConfigMaps" -}}
{{- $names := .Values.dcm.configMaps | default list }}
{{- if .Values.dcm.configMap }}{{ $names = append $names .Values.dcm.configMap }}{{ end }}
{{- $names | uniq | join "," }}
{{- end }}

{{/* chart label value: name-version */}}
{{- define "gpu-partitioner.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "gpu-partitioner.labels" -}}
helm.sh/chart: {{ include "gpu-partitioner.chart" . }}
{{ include "gpu-partitioner.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpu-partitioner
{{- end }}

{{/* Labels that select the operator's pods. */}}
{{- define "gpu-partitioner.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-partitioner.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount's name. */}}
{{- define "gpu-partitioner.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpu-partitioner.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference. */}}
{{- define "gpu-partitioner.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
