package devices_test

import (
	"fmt"

	"github.com/lessim/lessim/devices"
)

func ExampleParseQuantity() {
	bw, _ := devices.ParseQuantity("1810 MiB/s", devices.Rate)
	lat, _ := devices.ParseDuration("2.2 ms")
	_, err := devices.ParseQuantity("4096", devices.Size)
	fmt.Printf("%.0f B/s, %d ns\n%v\n", bw, lat, err)
	// Output:
	// 1897922560 B/s, 2200000 ns
	// "4096" has no unit: a size needs one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB
}

func ExampleInterp() {
	curve := []devices.CurvePoint{{ReadBytes: 128 << 10, BytesPerSec: 1e9}, {ReadBytes: 512 << 10, BytesPerSec: 2e9}}
	for _, size := range []int64{64 << 10, 256 << 10, 1 << 20} {
		fmt.Printf("%4d KiB: %.2f GB/s\n", size>>10, devices.Interp(curve, size)/1e9)
	}
	// Output:
	//   64 KiB: 1.00 GB/s
	//  256 KiB: 1.50 GB/s
	// 1024 KiB: 2.00 GB/s
}

func ExampleLookupModel() {
	m, _ := devices.LookupModel(devices.MiniCPMV47, "mixed-q3k-experts")
	fmt.Printf("%s %s: %d MoE layers × %d experts, %d bytes each, %.2f GiB of experts\n",
		m.Name, m.Variant, m.MoELayers(), m.Experts, m.Layers[0].ExpertBytes, float64(m.TotalExpertBytes())/(1<<30))
	// Output:
	// minicpm-v-4.7-35b-a3b mixed-q3k-experts: 40 MoE layers × 256 experts, 1351680 bytes each, 12.89 GiB of experts
}
