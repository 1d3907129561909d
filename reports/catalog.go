package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
)

// The catalog tables: what is built in (device profiles, model specs,
// policies), as lessim's list and show commands print them.

// WriteProfileList writes one row per embedded device profile: name, RAM,
// flash lanes, how many values are assumed, description.
func WriteProfileList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRAM\tFLASH LANES\tASSUMED VALUES\tDESCRIPTION")
	for _, n := range devices.ProfileNames() {
		p, err := devices.LoadProfile(n)
		if err != nil {
			return err
		}
		d, err := p.Device()
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", n, sim.FormatBytes(d.RAMBytes), d.Flash.Lanes, len(d.Assumed), p.Description)
	}
	return tw.Flush()
}

// WriteModelList writes one row per built-in model spec and quant variant.
func WriteModelList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVARIANT\tARCH\tLAYERS\tEXPERTS\tTOP-K\tEXPERT BYTES\tALL EXPERTS\tRESIDENT")
	for _, n := range devices.ModelNames() {
		for _, v := range devices.ModelVariants(n) {
			m, err := devices.LookupModel(n, v)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", n, v, m.Arch, len(m.Layers), m.Experts, m.TopK,
				expertBytesRange(m), sim.FormatBytes(m.TotalExpertBytes()), sim.FormatBytes(m.NonExpertBytes))
		}
	}
	return tw.Flush()
}

// expertBytesRange is the bytes of one expert, or their range over the
// layers ("1351680–2039808").
func expertBytesRange(m *devices.ModelSpec) string {
	lo, hi := int64(-1), int64(0)
	for _, l := range m.Layers {
		if lo < 0 || l.ExpertBytes < lo {
			lo = l.ExpertBytes
		}
		hi = max(hi, l.ExpertBytes)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// WriteModel writes a model spec: its shape, bytes and source, then one
// row per MoE layer with its expert tensors.
func WriteModel(w io.Writer, m *devices.ModelSpec) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s (%s)\narch\t%s\nshape\t%d blocks, %d MoE layers × %d experts, top-%d, %d shared; hidden %d, expert FFN %d\n",
		m.Name, m.Variant, m.Arch, m.Blocks, len(m.Layers), m.Experts, m.TopK, m.SharedExperts, m.Hidden, m.ExpertFFN)
	fmt.Fprintf(tw, "experts\t%s in all\nresident\t%s (non-expert weights), head %s, KV %s/token\nsource\t%s\n\n",
		sim.FormatBytes(m.TotalExpertBytes()), sim.FormatBytes(m.NonExpertBytes), sim.FormatBytes(m.HeadBytes),
		sim.FormatBytes(m.KVBytesPerToken), m.Source)
	fmt.Fprintln(tw, "LAYER\tBLOCK\tEXPERT BYTES\tTENSORS\tDENSE BYTES")
	for i, l := range m.Layers {
		var ts []string
		for _, t := range l.Tensors {
			ts = append(ts, fmt.Sprintf("%s %s %d", t.Name, t.Type, t.Bytes))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\n", i, l.Block, l.ExpertBytes, strings.Join(ts, ", "), l.DenseBytes)
	}
	return tw.Flush()
}

// WritePolicyList writes one row per policy: its name and description.
func WritePolicyList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION")
	for _, n := range policies.Names() {
		fmt.Fprintf(tw, "%s\t%s\n", n, policies.Describe(n))
	}
	return tw.Flush()
}
