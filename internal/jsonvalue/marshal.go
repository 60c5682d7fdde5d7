package jsonvalue

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping, as kube-apiserver's
// encoder writes JSON (and the AdmissionReviews and patches a webhook
// answers with).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
