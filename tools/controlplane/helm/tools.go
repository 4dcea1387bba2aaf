//go:build tools

// Package helm pins helm.sh/helm/v3, the Helm CLI that installs and tests the
// gpu-partitioner chart (helm/gpu-partitioner). It is a module of its own so that its
// k8s.io libraries don't move the pinned Kubernetes release's.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
