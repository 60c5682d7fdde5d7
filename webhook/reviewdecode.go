package webhook

import (
	"bytes"
	"strings"
	"unsafe"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bodies are the request's object, oldObject and options decoded to maps
// (nil when absent or null) by the envelope's decoding, each exactly what
// decodeMap gives for its Raw.
type bodies struct {
	object, oldObject, options map[string]any
	// objectNormalized tells that object is not nil and
	// jsonpatch.IsNormalized(object) (the decoder made no whole float in
	// it), so that its patch may be created with
	// jsonpatch.CreatePatchNormalized.
	objectNormalized bool
}

// decodeEnvelope is sigsjson.UnmarshalCaseSensitivePreserveInts of body
// into *rv, a zero admissionv1.AdmissionReview (left zero when ok=false), in one pass that also decodes the
// request's object, oldObject and options into maps as decodeMap does:
// the same review (every field, Raw the exact bytes of each object) and
// the same maps, without reading the body twice for the envelope and once
// more for each object. It takes what kube-apiserver sends and what is
// read the same way by any decoder — an object of the AdmissionReview's
// fields, each once, with values of their types or null, unknown members
// skipped; anything else (a syntax error, a key repeated, a value of
// another type, a response, an object body that is not a JSON object or
// that decodeMap's fast decoder would refuse) is ok=false, for the
// reference decoding (Decode's sigsjson, then decodeObject) to give its
// result and error. body is copied once: the maps' strings and the Raw
// bytes share the copy, which must not be modified; the review's own
// strings (uid, names, userInfo …) are copied apart, into one buffer, so
// that what keeps one of them keeps no body. FuzzDecodeEnvelope and TestDecodeEnvelope hold it to the
// reference.
func decodeEnvelope(body []byte, rv *admissionv1.AdmissionReview) (b bodies, ok bool) {
	if len(body) == 0 {
		return b, false
	}
	return decodeEnvelopeOwned(bytes.Clone(body), rv, nil)
}

// decodeEnvelopeOwned is decodeEnvelope of buf without the copy: buf is
// the review's own, never modified while the review or anything it made
// lives (the maps' strings and the Raw bytes are buf's), as a Handler's
// body read is. s, when not nil, lends the map decoder its stacks (and
// gets them back, grown).
func decodeEnvelopeOwned(buf []byte, rv *admissionv1.AdmissionReview, s *reviewScratch) (b bodies, ok bool) {
	if len(buf) == 0 {
		return b, false
	}
	d := envelopeDecoder{mapDecoder: mapDecoder{s: unsafe.String(&buf[0], len(buf))}, buf: buf}
	if s != nil {
		d.mapDecoder.members, d.elems = s.members[:0], s.elems[:0]
		defer func() { s.members, s.elems = d.mapDecoder.members, d.elems }()
	}
	d.space()
	if !d.is('{') || !d.review(rv, &b) {
		*rv = admissionv1.AdmissionReview{}
		return bodies{}, false
	}
	d.space()
	if d.i != len(d.s) {
		*rv = admissionv1.AdmissionReview{}
		return bodies{}, false
	}
	d.own()
	return b, true
}

// envelopeDecoder decodes an AdmissionReview's fields; the values it
// does not know go through the mapDecoder.
type envelopeDecoder struct {
	mapDecoder
	buf []byte // d.s's bytes, for Raw
	// fields are the review's own strings decoded so far (substrings of
	// d.s), for own to copy out.
	fields [maxOwnedFields]*string
	nf     int
}

// maxOwnedFields is the most strings own copies into one buffer; more
// (a userInfo with many groups) are copied one by one.
const maxOwnedFields = 48

// keep notes *p, a string of the review, for own.
func (d *envelopeDecoder) keep(p *string) {
	if d.nf < len(d.fields) {
		d.fields[d.nf] = p
		d.nf++
		return
	}
	*p = strings.Clone(*p)
}

// own copies the strings kept out of the body, into one buffer.
func (d *envelopeDecoder) own() {
	n := 0
	for _, p := range d.fields[:d.nf] {
		n += len(*p)
	}
	if n == 0 {
		return
	}
	arena := make([]byte, 0, n)
	for _, p := range d.fields[:d.nf] {
		if len(*p) > 0 {
			start := len(arena)
			arena = append(arena, *p...)
			*p = unsafe.String(&arena[start], len(*p))
		}
	}
}

// is tells whether the byte at d.i is c.
func (d *envelopeDecoder) is(c byte) bool {
	return d.i < len(d.s) && d.s[d.i] == c
}

// null reads a null at d.i, if there is one.
func (d *envelopeDecoder) null() bool {
	return d.is('n') && d.literal("null")
}

// members reads the object at d.i ('{'), calling member with each key, the
// value at d.i; member reads the value and returns false to refuse it.
// bit(key) is the key's bit, to refuse a key repeated, or 0 for a key
// not known, whose value is skipped; a nil bit gives every key to member.
func (d *envelopeDecoder) members(bit func(key string) uint32, member func(key string) bool) bool {
	d.i++
	d.space()
	if d.is('}') {
		d.i++
		return true
	}
	var seen uint32
	for {
		if !d.is('"') {
			return false
		}
		k, ok := d.str()
		if !ok {
			return false
		}
		d.space()
		if !d.is(':') {
			return false
		}
		d.i++
		d.space()
		if bit == nil {
			if !member(k) {
				return false
			}
		} else if f := bit(k); f != 0 {
			if seen&f != 0 {
				return false // a repeated field merges in sigsjson: its own
			}
			seen |= f
			if !member(k) {
				return false
			}
		} else if _, ok := d.value(); !ok {
			return false
		}
		d.space()
		if d.i >= len(d.s) {
			return false
		}
		c := d.s[d.i]
		d.i++
		if c == '}' {
			return true
		}
		if c != ',' {
			return false
		}
		d.space()
	}
}

// string reads a string field into *p; null leaves it.
func (d *envelopeDecoder) string(p *string) bool {
	if d.null() {
		return true
	}
	if !d.is('"') {
		return false
	}
	s, ok := d.str()
	*p = s
	d.keep(p)
	return ok
}

// keyBit is the bit of key among keys, 0 when it is none of them.
func keyBit(key string, keys []string) uint32 {
	for i, k := range keys {
		if k == key {
			return 1 << i
		}
	}
	return 0
}

var (
	reviewKeys  = []string{"kind", "apiVersion", "request", "response"}
	requestKeys = []string{"uid", "kind", "resource", "subResource", "requestKind", "requestResource", "requestSubResource",
		"name", "namespace", "operation", "userInfo", "object", "oldObject", "dryRun", "options"}
	gvkKeys      = []string{"group", "version", "kind"}
	gvrKeys      = []string{"group", "version", "resource"}
	userInfoKeys = []string{"username", "uid", "groups", "extra"}
)

func (d *envelopeDecoder) review(rv *admissionv1.AdmissionReview, b *bodies) bool {
	return d.members(func(k string) uint32 { return keyBit(k, reviewKeys) }, func(k string) bool {
		switch k {
		case "kind":
			return d.string(&rv.Kind)
		case "apiVersion":
			return d.string(&rv.APIVersion)
		case "request":
			if d.null() {
				return true
			}
			if !d.is('{') {
				return false
			}
			rv.Request = new(admissionv1.AdmissionRequest)
			return d.request(rv.Request, b)
		}
		return d.null() // a response: only null is taken
	})
}

func (d *envelopeDecoder) request(r *admissionv1.AdmissionRequest, b *bodies) bool {
	return d.members(func(k string) uint32 { return keyBit(k, requestKeys) }, func(k string) bool {
		switch k {
		case "uid":
			return d.string((*string)(&r.UID))
		case "kind":
			return d.gvk(&r.Kind)
		case "resource":
			return d.gvr(&r.Resource)
		case "subResource":
			return d.string(&r.SubResource)
		case "requestKind":
			if d.null() {
				return true
			}
			r.RequestKind = new(metav1.GroupVersionKind)
			return d.gvk(r.RequestKind)
		case "requestResource":
			if d.null() {
				return true
			}
			r.RequestResource = new(metav1.GroupVersionResource)
			return d.gvr(r.RequestResource)
		case "requestSubResource":
			return d.string(&r.RequestSubResource)
		case "name":
			return d.string(&r.Name)
		case "namespace":
			return d.string(&r.Namespace)
		case "operation":
			return d.string((*string)(&r.Operation))
		case "userInfo":
			return d.userInfo(&r.UserInfo)
		case "object":
			d.wholeFloats = false
			if !d.body(&r.Object.Raw, &b.object) {
				return false
			}
			b.objectNormalized = b.object != nil && !d.wholeFloats
			return true
		case "oldObject":
			return d.body(&r.OldObject.Raw, &b.oldObject)
		case "options":
			return d.body(&r.Options.Raw, &b.options)
		case "dryRun":
			switch {
			case d.null():
				return true
			case d.is('t') && d.literal("true"):
				r.DryRun = new(bool)
				*r.DryRun = true
				return true
			case d.is('f') && d.literal("false"):
				r.DryRun = new(bool)
				return true
			}
		}
		return false
	})
}

// body reads a RawExtension's object: raw its bytes, m its decoding; null
// leaves both nil (RawExtension ignores it).
func (d *envelopeDecoder) body(raw *[]byte, m *map[string]any) bool {
	if d.null() {
		return true
	}
	if !d.is('{') {
		return false // not an object: decodeObject's error
	}
	start := d.i
	v, ok := d.value()
	if !ok {
		return false
	}
	*raw = d.buf[start:d.i:d.i]
	*m = v.(map[string]any)
	return true
}

// gvk reads a GroupVersionKind (null leaves it).
func (d *envelopeDecoder) gvk(g *metav1.GroupVersionKind) bool {
	if d.null() {
		return true
	}
	if !d.is('{') {
		return false
	}
	return d.members(func(k string) uint32 { return keyBit(k, gvkKeys) }, func(k string) bool {
		switch k {
		case "group":
			return d.string(&g.Group)
		case "version":
			return d.string(&g.Version)
		}
		return d.string(&g.Kind)
	})
}

// gvr reads a GroupVersionResource (null leaves it).
func (d *envelopeDecoder) gvr(g *metav1.GroupVersionResource) bool {
	if d.null() {
		return true
	}
	if !d.is('{') {
		return false
	}
	return d.members(func(k string) uint32 { return keyBit(k, gvrKeys) }, func(k string) bool {
		switch k {
		case "group":
			return d.string(&g.Group)
		case "version":
			return d.string(&g.Version)
		}
		return d.string(&g.Resource)
	})
}

func (d *envelopeDecoder) userInfo(u *authenticationv1.UserInfo) bool {
	if d.null() {
		return true
	}
	if !d.is('{') {
		return false
	}
	return d.members(func(k string) uint32 { return keyBit(k, userInfoKeys) }, func(k string) bool {
		switch k {
		case "username":
			return d.string(&u.Username)
		case "uid":
			return d.string(&u.UID)
		case "groups":
			return d.strings(&u.Groups)
		}
		return d.extra(&u.Extra)
	})
}

// strings reads an array of strings (null leaves it nil; [] is empty, not
// nil, as encoding/json makes it).
func (d *envelopeDecoder) strings(p *[]string) bool {
	if d.null() {
		return true
	}
	if !d.is('[') {
		return false
	}
	d.i++
	d.space()
	if d.is(']') {
		d.i++
		*p = []string{}
		return true
	}
	var room [8]string // the usual few, gathered before the one allocation
	out := room[:0]
	for {
		if !d.is('"') {
			return false // null or another type: sigsjson's
		}
		s, ok := d.str()
		if !ok {
			return false
		}
		out = append(out, s)
		d.space()
		if d.i >= len(d.s) {
			return false
		}
		c := d.s[d.i]
		d.i++
		if c == ']' {
			*p = append([]string(nil), out...)
			for i := range *p {
				d.keep(&(*p)[i])
			}
			return true
		}
		if c != ',' {
			return false
		}
		d.space()
	}
}

// extra reads userInfo.extra (null leaves it nil).
func (d *envelopeDecoder) extra(p *map[string]authenticationv1.ExtraValue) bool {
	if d.null() {
		return true
	}
	if !d.is('{') {
		return false
	}
	m := map[string]authenticationv1.ExtraValue{}
	ok := d.members(nil, func(k string) bool {
		var v []string
		if !d.strings(&v) {
			return false
		}
		m[strings.Clone(k)] = v // null: nil, and a key repeated: the last, as in sigsjson
		return true
	})
	*p = m
	return ok
}
