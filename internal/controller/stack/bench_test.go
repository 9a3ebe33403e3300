package stack

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// BenchmarkAPoolPassOf5000Nodes is the decisions of one pool pass over a 5,000-node pool
// among 10 pools: membership of every node, readiness of every member, the status.
func BenchmarkAPoolPassOf5000Nodes(b *testing.B) {
	const n = 5000
	pools := make([]v1alpha1.StackPool, 10)
	for i := range pools {
		pools[i] = *containerPool(fmt.Sprintf("pool-%d", i))
	}
	pool := &pools[0]
	labels := make([]map[string]string, n)
	facts := make([]NodeFacts, n)
	for i := range n {
		name := fmt.Sprintf("node-%04d", i)
		labels[i] = map[string]string{"pool": pool.Name, "kubernetes.io/hostname": name}
		driver := driverWanted
		if i%50 == 0 {
			driver = "570.172.08"
		}
		facts[i] = NodeFacts{Name: name, GPUNode: reportingGPUNode(name, driver, true), Pods: []corev1.Pod{
			runningPod(pool.Name, ComponentDriver, name, driverWanted), runningPod(pool.Name, ComponentToolkit, name, toolkitWanted),
		}}
	}
	b.ReportAllocs()
	for b.Loop() {
		pf := PoolFacts{}
		selectors, err := Selectors(pools)
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if m := selectors.Member(labels[i]); m.Pool() != pool.Name {
				b.Fatalf("membership of node %d: %v", i, m)
			}
			src := Effective(pool, GPUOperator{}, labels[i])
			pf.Members = append(pf.Members, Readiness(pool, src, facts[i]))
			pf.Sources = append(pf.Sources, src)
		}
		st, _ := Aggregate(pool, pf)
		if st.Nodes != n || st.ReadyNodes != n-n/50 {
			b.Fatalf("status counts %d nodes, %d ready", st.Nodes, st.ReadyNodes)
		}
	}
}
