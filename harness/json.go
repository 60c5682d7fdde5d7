package harness

import (
	"bytes"
	"encoding/json"
	"math"
)

// plainMeasurement is Measurement without its JSON methods.
type plainMeasurement Measurement

// measurementJSON is a Measurement as JSON: the static maximum is null
// and unbounded true when no size bounds the inputs, as `mutatis cost -o
// json` writes an unbounded estimate (max null, unbounded true). Its
// StaticMax shadows the embedded one.
type measurementJSON struct {
	plainMeasurement
	StaticMax *uint64 `json:"staticMax"`
	Unbounded bool    `json:"unbounded"`
}

// MarshalJSON writes the measurement with an unbounded static maximum as
// null and unbounded true.
func (m Measurement) MarshalJSON() ([]byte, error) {
	j := measurementJSON{plainMeasurement: plainMeasurement(m)}
	if m.StaticMax == math.MaxUint64 {
		j.Unbounded = true
	} else {
		j.StaticMax = &m.StaticMax
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes, and the baselines saved
// before it, whose unbounded static maximum is 18446744073709551615.
func (m *Measurement) UnmarshalJSON(b []byte) error {
	var j measurementJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	*m = Measurement(j.plainMeasurement)
	m.StaticMax = math.MaxUint64
	if j.StaticMax != nil && !j.Unbounded {
		m.StaticMax = *j.StaticMax
	}
	return nil
}
