package nodepolicy

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// One schema: a value at or past each bound of the CRD is refused by the API server exactly
// when `gpunode accept --policy` refuses it in a file. (The file is stricter only where the
// CRD cannot say it: version constraints are parsed, names of layers are checked the same.)
func TestAPolicyFileAndTheAPIServerAcceptTheSameValues(t *testing.T) {
	_, c := testenv.Start(t)
	cases := []struct {
		name string
		body string
	}{
		{"64 GPUs per node are allowed", "classes:\n  - class: a\n    gpus: 64\n"},
		{"65 GPUs per node are not", "classes:\n  - class: a\n    gpus: 65\n"},
		{"64 NVLinks per GPU are allowed", "classes:\n  - class: a\n    nvlinksPerGPU: 64\n"},
		{"65 NVLinks per GPU are not", "classes:\n  - class: a\n    nvlinksPerGPU: 65\n"},
		{"PCIe generation 6 is allowed", "classes:\n  - class: a\n    pcieGen: 6\n"},
		{"PCIe generation 7 is not", "classes:\n  - class: a\n    pcieGen: 7\n"},
		{"a PCIe width of 16 is allowed", "classes:\n  - class: a\n    pcieWidth: 16\n"},
		{"a PCIe width of 12 is not", "classes:\n  - class: a\n    pcieWidth: 12\n"},
		{"an unknown MIG mode is not", "classes:\n  - class: a\n    mig: sometimes\n"},
		{"an unknown fabric expectation is not", "classes:\n  - class: a\n    fabric: maybe\n"},
		{"150 °C is allowed", "acceptance:\n  thresholds:\n    maxTemperatureC: 150\n"},
		{"151 °C is not", "acceptance:\n  thresholds:\n    maxTemperatureC: 151\n"},
		{"a power share of 1 percent is allowed", "acceptance:\n  thresholds:\n    maxPowerPercent: 1\n"},
		{"a power share of 0 percent is not", "acceptance:\n  thresholds:\n    maxPowerPercent: 0\n"},
		{"a power share of 101 percent is not", "acceptance:\n  thresholds:\n    maxPowerPercent: 101\n"},
		{"a performance floor of 100 percent is allowed", "acceptance:\n  thresholds:\n    minPerformancePercent: 100\n"},
		{"a performance floor of 101 percent is not", "acceptance:\n  thresholds:\n    minPerformancePercent: 101\n"},
		{"a negative retired-page limit is not", "acceptance:\n  thresholds:\n    maxRetiredPages: -1\n"},
		{"a negative rate is not", "acceptance:\n  thresholds:\n    pcieReplaysPerMinute: -1\n"},
		{"a negative ECC rate is not", "acceptance:\n  thresholds:\n    correctedECCPerMinute: -1\n"},
		{"a negative replay limit is not", "acceptance:\n  thresholds:\n    maxPCIeReplays: -1\n"},
		{"a negative corrected-ECC limit is not", "acceptance:\n  thresholds:\n    maxCorrectedECC: -1\n"},
		{"a negative /dev/shm size is not", "acceptance:\n  host:\n    minShmMiB: -1\n"},
		{"a negative memory size is not", "classes:\n  - class: a\n    minMemoryMiB: -1\n"},
		{"a negative hugepage count is not", "acceptance:\n  host:\n    minHugepages: -1\n"},
		{"a negative GPU count is not", "classes:\n  - class: a\n    gpus: -1\n"},
		{"an unknown IOMMU mode is not", "acceptance:\n  host:\n    iommu: on\n"},
		{"cgroup version 3 is not", "acceptance:\n  host:\n    cgroupVersion: 3\n"},
		{"101 percent free is not", "acceptance:\n  host:\n    minFreePercent: 101\n"},
		{"the NVIDIA runtime can be required", "acceptance:\n  host:\n    nvidiaRuntime: required\n"},
		{"the NVIDIA runtime cannot be \"require\"d (that is kubeletReservations' word)", "acceptance:\n  host:\n    nvidiaRuntime: require\n"},
		{"an unknown kubelet reservations mode is not", "acceptance:\n  host:\n    kubeletReservations: strict\n"},
		{"a DRA taint effect of NoExecute is allowed", "dra:\n  unhealthyEffect: NoExecute\n"},
		{"a DRA taint effect of None is not", "dra:\n  unhealthyEffect: None\n"},
		{"a layer of the API is allowed", "acceptance:\n  layers: [kubernetes]\n"},
		{"a layer the API does not have is not", "acceptance:\n  layers: [gpu]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := spec(tc.body)
			_, fileErr := Parse("p.yaml", []byte(text))
			var gp v1alpha1.GPUNodePolicy
			if err := yaml.Unmarshal([]byte(text), &gp); err != nil {
				t.Fatal(err)
			}
			apiErr := c.Create(t.Context(), &gp, client.DryRunAll)
			if (fileErr == nil) != (apiErr == nil) {
				t.Errorf("the file loader says %v, the API server %v: one schema, two answers", fileErr, apiErr)
			}
		})
	}
}
