package reports

import "image/color"

// palette is a colour-blind-safe set (Okabe–Ito), used in order.
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{213, 94, 0, 255},    // vermillion
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
	{230, 159, 0, 255},   // orange
}

func plotColor(i int) color.Color { return palette[i%len(palette)] }
