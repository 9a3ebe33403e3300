package evidence

import (
	"strings"
	"testing"
	"time"
)

func TestBundleNamesRoundTrip(t *testing.T) {
	sha := strings.Repeat("0123456789abcdef", 4)
	created := time.Date(2026, 11, 29, 18, 0, 3, 999, time.UTC)
	for _, node := range []string{"gpu-node-07", "ip-10-0-3-17.ec2.internal", "a", strings.Repeat("n", maxNodeName)} {
		name := BundleName(node, created, sha)
		gotNode, gotCreated, gotSHA, err := ParseName(name)
		if err != nil || gotNode != node || !gotCreated.Equal(created.Truncate(time.Second)) || gotSHA != sha {
			t.Errorf("ParseName(%s) = %s %s %s %v", name, gotNode, gotCreated, gotSHA, err)
		}
		if len(name) > 255 {
			t.Errorf("name of node %q is %d bytes, over a Linux file name's 255", node, len(name))
		}
	}
}

func TestParseNameRefusesWhatIsNotABundle(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	tests := []struct {
		name, file, want string
	}{
		{"another file in the folder", "notes.txt", "want evidence-<node>"},
		{"an unfinished temporary", tempPrefix + "123", "want evidence-<node>"},
		{"an upper-case hash", "evidence-n-20261129T180003Z-" + strings.ToUpper(sha) + ".tar.gz", "not a lower-case sha256"},
		{"a short hash", "evidence-n-20261129T180003Z-abcd.tar.gz", "not a lower-case sha256"},
		{"a bad time", "evidence-n-2026-11-29-" + sha + ".tar.gz", "created time"},
		{"no node", "evidence--20261129T180003Z-" + sha + ".tar.gz", `node name ""`},
		{"a node with a capital", "evidence-Node-20261129T180003Z-" + sha + ".tar.gz", `'N' is not allowed`},
		{"a node name too long for a file name", "evidence-" + strings.Repeat("n", maxNodeName+1) + "-20261129T180003Z-" + sha + ".tar.gz", "want 1 to 150 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			_, _, _, err := ParseName(tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseName(%q) error %v, want one containing %q", tc.file, err, tc.want)
			}
		})
	}
}
