package simfleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
)

// AssetsScript is the script that builds the API server binaries.
const AssetsScript = "hack/k8s-test-assets.sh"

// ErrNoAssets means kube-apiserver and etcd were found nowhere.
var ErrNoAssets = errors.New("kube-apiserver and etcd not found")

// FindAssets returns the folder that holds kube-apiserver and etcd: $KUBEBUILDER_ASSETS
// when set, else the last complete folder (by name) of the cache hack/k8s-test-assets.sh fills
// ($K8S_ASSETS_CACHE, else $XDG_CACHE_HOME or ~/.cache, then k8s-test-assets/assets).
func FindAssets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if err := hasBinaries(dir); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s: %w", dir, err)
		}
		return dir, nil
	}
	root := cacheRoot()
	dirs, _ := filepath.Glob(filepath.Join(root, "assets", "k8s-*-"+runtime.GOOS+"-"+runtime.GOARCH))
	slices.Sort(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if hasBinaries(dirs[i]) == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("%w: KUBEBUILDER_ASSETS is not set and the cache %s holds none; "+
		"build them with `bash %s` (from the Go module proxy; about 12 minutes the first time) "+
		"or set KUBEBUILDER_ASSETS to a folder that holds them", ErrNoAssets, filepath.Join(root, "assets"), AssetsScript)
}

// cacheRoot is the script's cache folder.
func cacheRoot() string {
	if d := os.Getenv("K8S_ASSETS_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "k8s-test-assets")
}

// hasBinaries checks that dir holds executable kube-apiserver and etcd.
func hasBinaries(dir string) error {
	var missing []string
	for _, b := range []string{"kube-apiserver", "etcd"} {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %v missing from %s; build them with `bash %s`", ErrNoAssets, missing, dir, AssetsScript)
	}
	return nil
}
