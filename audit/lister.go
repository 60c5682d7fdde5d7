package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Lister reads a resource page by page. A page that fails with an error
// worth retrying (a timeout, 429, a 5xx, a broken connection) is asked
// again after a backoff, from the same continue token, so that a long
// list survives a busy or restarting API server without starting over; a
// continue token that expired (410 Gone) goes on from the token the API
// server gives with the error, when it gives one.
type Lister struct {
	// Client reads the cluster.
	Client dynamic.Interface
	// PageSize is the limit of each list request (0: DefaultPageSize).
	PageSize int64
	// Retries is how many times one page is asked again (negative: none;
	// 0: DefaultRetries).
	Retries int
	// Backoff is the first wait before a retry, doubled each time up to
	// a minute (0: DefaultBackoff).
	Backoff time.Duration
	// RequestTimeout bounds each list request, headers and body (0:
	// DefaultRequestTimeout; negative: none). A request that runs out is
	// retried as a timeout is.
	RequestTimeout time.Duration
	// MaxPages bounds the pages of one list (0: DefaultMaxPages; negative:
	// none): an API server that hands out continue tokens without end
	// would keep the audit listing for ever.
	MaxPages int
}

// ErrTooManyPages is wrapped by the error of a list that went past
// Lister.MaxPages.
var ErrTooManyPages = errors.New("too many pages")

// The defaults of a Lister.
const (
	DefaultPageSize = 500
	DefaultRetries  = 5
	DefaultBackoff  = 500 * time.Millisecond
	maxBackoff      = time.Minute
	// DefaultRequestTimeout is kube-apiserver's own default bound on a
	// request (--request-timeout, 60 s).
	DefaultRequestTimeout = time.Minute
	// DefaultMaxPages: 10 million objects in pages of 500.
	DefaultMaxPages = 20000
)

// Page is one page of a list.
type Page struct {
	Items []unstructured.Unstructured
	// Remaining is the API server's estimate of the items after this
	// page, or -1 when it gave none.
	Remaining int64
}

// Selector selects the objects of a list by label and by field, as
// kubectl's -l and --field-selector.
type Selector struct {
	Label, Field string
}

// List calls page with every page of resource gvr in namespace ("" for
// all, or a cluster-scoped resource), selected by sel, until the list
// ends, page returns an error or ctx ends. The retries are reported to
// onRetry (may be nil).
func (l *Lister) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, sel Selector, page func(Page) error, onRetry func(error, time.Duration)) error {
	size := l.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	retries := l.Retries
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	var ri dynamic.ResourceInterface = l.Client.Resource(gvr)
	if namespace != "" {
		ri = l.Client.Resource(gvr).Namespace(namespace)
	}
	maxPages := l.MaxPages
	if maxPages == 0 {
		maxPages = DefaultMaxPages
	}
	opts := metav1.ListOptions{Limit: size, LabelSelector: sel.Label, FieldSelector: sel.Field}
	if sc, ok := l.Client.(streamingClient); ok {
		return l.stream(ctx, sc, gvr, namespace, opts, retries, maxPages, page, onRetry)
	}
	for pages := 1; ; pages++ {
		if maxPages > 0 && pages > maxPages {
			return fmt.Errorf("listing %s: %w: the API server still had a continue token after %d pages (--max-pages)", describe(gvr, namespace), ErrTooManyPages, maxPages)
		}
		token := opts.Continue
		list, err := l.page(ctx, ri, &opts, retries, onRetry)
		if err != nil {
			return fmt.Errorf("listing %s: %w", describe(gvr, namespace), err)
		}
		remaining := int64(-1)
		if r := list.GetRemainingItemCount(); r != nil {
			remaining = *r
		}
		if err := page(Page{Items: list.Items, Remaining: remaining}); err != nil {
			return err
		}
		next := list.GetContinue()
		if next == "" {
			return nil
		}
		if next == token {
			// A server that hands back the token it was given would keep
			// the audit listing forever.
			return fmt.Errorf("listing %s: the API server returned the continue token it was given", describe(gvr, namespace))
		}
		opts.Continue = next
	}
}

// page gets one page, retrying (l.retry).
func (l *Lister) page(ctx context.Context, ri dynamic.ResourceInterface, opts *metav1.ListOptions, retries int, onRetry func(error, time.Duration)) (*unstructured.UnstructuredList, error) {
	var list *unstructured.UnstructuredList
	err := l.retry(ctx, opts, retries, onRetry, func(ctx context.Context) (err error) {
		list, err = ri.List(ctx, *opts)
		return err
	})
	return list, err
}

