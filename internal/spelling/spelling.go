// Package spelling finds what a misspelt name was meant to be: the edit
// distance of two names, and the nearest of a list of known names.
package spelling

import "strings"

// Distance is the Levenshtein distance of a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest is the known name nearest to name if one is near enough to be
// what was meant: the same but for case, or within an edit distance
// (ignoring case) of a third of its length, at least 1 and at most 3.
// Otherwise it is "".
func Closest(name string, known []string) string {
	best, bestDist := "", 0
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		d := Distance(strings.ToLower(name), strings.ToLower(k))
		if best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" || bestDist > min(3, max(1, len(best)/3)) {
		return ""
	}
	return best
}
