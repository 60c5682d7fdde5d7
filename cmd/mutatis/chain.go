package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// webhookOptions are the flags that put MutatingWebhookConfigurations
// into the chain of `apply` and `test`.
type webhookOptions struct {
	paths       []string
	serviceURLs []string
}

func addWebhookFlags(f *pflag.FlagSet, o *webhookOptions) {
	f.StringSliceVar(&o.paths, "webhooks", nil, "files or directories of MutatingWebhookConfigurations (admissionregistration.k8s.io v1 or v1beta1) called after the policies, as kube-apiserver's chain calls them (docs/chain.md)")
	f.StringSliceVar(&o.serviceURLs, "service-url", nil, "NS/NAME[:PORT]=URL: call the webhooks' clientConfig.service NAME in NS (at PORT, or every port) at URL (https://HOST:PORT), verifying its certificate for NAME.NS.svc")
}

// urls parses the --service-url mappings.
func (o *webhookOptions) urls() (webhookclient.ServiceURLs, error) {
	urls := webhookclient.ServiceURLs{}
	for _, m := range o.serviceURLs {
		if err := urls.Add(m); err != nil {
			return nil, fmt.Errorf("--service-url: %w", err)
		}
	}
	return urls, nil
}

// load reads the configurations of --webhooks (nil without the flag):
// every document must be a MutatingWebhookConfiguration.
func (o *webhookOptions) load(ctx context.Context, stdin io.Reader) ([]webhookclient.Configuration, error) {
	if len(o.paths) == 0 {
		return nil, nil
	}
	set, err := manifest.Load(ctx, o.paths, stdin)
	if err != nil {
		return nil, err
	}
	return webhookclient.LoadOnly(set)
}

// webhookFailures are notes naming, for every webhook whose call failed
// (failed open or closed), the file and field of its configuration, so
// that an unreachable webhook or a bad caBundle points at what to fix.
func webhookFailures(configs []webhookclient.Configuration, calls []chain.Call) []string {
	var out []string
	for _, c := range calls {
		if c.Outcome != chain.FailedOpen && c.Outcome != chain.FailedClosed {
			continue
		}
		i := slices.IndexFunc(configs, func(cfg webhookclient.Configuration) bool { return cfg.Configuration.Name == c.Configuration })
		if i < 0 {
			continue
		}
		cfg := configs[i]
		j := slices.IndexFunc(cfg.Configuration.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == c.Hook })
		how := "failed closed (failurePolicy Fail)"
		if c.Outcome == chain.FailedOpen {
			how = "failed open (failurePolicy Ignore)"
		}
		out = append(out, fmt.Sprintf("%s: MutatingWebhookConfiguration %q: webhooks[%d].clientConfig: webhook %q %s: %v", cfg.Source, cfg.Configuration.Name, j, c.Hook, how, c.Err))
	}
	return out
}

// chainOf is the chain of sim with ev's policies and, when configs are
// given, a dispatcher of them (to Close after use).
func chainOf(sim *cluster.Cluster, ch cluster.Chain, configs []webhookclient.Configuration, urls webhookclient.ServiceURLs) (cluster.Chain, error) {
	if len(configs) == 0 {
		return ch, nil
	}
	d, err := sim.Webhooks(webhookclient.APIObjects(configs), urls, webhookclient.Options{})
	if err != nil {
		return ch, err
	}
	ch.Webhooks = d
	return ch, nil
}
