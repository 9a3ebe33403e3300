package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The scheme registration depends on k8s.io/apimachinery alone, so that the API package
// stays cheap to import (controller-runtime's scheme.Builder is deprecated for that reason).
var (
	// GroupVersion is gpunode.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds GPUNode, GPUNodePolicy, AcceptanceRecord, StackPool, PerformanceBaseline and StackUpgrade (and their lists) to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&GPUNode{}, &GPUNodeList{},
		&GPUNodePolicy{}, &GPUNodePolicyList{},
		&AcceptanceRecord{}, &AcceptanceRecordList{},
		&StackPool{}, &StackPoolList{},
		&PerformanceBaseline{}, &PerformanceBaselineList{},
		&StackUpgrade{}, &StackUpgradeList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
