// Package plural writes a count with its noun for people: "1 point",
// "2 points", "0 axes". Messages that print a count beside a noun use it, so
// a count of one never reads "1 points".
package plural

import "strconv"

// Count is n followed by noun, with an "s" added unless n is 1 or -1.
// Nouns whose plural is not noun+"s" use CountAs.
func Count(n int, noun string) string { return CountAs(n, noun, noun+"s") }

// CountAs is n followed by one when n is 1 or -1, else by many.
func CountAs(n int, one, many string) string { return strconv.Itoa(n) + " " + Word(n, one, many) }

// Word is one when n is 1 or -1, else many: the noun of a count printed
// elsewhere in the message.
func Word(n int, one, many string) string {
	if n == 1 || n == -1 {
		return one
	}
	return many
}
