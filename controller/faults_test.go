package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedadmissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
)

// hangingKube is a clientset whose reads of MutatingWebhookConfigurations
// do not answer while hang is set: they return when their context ends, as
// a request to an API server that accepted the connection and never
// answers does.
type hangingKube struct {
	kubernetes.Interface
	hang *atomic.Bool
}

// IsWatchListSemanticsUnSupported passes the fake clientset's answer on to
// the informers (client-go's watchlist detection looks for it on the
// clientset).
func (k hangingKube) IsWatchListSemanticsUnSupported() bool { return true }

func (k hangingKube) AdmissionregistrationV1() typedadmissionregistrationv1.AdmissionregistrationV1Interface {
	return hangingAdmissionregistration{k.Interface.AdmissionregistrationV1(), k.hang}
}

type hangingAdmissionregistration struct {
	typedadmissionregistrationv1.AdmissionregistrationV1Interface
	hang *atomic.Bool
}

func (a hangingAdmissionregistration) MutatingWebhookConfigurations() typedadmissionregistrationv1.MutatingWebhookConfigurationInterface {
	return hangingWebhooks{a.AdmissionregistrationV1Interface.MutatingWebhookConfigurations(), a.hang}
}

type hangingWebhooks struct {
	typedadmissionregistrationv1.MutatingWebhookConfigurationInterface
	hang *atomic.Bool
}

func (w hangingWebhooks) Get(ctx context.Context, name string, opts metav1.GetOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	if w.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return w.MutatingWebhookConfigurationInterface.Get(ctx, name, opts)
}

// TestHangingWritesDoNotHoldPolicySetsBack: the single worker writes the
// webhook configurations after it swapped a policy set in; a write the API
// server never answers must not keep later policy changes (and readiness)
// waiting. Without leader election nothing else ends such a write (with
// it, losing the Lease does, after the renew deadline).
func TestHangingWritesDoNotHoldPolicySetsBack(t *testing.T) {
	var hang atomic.Bool
	hang.Store(true)
	webhook := WebhookOptions{URL: "https://127.0.0.1:8443/mutate", CABundle: []byte("CA")}
	f := startConfigured(t, SourceNative, "v1", webhook, func(cfg *Config) {
		cfg.WriteTimeout = 200 * time.Millisecond
		cfg.Clients.Kube = hangingKube{cfg.Clients.Kube, &hang}
	})
	// Ready: the first set is in although its webhook write timed out.
	native := admissionregistrationv1.SchemeGroupVersion.String()
	f.create(f.policies, policy(t, native, "p", "1", "team", "a"))
	f.create(f.bindings, bindingObject(t, native, "p", "p"))
	// Only ends a test that would otherwise hang: every write the hang
	// timed out backs the retried sync off further (the queue's exponential
	// backoff), and under -race on a loaded machine the hang lasts longer.
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Minute)
	defer cancel()
	st, err := f.c.WaitFor(ctx, func(s Status) bool { return s.Policies["p"] == "1" && s.Bindings["p"] == "1" })
	if err != nil {
		t.Fatalf("a policy created while the webhook writes hang is not taken in: %v (status %+v)", err, st)
	}
	if got := f.admitConfigMap("cm")["team"]; got != "a" {
		t.Fatalf("label team = %q, want a", got)
	}
	// The API server answers again: the retried sync writes the
	// configurations.
	hang.Store(false)
	err = pollUntil(ctx, func() bool {
		_, err := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, WebhookConfigurationName(DefaultWebhookName, admissionregistrationv1.Fail), metav1.GetOptions{})
		return err == nil
	})
	if err != nil {
		t.Fatalf("the webhook configuration is not written once the API server answers: %v", err)
	}
}

// pollUntil checks cond every 20ms until it holds or ctx ends.
func pollUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
