package cdispec

import (
	"slices"
	"testing"
	"testing/fstest"
)

func TestSearchDirsAddTheDynamicLinkersConfiguredFolders(t *testing.T) {
	tests := []struct {
		name string
		fs   fstest.MapFS
		want []string // beyond libDirs
	}{
		{"a host without ld.so.conf searches the standard folders only", fstest.MapFS{}, nil},
		{"an included file's folders are searched after the standard ones", fstest.MapFS{
			"etc/ld.so.conf":                   {Data: []byte("include /etc/ld.so.conf.d/*.conf\n")},
			"etc/ld.so.conf.d/nvidia.conf":     {Data: []byte("# driver\n/usr/local/nvidia/lib64\n/usr/local/nvidia/lib\n")},
			"etc/ld.so.conf.d/x86_64-gnu.conf": {Data: []byte("/usr/lib/x86_64-linux-gnu\n")},
		}, []string{"usr/local/nvidia/lib64", "usr/local/nvidia/lib"}},
		{"relative includes and comments are handled", fstest.MapFS{
			"etc/ld.so.conf": {Data: []byte("/opt/cuda/lib64 # vendor\ninclude extra.conf\n")},
			"etc/extra.conf": {Data: []byte("/opt/drivers/lib\n")},
		}, []string{"opt/cuda/lib64", "opt/drivers/lib"}},
		{"an include loop ends", fstest.MapFS{
			"etc/ld.so.conf": {Data: []byte("/a/lib\ninclude /etc/ld.so.conf\n")},
		}, []string{"a/lib"}},
		{"paths that climb out of the root are ignored", fstest.MapFS{
			"etc/ld.so.conf": {Data: []byte("/../../etc\nrelative/lib\n/ok/lib\n")},
		}, []string{"ok/lib"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := searchDirs(tt.fs)
			if !slices.Equal(got[:len(libDirs)], libDirs) {
				t.Fatalf("searchDirs starts %v, want the standard folders %v first", got, libDirs)
			}
			if extra := got[len(libDirs):]; !slices.Equal(extra, tt.want) {
				t.Errorf("extra folders = %q, want %q", extra, tt.want)
			}
		})
	}
}
