//go:build tools

// Package kwok pins sigs.k8s.io/kwok, which plays kubelet for the simulated GPU nodes
// (node heartbeats, pods Running and Ready, graceful deletion). It is a module of its
// own because kwok needs newer k8s.io libraries than the pinned Kubernetes release.
package kwok

import _ "sigs.k8s.io/kwok/pkg/kwok/cmd"
