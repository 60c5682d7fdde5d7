package webhook

import "bytes"

// shape is what a cheap pass over a review's JSON counts, without decoding
// it. What a review costs in memory, decoded and evaluated, follows the
// number of objects and values more than its bytes: a Pod of small
// containers decodes to 15 to 95 times its JSON, a ConfigMap of long
// strings to about twice (TestReviewChargeCoversItsCost).
type shape struct {
	// objects and arrays are the JSON objects and arrays; values the
	// scalars (strings, numbers, true, false, null), keys not counted.
	objects, arrays, values int64
	// undefaulted counts the containers (of containers, initContainers
	// and ephemeralContainers) without terminationMessagePolicy:
	// kube-apiserver defaults it in every container it sends, and mutatis
	// defaults a container without it, which adds five fields and as many
	// patch operations (the review costs 2,800 bytes per container instead
	// of 650).
	undefaulted int64
	// bytes is the length of the body.
	bytes int64
}

// Flags of a nesting level in scanShape.
const (
	levelObject        = 1 << iota // an object, not an array
	levelContainerList             // an array under a containers key
	levelContainer                 // an object in a levelContainerList
	levelDefaulted                 // a levelContainer with terminationMessagePolicy
)

// maxShapeDepth is the nesting scanShape follows; deeper levels count as
// objects and values but never as containers.
const maxShapeDepth = 64

var (
	containerKeys            = [][]byte{[]byte("containers"), []byte("initContainers"), []byte("ephemeralContainers")}
	terminationMessagePolicy = []byte("terminationMessagePolicy")
)

// scanShape counts the shape of body in one pass without allocating. It
// does not validate the JSON: a body that is not JSON is counted as far as
// it goes, and refused by the decoder.
func scanShape(body []byte) shape {
	s := shape{bytes: int64(len(body))}
	var levels [maxShapeDepth]uint8
	depth := 0
	level := func() uint8 {
		if depth == 0 || depth > maxShapeDepth {
			return 0
		}
		return levels[depth-1]
	}
	push := func(f uint8) {
		depth++
		if depth <= maxShapeDepth {
			levels[depth-1] = f
		}
	}
	pop := func() {
		if depth == 0 {
			return
		}
		if f := level(); f&levelContainer != 0 && f&levelDefaulted == 0 {
			s.undefaulted++
		}
		depth--
	}
	expectKey := false // the next string is an object's key
	var lastKey []byte // the last key, until the value after it starts
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '"':
			start := i + 1
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			if expectKey {
				lastKey = body[start:min(i, len(body))]
				if f := level(); f&levelContainer != 0 && bytes.Equal(lastKey, terminationMessagePolicy) {
					levels[depth-1] |= levelDefaulted
				}
				expectKey = false
				continue
			}
			s.values++
			lastKey = nil
		case '{':
			s.objects++
			f := uint8(levelObject)
			if level()&levelContainerList != 0 {
				f |= levelContainer
			}
			push(f)
			expectKey, lastKey = true, nil
		case '[':
			s.arrays++
			var f uint8
			for _, k := range containerKeys {
				if bytes.Equal(lastKey, k) {
					f = levelContainerList
				}
			}
			push(f)
			expectKey, lastKey = false, nil
		case '}', ']':
			pop()
			expectKey, lastKey = false, nil
		case ',':
			expectKey, lastKey = level()&levelObject != 0, nil
		case ':', ' ', '\t', '\n', '\r':
		default:
			// A number, true, false or null: skip to its end.
			for i+1 < len(body) && !bytes.ContainsRune([]byte(",}]: \t\n\r\""), rune(body[i+1])) {
				i++
			}
			s.values++
			expectKey, lastKey = false, nil
		}
	}
	return s
}
