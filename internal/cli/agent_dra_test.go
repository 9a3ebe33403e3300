package cli

import "testing"

func TestChooseGPUAPI(t *testing.T) {
	tests := []struct {
		name    string
		label   string
		dra     bool
		want    string
		ignored bool
	}{
		{"an agent with --dra on an unlabelled node serves DRA", "", true, gpuAPIDRA, false},
		{"an agent without --dra on an unlabelled node serves the device plugin", "", false, gpuAPIDevicePlugin, false},
		{"the device-plugin label keeps a node on the device plugin under --dra", "device-plugin", true, gpuAPIDevicePlugin, false},
		{"the dra label with --dra serves DRA", "dra", true, gpuAPIDRA, false},
		{"the dra label without --dra is reported and the device plugin serves", "dra", false, gpuAPIDevicePlugin, true},
		{"an unknown label value is reported and the default serves", "both", true, gpuAPIDRA, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseGPUAPI(tt.label, tt.dra)
			if got != tt.want || (err != nil) != tt.ignored {
				t.Errorf("chooseGPUAPI(%q, %v) = %q, %v; want %q, reported %v", tt.label, tt.dra, got, err, tt.want, tt.ignored)
			}
		})
	}
}
