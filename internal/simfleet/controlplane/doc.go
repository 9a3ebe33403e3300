// Package controlplane runs a local kube-apiserver and etcd as child processes, for
// `gpunode sim fleet`: no kubelet, no scheduler, no controller-manager, one admin user.
//
// It is what controller-runtime's envtest does, without envtest: envtest is test code
// (its packages create folders under /tmp when they are loaded, which panics in a
// container with a read-only root), and the shipped binary must not link it.
//
// Start makes a folder (certificates and etcd's data), generates a certificate authority,
// the API server's serving certificate, an admin client certificate (group system:masters)
// and a service-account signing key, picks free loopback ports, runs etcd and then
// kube-apiserver from the assets folder, and waits until the API server is ready and the
// default namespace exists. Stop ends both processes (SIGTERM, then SIGKILL) and removes
// the folder when Start made it.
package controlplane
