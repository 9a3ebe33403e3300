package baseline

// Datasheet peaks per model. HBM bandwidth is the vendor's memory bandwidth (one direction
// of traffic: a copy moving it reads and writes, and the read + write count is what the
// copy test reports, so the spec number is the ceiling of that count). FP32 and FP64 are
// the non-tensor-core figures. Names are those the driver reports (nvidia-smi
// --query-gpu=name), matched after Normalize.
var builtinRows = []Row{
	{Model: "A100 SXM4 40GB", Names: []string{"NVIDIA A100-SXM4-40GB"},
		HBMPeakGBps: 1555, FP32PeakTFLOPs: 19.5, FP64PeakTFLOPs: 9.7,
		Reference: "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), A100 40GB SXM column"},
	{Model: "A100 SXM4 80GB", Names: []string{"NVIDIA A100-SXM4-80GB"},
		HBMPeakGBps: 2039, FP32PeakTFLOPs: 19.5, FP64PeakTFLOPs: 9.7,
		Reference: "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), A100 80GB SXM column"},
	{Model: "A100 PCIe 40GB", Names: []string{"NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB PCIe"},
		HBMPeakGBps: 1555, FP32PeakTFLOPs: 19.5, FP64PeakTFLOPs: 9.7,
		Reference: "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), A100 40GB PCIe column"},
	{Model: "A100 PCIe 80GB", Names: []string{"NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB"},
		HBMPeakGBps: 1935, FP32PeakTFLOPs: 19.5, FP64PeakTFLOPs: 9.7,
		Reference: "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), A100 80GB PCIe column"},
	{Model: "H100 SXM5 80GB", Names: []string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"},
		HBMPeakGBps: 3350, FP32PeakTFLOPs: 67, FP64PeakTFLOPs: 34,
		Reference: "NVIDIA H100 Tensor Core GPU datasheet (h100-datasheet-2430615), H100 SXM column"},
	{Model: "H100 PCIe 80GB", Names: []string{"NVIDIA H100 PCIe"},
		HBMPeakGBps: 2000, FP32PeakTFLOPs: 51, FP64PeakTFLOPs: 26,
		Reference: "NVIDIA H100 datasheet (h100-datasheet-2430615), H100 PCIe column (the first PCIe card, 2.0 TB/s HBM2e)"},
	{Model: "H100 NVL 94GB", Names: []string{"NVIDIA H100 NVL"},
		HBMPeakGBps: 3900, FP32PeakTFLOPs: 60, FP64PeakTFLOPs: 30,
		Reference: "NVIDIA H100 datasheet (h100-datasheet-2430615), H100 NVL column"},
	{Model: "H200 SXM 141GB", Names: []string{"NVIDIA H200", "NVIDIA H200 141GB HBM3e"},
		HBMPeakGBps: 4800, FP32PeakTFLOPs: 67, FP64PeakTFLOPs: 34,
		Reference: "NVIDIA H200 Tensor Core GPU datasheet (h200-datasheet), H200 SXM column; 4302.6 GB/s cuMemcpyDtoD and 65.17 TFLOP/s FP32 measured on one (docs/benchmarks.md)"},
	{Model: "H200 NVL 141GB", Names: []string{"NVIDIA H200 NVL"},
		HBMPeakGBps: 4800, FP32PeakTFLOPs: 60, FP64PeakTFLOPs: 30,
		Reference: "NVIDIA H200 datasheet (h200-datasheet), H200 NVL column"},
	{Model: "B200 180GB", Names: []string{"NVIDIA B200"},
		HBMPeakGBps: 8000, FP32PeakTFLOPs: 75, FP64PeakTFLOPs: 37,
		Reference: "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx): 64 TB/s HBM3e, FP32 600 TFLOPS, FP64 296 TFLOPS for eight GPUs, divided by 8"},
}

// BuiltIn returns the built-in table: every row of builtinRows as datasheet peak ×
// achievable fraction, PCIe from the GPU's link.
func BuiltIn() *Table {
	entries := make([]*entry, 0, len(builtinRows))
	for _, r := range builtinRows {
		entries = append(entries, fromRow(r))
	}
	return newTable("built-in", entries)
}