// stream is List over a streamingClient: each page's items are handed
// to page in chunks as the body is decoded, never a whole page at once.
// A page that fails after some of its items were handed on is asked again
// from the same continue token and those items are skipped (a continue
// token's list is a consistent snapshot; after a 410 the API server's
// inconsistent token starts the same page again at the current state, so
// the count is then as good as the changes since allow).
func (l *Lister) stream(ctx context.Context, c streamingClient, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions, retries, maxPages int, page func(Page) error, onRetry func(error, time.Duration)) error {
	deliver := func(items []unstructured.Unstructured, remaining int64) error {
		return page(Page{Items: items, Remaining: remaining})
	}
	handed := 0 // items handed on from opts.Continue's start
	for pages := 1; ; pages++ {
		if maxPages > 0 && pages > maxPages {
			return fmt.Errorf("listing %s: %w: the API server still had a continue token after %d pages (--max-pages)", describe(gvr, namespace), ErrTooManyPages, maxPages)
		}
		token := opts.Continue
		var meta listMeta
		var read int
		err := l.retry(ctx, &opts, retries, onRetry, func(ctx context.Context) error {
			var delivered int
			var err error
			meta, read, delivered, err = streamPage(ctx, c, gvr, namespace, opts, handed, deliver)
			handed += delivered
			return err
		})
		var consumer consumerError
		if errors.As(err, &consumer) {
			return consumer.err
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", describe(gvr, namespace), err)
		}
		handed = max(0, handed-read)
		if meta.Continue == "" {
			return nil
		}
		if meta.Continue == token {
			return fmt.Errorf("listing %s: the API server returned the continue token it was given", describe(gvr, namespace))
		}
		opts.Continue = meta.Continue
	}
}

// retry calls once until it succeeds, retrying: every failure, a 410 of
// an expired continue token included, counts against retries. A page
// over the client's body bound (ErrPageTooLarge) is asked again at half
// the limit (opts.Limit keeps the smaller one for the rest of the list),
// down to one object. An error of the Lister's caller (consumerError) is
// never retried. Each call of once is bounded by l.RequestTimeout.
func (l *Lister) retry(ctx context.Context, opts *metav1.ListOptions, retries int, onRetry func(error, time.Duration), once func(ctx context.Context) error) error {
	wait := l.Backoff
	if wait <= 0 {
		wait = DefaultBackoff
	}
	timeout := l.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	for attempt := 0; ; attempt++ {
		err := l.request(ctx, timeout, once)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var consumer consumerError
		if errors.As(err, &consumer) {
			return err
		}
		if errors.Is(err, ErrPageTooLarge) && opts.Limit > 1 {
			// Not a failure of the server: the same page, smaller.
			opts.Limit /= 2
			attempt--
			continue
		}
		next, expired := expiredContinue(err)
		expired = expired && opts.Continue != ""
		if attempt >= retries || !(expired || retriable(err)) {
			if expired {
				return fmt.Errorf("the continue token expired (410 Gone) %d times in a row: %w", attempt+1, err)
			}
			return err
		}
		if expired {
			// The snapshot of the continue token is gone; the API server
			// hands an inconsistent continue token to go on from the
			// same place at the current state.
			opts.Continue = next
		}
		if onRetry != nil {
			onRetry(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

// request is one list request, bounded by timeout (none when negative).
func (l *Lister) request(ctx context.Context, timeout time.Duration, once func(context.Context) error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return requestTimeout(ctx, timeout, once(ctx))
}

// requestTimeout names the bound of a request that failed because its
// context (bounded by timeout) ended.
func requestTimeout(ctx context.Context, timeout time.Duration, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("no answer within %s (--request-timeout): %w", timeout, err)
	}
	return err
}

// expiredContinue returns the continue token of a 410 Gone answer to a
// list with an expired continue token.
func expiredContinue(err error) (string, bool) {
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Code != http.StatusGone {
		return "", false
	}
	next := status.ErrStatus.ListMeta.Continue
	return next, next != ""
}

// retriable tells whether a failed list request may succeed when asked
// again: the API server was busy, timed out or failed inside, or the
// connection broke. Refusals (401, 403, 404, 405, 400, 422) are final.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// Not an answer of the API server: the connection (not a refusal
		// of the client's own: a write, a page over its bound).
		var w *ErrWrite
		return !errors.As(err, &w) && !errors.Is(err, ErrPageTooLarge)
	}
	code := status.Status().Code
	return code == http.StatusTooManyRequests || code >= 500 ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

// NotListable tells whether a list failed because the API server does not
// serve the resource or does not list it (404, 405): the resource is
// skipped, not the audit.
func NotListable(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

func describe(gvr schema.GroupVersionResource, namespace string) string {
	s := gvr.Resource
	if gvr.Group != "" {
		s += "." + gvr.Group
	}
	s += "/" + gvr.Version
	if namespace != "" {
		s += " in namespace " + namespace
	}
	return s
}
