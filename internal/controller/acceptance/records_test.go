package acceptance

import "testing"

func TestNodeOfRecordName(t *testing.T) {
	tests := []struct{ name, record, want string }{
		{"a record the agent named gives its node", "gpu-node-17-20261129t160341z-636f6bc5", "gpu-node-17"},
		{"a node name without dashes", "vm-20261129t185241z-4653027c", "vm"},
		{"a name without the time and hash is no node", "my-record", ""},
		{"a wrong time stamp is no node", "node-20261129-636f6bc5", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeOfRecordName(tt.record); got != tt.want {
				t.Errorf("nodeOfRecordName(%q) = %q, want %q", tt.record, got, tt.want)
			}
		})
	}
}
