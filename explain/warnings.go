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
// that cannot be a Warning header (a control character) and truncates
// them all past 4096 characters; the result has the texts it returned,
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
	// Align the headers with the texts recorded: each text once, those
	// a header can carry, in order, until the headers run out.
	seen := map[string]bool{}
	for i, texts := range stages {
		for _, text := range texts {
			if text == "" || seen[text] || len(headers) == 0 {
				continue
			}
			seen[text] = true
			if _, err := utilnet.NewWarningHeader(299, "", text); err != nil {
				continue
			}
			out[i] = append(out[i], headers[0].Text)
			headers = headers[1:]
		}
	}
	return out
}

// headerWriter is an http.ResponseWriter that keeps the headers alone.
type headerWriter http.Header

func (h headerWriter) Header() http.Header         { return http.Header(h) }
func (h headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (h headerWriter) WriteHeader(int)             {}
