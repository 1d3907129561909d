package gguf

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Inspection is the deterministic summary `lessim model inspect` prints, as text
// (WriteInspect) or JSON (WriteInspectJSON).
type Inspection struct {
	File       string            `json:"file"`
	Version    uint32            `json:"version"`
	Size       int64             `json:"size_bytes"`
	Alignment  int64             `json:"alignment"`
	DataOffset int64             `json:"data_offset"`
	Arch       string            `json:"arch"`
	MoE        *InspectMoE       `json:"moe,omitempty"`
	MoEError   string            `json:"moe_error,omitempty"`
	KVs        []InspectKV       `json:"metadata"`
	Tensors    []InspectTensor   `json:"tensors"`
	Layers     []InspectMoELayer `json:"moe_layers,omitempty"`
}

// InspectMoE is the MoE shape.
type InspectMoE struct {
	Blocks        int `json:"blocks"`
	MoELayers     int `json:"moe_layers"`
	Experts       int `json:"experts"`
	TopK          int `json:"top_k"`
	SharedExperts int `json:"shared_experts"`
	Hidden        int `json:"hidden"`
	ExpertFFN     int `json:"expert_ffn"`
}

// InspectKV is one metadata pair; arrays are summarized by element type and length.
type InspectKV struct {
	Key      string `json:"key"`
	Type     string `json:"type"`
	ElemType string `json:"elem_type,omitempty"`
	Len      int    `json:"len,omitempty"`
	Value    string `json:"value"`
}

// InspectTensor is one tensor's directory entry with its absolute offset.
type InspectTensor struct {
	Name   string  `json:"name"`
	Type   string  `json:"type"`
	Dims   []int64 `json:"dims"`
	Offset int64   `json:"offset"`
	Bytes  int64   `json:"bytes"`
}

// InspectMoELayer is one MoE layer with the byte ranges of (up to maxExperts) experts.
type InspectMoELayer struct {
	Block       int             `json:"block"`
	Router      string          `json:"router,omitempty"`
	ExpertBytes int64           `json:"expert_bytes"`
	Tensors     []InspectTensor `json:"expert_tensors"` // Bytes is one expert's slice
	Experts     [][]ByteRange   `json:"experts"`        // Experts[e] are expert e's regions
	Omitted     int             `json:"experts_omitted,omitempty"`
}

// Inspect summarizes the file; maxExperts ≤ 0 lists every expert of every layer.
func (f *File) Inspect(maxExperts int) *Inspection {
	in := &Inspection{File: f.Name, Version: f.Version, Size: f.Size, Alignment: f.Alignment, DataOffset: f.DataOffset, Arch: f.Arch()}
	for _, kv := range f.KVs {
		k := InspectKV{Key: kv.Key, Type: kv.Type.String(), Value: formatValue(kv.Value)}
		if a, ok := kv.Value.(Array); ok {
			k.ElemType, k.Len = a.Elem.String(), a.Len()
		}
		in.KVs = append(in.KVs, k)
	}
	for _, t := range f.Tensors {
		in.Tensors = append(in.Tensors, InspectTensor{t.Name, string(t.Type.Name()), t.Dims, t.FileOffset, t.Bytes})
	}
	m, err := f.MoE()
	if err != nil {
		in.MoEError = err.Error()
		return in
	}
	in.MoE = &InspectMoE{m.Blocks, len(m.Layers), m.Experts, m.TopK, m.SharedExperts, m.Hidden, m.ExpertFFN}
	shown := m.Experts
	if maxExperts > 0 {
		shown = min(shown, maxExperts)
	}
	for _, l := range m.Layers {
		il := InspectMoELayer{Block: l.Block, Router: l.Router, ExpertBytes: l.ExpertBytes(), Omitted: m.Experts - shown}
		for _, t := range l.Tensors {
			il.Tensors = append(il.Tensors, InspectTensor{Name: t.Tensor, Type: string(t.Type.Name()), Offset: t.Offset, Bytes: t.ExpertBytes})
		}
		for e := range shown {
			il.Experts = append(il.Experts, l.ExpertRanges(e))
		}
		in.Layers = append(in.Layers, il)
	}
	return in
}

// WriteInspectJSON writes Inspect(maxExperts) as indented JSON.
func (f *File) WriteInspectJSON(w io.Writer, maxExperts int) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f.Inspect(maxExperts))
}

// WriteInspect writes Inspect(maxExperts) as aligned text: header, shape, metadata,
// tensors, then each MoE layer's expert byte ranges ([start, end) absolute offsets).
func (f *File) WriteInspect(w io.Writer, maxExperts int) error {
	in := f.Inspect(maxExperts)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("file\t%s\n", in.File)
	p("version\t%d\n", in.Version)
	p("size\t%d bytes\n", in.Size)
	p("alignment\t%d\n", in.Alignment)
	p("data offset\t%d\n", in.DataOffset)
	p("architecture\t%s\n", in.Arch)
	if in.MoE != nil {
		s := in.MoE
		p("shape\tblocks %d, moe layers %d, experts %d, top-k %d, shared experts %d, hidden %d, expert ffn %d\n",
			s.Blocks, s.MoELayers, s.Experts, s.TopK, s.SharedExperts, s.Hidden, s.ExpertFFN)
	} else {
		p("shape\t%s\n", in.MoEError)
	}
	p("\nmetadata (%d)\n", len(in.KVs))
	for _, k := range in.KVs {
		p("  %s\t%s\t%s\n", k.Key, k.Type, k.Value)
	}
	p("\ntensors (%d)\n", len(in.Tensors))
	p("  name\ttype\tdims\toffset\tbytes\n")
	for _, t := range in.Tensors {
		p("  %s\t%s\t%s\t%d\t%d\n", t.Name, t.Type, dimsString(t.Dims), t.Offset, t.Bytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(in.Layers) > 0 {
		fmt.Fprintf(w, "\nmoe layers (%d): expert e's regions, [start, end) absolute byte offsets\n", len(in.Layers))
	}
	for i, l := range in.Layers {
		fmt.Fprintf(w, "  layer %d (block %d): router %s, %d bytes per expert in %d regions\n", i, l.Block, orDash(l.Router), l.ExpertBytes, len(l.Tensors))
		for _, t := range l.Tensors {
			fmt.Fprintf(w, "    %s %s: %d bytes per expert from %d\n", t.Name, t.Type, t.Bytes, t.Offset)
		}
		for e, rs := range l.Experts {
			parts := make([]string, len(rs))
			for j, r := range rs {
				parts[j] = fmt.Sprintf("[%d, %d)", r.Start, r.End)
			}
			fmt.Fprintf(w, "    expert %d: %s\n", e, strings.Join(parts, " "))
		}
		if l.Omitted > 0 {
			fmt.Fprintf(w, "    … %d more experts\n", l.Omitted)
		}
	}
	return nil
}

func dimsString(d []int64) string {
	parts := make([]string, len(d))
	for i, v := range d {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
