package simfleet

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeBinaries writes executable kube-apiserver and etcd files (of the names given) into dir.
func fakeBinaries(t *testing.T, dir string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindAssets(t *testing.T) {
	platform := runtime.GOOS + "-" + runtime.GOARCH
	cases := []struct {
		name    string
		setup   func(t *testing.T, env, cache string) // env: KUBEBUILDER_ASSETS ("" unset)
		useEnv  bool
		want    string // relative to cache, or "env"
		wantErr string
	}{
		{"KUBEBUILDER_ASSETS with both binaries is used", func(t *testing.T, env, _ string) {
			fakeBinaries(t, env, "kube-apiserver", "etcd")
		}, true, "env", ""},
		{"KUBEBUILDER_ASSETS without etcd names what is missing and the script", func(t *testing.T, env, _ string) {
			fakeBinaries(t, env, "kube-apiserver")
		}, true, "", "[etcd] missing from"},
		{"without KUBEBUILDER_ASSETS the newest complete cache folder is used", func(t *testing.T, _, cache string) {
			fakeBinaries(t, filepath.Join(cache, "assets", "k8s-v1.36.0-etcd-v3.6.0-"+platform), "kube-apiserver", "etcd")
			fakeBinaries(t, filepath.Join(cache, "assets", "k8s-v1.37.2-etcd-v3.7.3-"+platform), "kube-apiserver", "etcd")
			fakeBinaries(t, filepath.Join(cache, "assets", "k8s-v1.38.0-etcd-v3.7.3-"+platform), "kube-apiserver") // incomplete
		}, false, "assets/k8s-v1.37.2-etcd-v3.7.3-" + platform, ""},
		{"an empty cache names the script that fills it", func(*testing.T, string, string) {}, false, "", "bash hack/k8s-test-assets.sh"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, cache := filepath.Join(t.TempDir(), "env"), t.TempDir()
			t.Setenv("K8S_ASSETS_CACHE", cache)
			if tc.useEnv {
				t.Setenv("KUBEBUILDER_ASSETS", env)
			} else {
				t.Setenv("KUBEBUILDER_ASSETS", "")
			}
			tc.setup(t, env, cache)
			got, err := FindAssets()
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNoAssets) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), AssetsScript) {
					t.Fatalf("FindAssets() = %q, %v; want ErrNoAssets saying %q and naming %s", got, err, tc.wantErr, AssetsScript)
				}
				return
			}
			want := env
			if tc.want != "env" {
				want = filepath.Join(cache, tc.want)
			}
			if err != nil || got != want {
				t.Fatalf("FindAssets() = %q, %v; want %q", got, err, want)
			}
		})
	}
}
