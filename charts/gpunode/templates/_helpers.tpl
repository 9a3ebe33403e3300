{{/* The release's base name: the release name when it already contains "gpunode". */}}
{{- define "gpunode.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpunode.agentName" -}}{{ include "gpunode.fullname" . }}-agent{{- end -}}
{{- define "gpunode.controllerName" -}}{{ include "gpunode.fullname" . }}-controller{{- end -}}

{{/* The agent's service-account user, as the API server names it in request.userInfo. */}}
{{- define "gpunode.agentUser" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "gpunode.agentName" . }}
{{- end -}}

{{/*
A component's image reference (called with dict "root" $ "image" .Values.agent.image).
Precedence, for each part: the component's own value (agent.image.*, controller.image.*),
then the chart-wide image.*, then the default (the tag: the chart's appVersion).
image.registry, when set, replaces the registry of the chosen repository (its first path
element when that names a host: it holds a "." or a ":", or is "localhost"), or is put in
front of a repository that names none: an offline site's mirror for every image at once.
*/}}
{{- define "gpunode.imageRef" -}}
{{- $root := .root -}}
{{- $own := .image | default dict -}}
{{- $repo := $own.repository | default $root.Values.image.repository -}}
{{- $tag := $own.tag | default $root.Values.image.tag | default $root.Chart.AppVersion -}}
{{- with $root.Values.image.registry -}}
{{- $parts := splitList "/" $repo -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $repo = rest $parts | join "/" -}}
{{- end -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) $repo -}}
{{- end -}}
{{ $repo }}:{{ $tag }}
{{- end -}}

{{/* A component's pull policy: its own (agent.image.pullPolicy, ...), else image.pullPolicy. */}}
{{- define "gpunode.imagePullPolicy" -}}
{{- $own := .image | default dict -}}
{{ $own.pullPolicy | default .root.Values.image.pullPolicy }}
{{- end -}}

{{/*
The imagePullSecrets of every pod: each entry a Secret's name ("regcred") or an object
({name: regcred}), rendered as Kubernetes LocalObjectReferences.
*/}}
{{- define "gpunode.imagePullSecrets" -}}
{{- $refs := list -}}
{{- range .Values.imagePullSecrets -}}
{{- if kindIs "string" . -}}
{{- $refs = append $refs (dict "name" .) -}}
{{- else -}}
{{- $refs = append $refs (dict "name" .name) -}}
{{- end -}}
{{- end -}}
{{- toYaml $refs -}}
{{- end -}}

{{- define "gpunode.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpunode.agentSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "gpunode.controllerSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/*
The agent's security context. It runs as root (uid 0): the kubelet's
pod-resources socket and the host's state folder are root's, and host files are read as root.
privileged (agent.privileged, the default) is what lets it open /dev/kmsg: Kubernetes allows
a host device node in a container's device cgroup only for a privileged container, and
reading /dev/kmsg needs CAP_SYSLOG when kernel.dmesg_restrict=1. Without it every capability
is dropped and the kernel log is not followed.
*/}}
{{- define "gpunode.agentSecurityContext" -}}
runAsUser: 0
readOnlyRootFilesystem: true
{{- if .Values.agent.privileged }}
privileged: true
{{- else }}
privileged: false
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}
{{- end -}}

{{/* The agent's mounts of the pod-resources socket, the kernel log and the scenario. */}}
{{- define "gpunode.commonMounts" -}}
# Scratch space: the root filesystem is read-only.
- name: tmp
  mountPath: /tmp
# The kubelet's pod-resources API (a unix socket; connecting works on a read-only mount):
# which pod holds which GPU, for pod attribution of metrics and faults.
- name: pod-resources
  mountPath: /var/lib/kubelet/pod-resources
  readOnly: true
{{- $sim := include "gpunode.sim" . }}
{{- if and .Values.agent.privileged (not $sim) }}
# The kernel log, read-only: NVIDIA XIDs and other GPU faults. Opening it needs the device
# cgroup entry and CAP_SYSLOG (kernel.dmesg_restrict=1) that privileged gives. Simulated GPUs
# have their own kernel log.
- name: kmsg
  mountPath: /dev/kmsg
  readOnly: true
{{- end }}
{{- if .Values.agent.simScenario }}
# The simulated GPUs' scenario (agent.simScenario), read-only.
- name: sim-scenario
  mountPath: /etc/gpunode/sim
  readOnly: true
{{- end }}
{{- end -}}

{{/*
The agent's --sim: the preset (agent.sim), the mounted scenario
(agent.simScenario, from the ConfigMap <release>-agent-sim), or "" for real GPUs.
*/}}
{{- define "gpunode.sim" -}}
{{- if .Values.agent.simScenario }}/etc/gpunode/sim/scenario.yaml{{ else }}{{ .Values.agent.sim }}{{ end }}
{{- end -}}
