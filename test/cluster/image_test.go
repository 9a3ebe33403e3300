package cluster_test

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerArchive is what a docker-archive image (hack/image.sh) holds: its config and the
// files of its layers.
type dockerArchive struct {
	configName string
	config     struct {
		Config struct {
			Entrypoint []string `json:"Entrypoint"`
			User       string   `json:"User"`
		} `json:"config"`
	}
	files map[string]*tar.Header
}

func readArchive(t *testing.T, path string) dockerArchive {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	a := dockerArchive{files: map[string]*tar.Header{}}
	blobs := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		blobs[h.Name] = b
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(blobs["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("%s: manifest.json: %v (%d images)", path, err, len(manifest))
	}
	a.configName = manifest[0].Config
	if err := json.Unmarshal(blobs[a.configName], &a.config); err != nil {
		t.Fatalf("%s: the image config %s: %v", path, a.configName, err)
	}
	for _, l := range manifest[0].Layers {
		lr := tar.NewReader(strings.NewReader(string(blobs[l])))
		for {
			h, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: layer %s: %v", path, l, err)
			}
			a.files[strings.TrimPrefix(filepath.Clean("/"+h.Name), "/")] = h
		}
	}
	return a
}

// dockerfileFinal is the Dockerfile's last stage: where it puts the binary, and its entrypoint.
func dockerfileFinal(t *testing.T) (binary string, entrypoint []string, ldflags string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	last := text[strings.LastIndex(text, "\nFROM "):]
	if m := regexp.MustCompile(`(?m)^COPY --from=build /out/gpunode (\S+)$`).FindStringSubmatch(last); m != nil {
		binary = m[1]
	}
	if m := regexp.MustCompile(`(?m)^ENTRYPOINT (\[.*\])$`).FindStringSubmatch(last); m != nil {
		_ = json.Unmarshal([]byte(m[1]), &entrypoint)
	}
	if m := regexp.MustCompile(`-ldflags "([^"]*)"`).FindStringSubmatch(text); m != nil {
		ldflags = m[1]
	}
	return binary, entrypoint, ldflags
}

func TestTheEngineFreeImageHasTheDockerfilesLayoutAndEntrypoint(t *testing.T) {
	need(t)
	binary, entrypoint, ldflags := dockerfileFinal(t)
	if binary == "" || len(entrypoint) == 0 {
		t.Fatalf("Dockerfile: could not read the final stage's COPY of the binary (%q) or its ENTRYPOINT (%v)", binary, entrypoint)
	}
	a := readArchive(t, env.image)
	if !slices.Equal(a.config.Config.Entrypoint, entrypoint) {
		t.Errorf("entrypoint %v, the Dockerfile's %v", a.config.Config.Entrypoint, entrypoint)
	}
	if a.config.Config.User != "" {
		t.Errorf("user %q: the Dockerfile sets none (the chart sets it per container)", a.config.Config.User)
	}
	h, ok := a.files[strings.TrimPrefix(binary, "/")]
	if !ok || h.Mode&0o111 == 0 {
		t.Fatalf("%s is not an executable file in the image (%v)", binary, h)
	}
	for _, f := range []string{"lib64/ld-linux-x86-64.so.2", "etc/passwd", "etc/group", "tmp", "etc/ssl/certs/ca-certificates.crt"} {
		if _, ok := a.files[f]; !ok {
			t.Errorf("%s missing from the image (distroless/base has it)", f)
		}
	}
	// The binary is built with the Dockerfile's flags: -s -w and the version stamps.
	script, err := os.ReadFile(filepath.Join(repoRoot, "hack/image.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range strings.Fields(ldflags) {
		if name, _, _ := strings.Cut(flag, "="); !strings.Contains(string(script), name) {
			t.Errorf("hack/image.sh does not build with the Dockerfile's ldflag %s", name)
		}
	}
}

func TestTheImageIsReproducible(t *testing.T) {
	need(t)
	again := filepath.Join(t.TempDir(), "again.tar")
	if out, err := script("hack/image.sh", nil, again); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}
	first, second := readArchive(t, env.image).configName, readArchive(t, again).configName
	if first != second {
		t.Fatalf("two builds of the same commit gave images %s and %s", first, second)
	}
}
