// Package record is the durable acceptance record: every field of the node acceptance
// record template, the checks behind it, rendered as versioned JSON and as
// Markdown, and written atomically.
package record

import (
	"time"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/frameworks"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Record identity. The JSON schema is versioned: readers check APIVersion.
const (
	APIVersion = "gpunode.dev/record/v1"
	Kind       = "AcceptanceRecord"
)

// Result of a run.
const (
	ResultPassed = "passed"
	ResultFailed = "failed"
)

// Record is one acceptance run on one node.
type Record struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// ID is unique per run: node, start time and a short hash of the content.
	ID         string    `json:"id"`
	Node       string    `json:"node"`
	Result     string    `json:"result"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// DurationSeconds is the time the checks took, facts gathering included.
	DurationSeconds float64        `json:"durationSeconds"`
	Tool            buildinfo.Info `json:"tool"`
	Policy          PolicyRef      `json:"policy"`
	// Backend is "nvml" or "sim" (a record from simulated GPUs says so).
	Backend string `json:"backend"`
	// Driver is the driver the GPUs ran on during the run, as the backend reported it.
	Driver   gpu.Driver      `json:"driver,omitzero"`
	Layers   []accept.Layer  `json:"layers"`
	Template Template        `json:"template"`
	GPUs     []GPU           `json:"gpus"`
	Summary  accept.Summary  `json:"summary"`
	Checks   []accept.Result `json:"checks"`
	// Frameworks is the frameworks layer's (L5) report as its script wrote it, when that
	// layer ran and the script reported.
	Frameworks *frameworks.Report `json:"frameworks,omitempty"`
}

// PolicyRef names the policy a node was judged by.
type PolicyRef struct {
	Name string `json:"name"`
	// Source is the policy file, or "built-in".
	Source string `json:"source"`
	// SHA256 of the effective policy (after defaults), so two records can be compared.
	SHA256 string `json:"sha256"`
}

// Field is one line of the template: a value, or why it does not apply.
type Field struct {
	Value string `json:"value,omitempty"`
	// NotApplicable says why there is no value (not measured by this run, not on this host).
	NotApplicable string `json:"notApplicable,omitempty"`
}

// Template is the node acceptance record's template, field for field.
type Template struct {
	Node                    Field `json:"node"`
	HardwareSKUSerial       Field `json:"hardwareSkuSerial"`
	Firmware                Field `json:"firmware"`
	OSKernel                Field `json:"osKernel"`
	ContainerdKubelet       Field `json:"containerdKubelet"`
	DriverCUDA              Field `json:"driverCuda"`
	OperatorDevicePlugin    Field `json:"operatorDevicePlugin"`
	NICRDMA                 Field `json:"nicRdma"`
	GPUCountHealth          Field `json:"gpuCountHealth"`
	PCIeNVLinkNVSwitch      Field `json:"pcieNvlinkNvswitch"`
	DCGMDiagnostics         Field `json:"dcgmDiagnostics"`
	NCCLRDMAStorageBaseline Field `json:"ncclRdmaStorageBaseline"`
	RepresentativeTraining  Field `json:"representativeTraining"`
	RepresentativeInference Field `json:"representativeInference"`
	ResultEvidenceURI       Field `json:"resultEvidenceUri"`
}

// Labels lists the template's fields with the acceptance-record template's wording, in its order.
func (t *Template) Labels() []struct {
	Label string
	Field *Field
} {
	return []struct {
		Label string
		Field *Field
	}{
		{"Node", &t.Node},
		{"Hardware SKU / Serial", &t.HardwareSKUSerial},
		{"BMC / BIOS / GPU / NIC firmware", &t.Firmware},
		{"OS / kernel", &t.OSKernel},
		{"containerd / kubelet", &t.ContainerdKubelet},
		{"GPU driver / CUDA compatibility", &t.DriverCUDA},
		{"GPU Operator / Device Plugin or DRA", &t.OperatorDevicePlugin},
		{"NIC / RDMA driver", &t.NICRDMA},
		{"GPU count and health", &t.GPUCountHealth},
		{"PCIe / NVLink / NVSwitch", &t.PCIeNVLinkNVSwitch},
		{"DCGM diagnostics", &t.DCGMDiagnostics},
		{"NCCL / RDMA / storage baseline", &t.NCCLRDMAStorageBaseline},
		{"Representative training", &t.RepresentativeTraining},
		{"Representative inference", &t.RepresentativeInference},
		{"Result / evidence URI", &t.ResultEvidenceURI},
	}
}

// GPU is one GPU as accepted.
type GPU struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Serial    string `json:"serial,omitempty"`
	Model     string `json:"model"`
	MemoryMiB uint64 `json:"memoryMiB"`
	VBIOS     string `json:"vbios,omitempty"`
	PCIBusID  string `json:"pciBusId"`
	PCIe      string `json:"pcie"`
	// Status is the worst status of the checks that warn or fail because of this GPU: their
	// message names it, its evidence line shows the finding of a GPU the message names, or
	// an evidence line is about this GPU alone (an XID).
	Status accept.Status `json:"status"`
}
