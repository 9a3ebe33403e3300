package cli

import (
	"path/filepath"
	"testing"
)

func TestTheControllerCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-kubeconfig")
	bad := writeFile(t, t.TempDir(), "kubeconfig", "apiVersion: v1\nkind: Config\nclusters: [[[\n")
	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr []string
	}{
		{"its help names every flag with its default", []string{"controller", "--help"}, ExitOK,
			[]string{"--kubeconfig", "--leader-elect ", "(default true)", `--leader-election-namespace string`, `(default "gpunode-system")`,
				`--metrics-bind-address string`, `(default ":8080")`, `--health-probe-bind-address string`, `(default ":8081")`}, nil},
		{"a kubeconfig file that does not exist exits two naming it", []string{"controller", "--kubeconfig", missing}, ExitUsage,
			nil, []string{"gpunode: --kubeconfig " + missing, "no such file"}},
		{"a kubeconfig file that cannot be parsed exits two naming it", []string{"controller", "--kubeconfig", bad}, ExitUsage,
			nil, []string{"gpunode: --kubeconfig " + bad}},
		{"an argument is refused", []string{"controller", "extra"}, ExitUsage, nil, []string{"unknown command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			execute(t, tt.args...).check(t, tt.code, tt.inStdout, tt.inStderr)
		})
	}
}
