package usbmux

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"howett.net/plist"
)

func plistSeed(v any, f int) []byte {
	b, err := plist.Marshal(v, f)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDecodeReply: any bytes decode to a reply or an error, never a panic,
// whether XML or binary plist.
func FuzzDecodeReply(f *testing.F) {
	dev := map[string]any{"DeviceID": uint64(3), "MessageType": "Attached", "Properties": map[string]any{
		"SerialNumber": "00008130-001A2B3C4D5E6F70", "ConnectionType": "USB", "DeviceID": uint64(3)}}
	for _, v := range []any{
		map[string]any{"MessageType": "Result", "Number": uint64(0)},
		map[string]any{"DeviceList": []any{dev}},
		dev,
		map[string]any{"MessageType": "Detached", "DeviceID": uint64(3)},
	} {
		f.Add(plistSeed(v, plist.XMLFormat))
		f.Add(plistSeed(v, plist.BinaryFormat))
	}
	f.Add([]byte("bplist00"))
	f.Add([]byte("<plist><dict><key>Number</key><string>x</string></dict></plist>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rep, err := decodeReply(body)
		runtime.ReadMemStats(&after)
		// Decoding may cost a multiple of its input, never an amount the input
		// merely announces (a count or length field).
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(256*len(body)+1<<20); got > limit {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(body), got)
		}
		if err != nil {
			if !errors.Is(err, ErrPacket) {
				t.Fatalf("error not marked ErrPacket: %v", err)
			}
			return
		}
		for _, e := range rep.DeviceList {
			e.Properties.device(e.DeviceID)
		}
	})
}

// FuzzReadPacket: any bytes give a packet or an error; a packet's body is
// never longer than its header says nor above MaxPacketBytes.
func FuzzReadPacket(f *testing.F) {
	var b bytes.Buffer
	WritePacket(&b, 1, plistSeed(map[string]any{"MessageType": "Result", "Number": uint64(0)}, plist.XMLFormat))
	f.Add(b.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0})
	f.Add([]byte{3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, body, err := ReadPacket(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrPacket) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if int(h.Length) != len(body)+headerBytes || h.Length > MaxPacketBytes {
			t.Fatalf("header %+v, body %d bytes", h, len(body))
		}
	})
}
