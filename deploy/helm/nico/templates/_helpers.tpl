{{/* Labels on every object. */}}
{{- define "nico.labels" -}}
app.kubernetes.io/name: nico
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The pod selector: the same label deploy/ uses. */}}
{{- define "nico.selector" -}}
app.kubernetes.io/name: nico
{{- end -}}

{{/* The objects of a YAML file shipped in files/ (symbolic links to deploy/base, the one source). */}}
{{- define "nico.docs" -}}
{{- $docs := list -}}
{{- range regexSplit "(?m)^---[ \t]*$" (.Files.Get .file) -1 -}}
{{- $doc := fromYaml . -}}
{{- if and $doc (hasKey $doc "kind") -}}
{{- $docs = append $docs $doc -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "items" $docs) -}}
{{- end -}}

{{/* Fails the render with a clear message when a value is not one of the allowed ones. */}}
{{- define "nico.oneOf" -}}
{{- if not (has .value .allowed) -}}
{{- fail (printf "values: %s must be one of %s; got %q" .name (join ", " .allowed) (toString .value)) -}}
{{- end -}}
{{- end -}}
