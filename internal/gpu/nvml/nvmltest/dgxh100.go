package nvmltest

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// DGXH100 is go-nvml's DGX H100 mock (eight H100 80 GB) with what the mock lacks for the
// identity of its GPUs: GPU i has serial 165412345678<i> and PCI bus ID
// 00000000:<0x18+0x10*i>:00.0 (00000000:18:00.0, 00000000:28:00.0, ...).
func DGXH100() gonvml.Interface {
	srv := dgxh100.New()
	for i, d := range srv.Devices {
		m := d.(*server.Device)
		m.GetSerialFunc = func() (string, gonvml.Return) { return fmt.Sprintf("165412345678%d", i), gonvml.SUCCESS }
		m.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
			p := gonvml.PciInfo{PciDeviceId: m.Config.PciDeviceId}
			for j, c := range fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10) {
				p.BusId[j] = int8(c)
			}
			return p, gonvml.SUCCESS
		}
	}
	return srv
}
