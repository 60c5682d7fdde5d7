package explain

import (
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/warning"
)

// Returned is what kube-apiserver returns of the warnings its stages
// recorded for one request, stage by stage: the texts of stages (the
// decoder's, the mutating chain's, the registry's, the validating
// stage's, in the order kube-apiserver records them) go through
// k8s.io/apiserver's own warning recorder (filters.WithWarningRecorder,
// one per request), which keeps each text once, in order, drops a text
// that cannot be a Warning header (a control character) and, past 4096
// characters in all, cuts every text to 256 characters (a dropped one
// may fit then) and drops the rest; the result has the texts it returned,
// each in the stage that recorded it first (len(stages) lists, an empty
// one for a stage with none returned).
func Returned(stages ...[]string) [][]string {
	out := make([][]string, len(stages))
	rec := headerWriter{}
	filters.WithWarningRecorder(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		for _, texts := range stages {
			for _, text := range texts {
				warning.AddWarning(req.Context(), "", text)
			}
		}
	})).ServeHTTP(rec, &http.Request{})
	headers, _ := utilnet.ParseWarningHeaders(rec["Warning"])
	// Align the headers with the texts recorded, each once, in order: a
	// header is its text, or its first 256 characters once the recorder
	// truncates; a text without a header was dropped.
	seen := map[string]bool{}
	for i, texts := range stages {
		for _, text := range texts {
			if text == "" || seen[text] || len(headers) == 0 {
				continue
			}
			seen[text] = true
			if h := headers[0].Text; h == text || h == truncated(text) {
				out[i] = append(out[i], h)
				headers = headers[1:]
			}
		}
	}
	return out
}

// truncated is text as the warning recorder cuts it when it truncates:
// its first 256 characters.
func truncated(text string) string {
	if r := []rune(text); len(r) > 256 {
		return string(r[:256])
	}
	return text
}

// headerWriter is an http.ResponseWriter that keeps the headers alone.
type headerWriter http.Header

func (h headerWriter) Header() http.Header         { return http.Header(h) }
func (h headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (h headerWriter) WriteHeader(int)             {}
