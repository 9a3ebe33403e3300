// Package simfleet is gpunode's embedded demo and test harness: a local kube-apiserver and
// etcd (the binaries hack/k8s-test-assets.sh builds), gpunode's CRDs, the cluster
// controller (acceptance and remediation) and N node agents on simulated GPUs, all in one
// process (`gpunode sim fleet`).
//
// A running fleet keeps its state in one folder: the kubeconfig of its API server
// (kubectl and `gpunode explain` point at it), each node's remediation journal and
// evidence bundles, the controller's and agents' log, the API server's and etcd's output
// (controlplane.log), and the control socket fleet.sock. The API server and etcd run as
// child processes (package controlplane), not through envtest: the binary links no test
// code.
//
// The socket serves a small HTTP API through which `gpunode sim inject` injects faults
// into a running simulated node (control.go documents it).
package simfleet
