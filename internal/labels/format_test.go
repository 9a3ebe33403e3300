package labels

import "testing"

func TestFormat(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"no labels give no lines", nil, ""},
		{"labels are written sorted by key, one per line", map[string]string{
			KeyGPUProduct: "NVIDIA-H200", KeyAcceleratorClass: "h200-141g", KeyGPUCount: "1",
		}, "gpunode.dev/accelerator-class=h200-141g\nnvidia.com/gpu.count=1\nnvidia.com/gpu.product=NVIDIA-H200\n"},
		{"an empty value is written after the equals sign", map[string]string{"a": ""}, "a=\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Format(tt.labels); got != tt.want {
				t.Errorf("Format = %q, want %q", got, tt.want)
			}
		})
	}
}
