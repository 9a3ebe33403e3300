package host

import (
	"strings"
	"testing"
)

func FuzzParseCmdline(f *testing.F) {
	for _, s := range []string{
		"BOOT_IMAGE=/boot/vmlinuz ro intel_iommu=on iommu=pt",
		`dyndbg="file x +p" "a=b c" -- init`,
		`"`, `=`, `a="`, "iommu.passthrough=y amd_iommu=force_isolation,off",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		params := ParseCmdline(s)
		for _, p := range params {
			if p.Key == "" {
				t.Fatalf("empty key from %q", s)
			}
			if strings.ContainsAny(p.Key, " \t\n") && !strings.Contains(s, `"`) {
				t.Fatalf("key %q has white space without quotes in %q", p.Key, s)
			}
		}
		iommuFromParams(params)
	})
}

func FuzzParseKubeletConfig(f *testing.F) {
	for _, s := range []string{
		"kind: KubeletConfiguration\nkubeReserved:\n  cpu: 1\nmaxPods: 110\n",
		`{"kind":"KubeletConfiguration","evictionHard":{"memory.available":null}}`,
		"kind: KubeletConfiguration\nkubeReserved: [1, 2]\n",
		"- a\n- b\n", "&a [*a]", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKubeletConfig(data)
		if err == nil {
			k.Reserves("cpu")
			k.Reserves("memory")
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-55,112-167", "", "1,2,3", "9-1", "0-99999999", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err == nil && len(cpus) > maxCPUs {
			t.Fatalf("%d CPUs from %q, over the limit", len(cpus), s)
		}
	})
}

func FuzzHostValueParsers(f *testing.F) {
	for _, s := range []string{"00000000:18:00.0", "32.0 GT/s PCIe", "67108864k", "50%", `/a\040b /m\0 tmpfs rw 0 0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := SysfsAddress(s); err == nil {
			if again, err := SysfsAddress(a); err != nil || again != a {
				t.Fatalf("SysfsAddress not stable: %q -> %q -> %q, %v", s, a, again, err)
			}
		}
		_, _ = ParseLinkSpeed(s)
		_, _ = ParseTmpfsSize(s, 1<<40)
		ParseMounts(s)
		ParseMountinfo(s)
		ParseMeminfo(s)
		ParseOSRelease(s)
		parseCPUInfo(s)
		_, _ = ParseSecureBootVar([]byte(s))
	})
}
