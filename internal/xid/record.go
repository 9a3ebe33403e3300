package xid

import (
	"fmt"
	"strconv"

	"github.com/gpunode/gpunode/internal/fault"
)

// Record is the JSON form of a decoded event, one object per line in `gpunode xid decode
// --json`. Absent values are null (MIG instances, pid, process) or omitted.
type Record struct {
	Kind string `json:"kind"` // "xid" or "sxid"
	XID  int    `json:"xid"`
	// PCIBusID is the device address as sysfs writes it ("0000:3b:00.0").
	PCIBusID        string  `json:"pciBusID"`
	UUID            string  `json:"uuid,omitempty"`
	GPUInstance     *int    `json:"gpuInstance"`
	ComputeInstance *int    `json:"computeInstance"`
	PID             *int    `json:"pid"`
	Process         *string `json:"process"`
	Message         string  `json:"message"`
	// Stamp is the line's timestamp as printed.
	Stamp          string          `json:"stamp,omitempty"`
	Mnemonic       string          `json:"mnemonic"`
	Component      fault.Component `json:"component"`
	Severity       fault.Severity  `json:"severity"`
	Action         fault.Action    `json:"action"`
	Consequence    bool            `json:"consequence"`
	CausedBy       *int            `json:"causedBy,omitempty"`
	Drain          bool            `json:"drain,omitempty"`
	RunDiagnostics bool            `json:"runDiagnostics,omitempty"`
	Derived        bool            `json:"derived,omitempty"`
	Link           *int            `json:"link,omitempty"`
	Fatal          *bool           `json:"fatal,omitempty"`
	Unit           string          `json:"unit,omitempty"`
	Location       string          `json:"location,omitempty"`
	Registers      []string        `json:"registers,omitempty"` // "0x00010000", in printed order
	RegisterNotes  []string        `json:"registerNotes,omitempty"`
	RecoveryAction string          `json:"recoveryAction,omitempty"`
	Reason         string          `json:"reason"`
}

// Record converts a decoded event to its JSON form.
func (d Decoded) Record() Record {
	r := Record{Kind: d.Kind.String(), XID: d.XID, PCIBusID: SysfsBusID(d.PCI), UUID: d.UUID,
		Message: d.Message, Stamp: d.Stamp, Mnemonic: d.Entry.Mnemonic,
		Component: d.Component, Severity: d.Severity, Action: d.Action,
		Consequence: d.Consequence, Drain: d.Drain, RunDiagnostics: d.RunDiagnostics, Derived: d.Derived,
		Fatal: d.Fatal, Unit: d.Unit, Location: d.Location, RegisterNotes: d.RegisterNotes,
		RecoveryAction: string(d.RecoveryAction), Reason: d.Reason}
	if d.GPUInstance >= 0 {
		r.GPUInstance = ptr(d.GPUInstance)
	}
	if d.ComputeInstance >= 0 {
		r.ComputeInstance = ptr(d.ComputeInstance)
	}
	if pid, err := strconv.Atoi(d.PID); err == nil && pid >= 0 {
		r.PID = ptr(pid)
	}
	if d.Process != "" && d.Process != "<unknown>" {
		r.Process = ptr(d.Process)
	}
	if d.CausedBy > 0 {
		r.CausedBy = ptr(d.CausedBy)
	}
	if d.Link >= 0 {
		r.Link = ptr(d.Link)
	}
	for _, w := range d.Registers {
		r.Registers = append(r.Registers, fmt.Sprintf("0x%08x", w))
	}
	return r
}
