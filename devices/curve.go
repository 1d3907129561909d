package devices

import "math"

// Interp returns the curve's bytes/s at readBytes: linear in log2(read size)
// between points, flat beyond the first and last point. The curve must be
// sorted by ReadBytes (Profile.Device guarantees it). An empty curve gives 0;
// a non-positive readBytes gives the first point's value.
func Interp(curve []CurvePoint, readBytes int64) float64 {
	n := len(curve)
	switch {
	case n == 0:
		return 0
	case readBytes <= curve[0].ReadBytes:
		return curve[0].BytesPerSec
	case readBytes >= curve[n-1].ReadBytes:
		return curve[n-1].BytesPerSec
	}
	// First point at or above readBytes; i >= 1 by the cases above.
	i := 1
	for curve[i].ReadBytes < readBytes {
		i++
	}
	a, b := curve[i-1], curve[i]
	if b.ReadBytes == readBytes || b.ReadBytes == a.ReadBytes {
		return b.BytesPerSec
	}
	// NB: explicit float64 conversions keep the result free of fused
	// multiply-adds, so it is bit-identical across architectures.
	t := float64(math.Log2(float64(readBytes))-math.Log2(float64(a.ReadBytes))) /
		float64(math.Log2(float64(b.ReadBytes))-math.Log2(float64(a.ReadBytes)))
	return a.BytesPerSec + float64(t*(b.BytesPerSec-a.BytesPerSec))
}

// TransferRate is the bytes/s each of inFlight concurrent transfers of
// readBytes gets under the flash model: min(SingleLane(size),
// Aggregate(size)/inFlight). inFlight below 1 counts as 1.
func (f *Flash) TransferRate(readBytes int64, inFlight int) float64 {
	k := float64(max(inFlight, 1))
	return min(Interp(f.SingleLane, readBytes), Interp(f.Aggregate, readBytes)/k)
}

// ReadNS is the time one read of readBytes takes with inFlight transfers
// sharing the device throughout: the request latency plus the transfer at
// TransferRate, rounded up to whole nanoseconds. It is a closed form for
// steady states (benchmarks, tests, back-of-envelope checks); the simulator
// tracks changing concurrency itself.
func (f *Flash) ReadNS(readBytes int64, inFlight int) int64 {
	r := f.TransferRate(readBytes, inFlight)
	if readBytes <= 0 || r <= 0 {
		return f.LatencyNS
	}
	return f.LatencyNS + int64(math.Ceil(float64(float64(readBytes)*1e9)/r))
}
