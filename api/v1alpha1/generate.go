package v1alpha1

// Generated code, committed and checked for staleness by hack/test.sh:
//   - zz_generated.deepcopy.go (DeepCopy* for every type here);
//   - ../../config/crd/gpunode.dev_*.yaml (one CRD per kind, with the OpenAPI and CEL
//     validation written as markers in the *_types.go files).
//
// Measured values (performance) are float64: allowDangerousTypes lets controller-gen
// write them as OpenAPI numbers.
//
// controller-gen is pinned in go.mod as a tool, so `go generate ./api/...` needs nothing else.

//go:generate go tool controller-gen object paths=./...
//go:generate go tool controller-gen crd:allowDangerousTypes=true paths=./... output:crd:artifacts:config=../../config/crd
