package host

import "fmt"

// Secure Boot states.
const (
	SecureBootEnabled  = "enabled"
	SecureBootDisabled = "disabled"
	// SecureBootNotEFI: the host booted through legacy BIOS, so there is no Secure Boot.
	SecureBootNotEFI  = "not-efi"
	SecureBootUnknown = "unknown"
)

// SecureBoot is the firmware's Secure Boot state.
type SecureBoot struct {
	// State is one of the SecureBoot* constants.
	State string `json:"state"`
}

// Platform is the machine as the firmware (DMI) names it; empty on hosts without DMI.
type Platform struct {
	SysVendor   string `json:"sysVendor,omitempty"`
	ProductName string `json:"productName,omitempty"`
	// ProductSerial is readable by root only.
	ProductSerial string `json:"productSerial,omitempty"`
	BIOSVersion   string `json:"biosVersion,omitempty"`
	BIOSDate      string `json:"biosDate,omitempty"`
}

// secureBootVar is the EFI global variable SecureBoot (EFI_GLOBAL_VARIABLE GUID).
const secureBootVar = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"

// readFirmware reads Secure Boot and DMI.
func (r *Reader) readFirmware(f *Facts) {
	f.SecureBoot.State = SecureBootUnknown
	if !r.exists("/sys/firmware/efi") {
		f.SecureBoot.State = SecureBootNotEFI
	} else if data, err := r.readFile(secureBootVar); err != nil {
		f.setErr(FactSecureBoot, err)
	} else {
		state, perr := ParseSecureBootVar(data)
		f.SecureBoot.State = state
		f.setErr(FactSecureBoot, perr)
	}
	dmi := []struct {
		file string
		fact Fact
		dst  *string
	}{
		{"sys_vendor", FactSysVendor, &f.Platform.SysVendor},
		{"product_name", FactProductName, &f.Platform.ProductName},
		{"product_serial", FactProductSerial, &f.Platform.ProductSerial},
		{"bios_version", FactBIOSVersion, &f.Platform.BIOSVersion},
		{"bios_date", FactBIOSDate, &f.Platform.BIOSDate},
	}
	for _, d := range dmi {
		s, err := r.readString("/sys/class/dmi/id/" + d.file)
		f.setErr(d.fact, err)
		*d.dst = s
	}
}

// ParseSecureBootVar reads an efivarfs SecureBoot file: 4 bytes of attributes, then one
// byte, 1 when Secure Boot is enforced.
func ParseSecureBootVar(data []byte) (string, error) {
	if len(data) < 5 {
		return SecureBootUnknown, fmt.Errorf("parse %s: %d bytes, want 5", secureBootVar, len(data))
	}
	switch data[4] {
	case 0:
		return SecureBootDisabled, nil
	case 1:
		return SecureBootEnabled, nil
	}
	return SecureBootUnknown, fmt.Errorf("parse %s: value %d, want 0 or 1", secureBootVar, data[4])
}
