package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCheckWebConfig: the exporter's --web.config.file (TLS and basic auth) is YAML a person
// writes. Whatever it holds, checking it does not panic, and a refusal is bad input (exit 2)
// naming the flag and the file.
func FuzzCheckWebConfig(f *testing.F) {
	f.Add([]byte("basic_auth_users:\n  prometheus: $2y$10$abcdefghijklmnopqrstuu\n"))
	f.Add([]byte("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n"))
	f.Add([]byte("tls_server_config:\n  min_version: TLS13\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"))
	f.Add([]byte("http_server_config:\n  http2: false\n  headers: {X-Frame-Options: deny}\n"))
	f.Add([]byte("unknown_key: 1\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "web.yml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		err := checkWebConfig(path)
		if err == nil {
			return
		}
		if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--web.config.file "+path) {
			t.Fatalf("refusal %q (exit %d), want bad input (exit %d) naming the flag and the file", err, exitCode(err), ExitUsage)
		}
	})
}
