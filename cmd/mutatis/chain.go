package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// chainFlags are the flags that choose the admission plugins and the
// webhooks of the offline chain (`apply`, `audit`, `test`;
// `migrate-check` declares them with texts of its own).
type chainFlags struct {
	plugins  admissionplugins.Flags
	webhooks webhookOptions
}

// add declares the flags on f.
func (c *chainFlags) add(f *pflag.FlagSet) {
	addAdmissionPluginFlags(f, &c.plugins)
	addWebhookFlags(f, &c.webhooks)
}

// webhookOptions are the flags that put MutatingWebhookConfigurations
// and ValidatingWebhookConfigurations into the chain of `apply` and
// `test`.
type webhookOptions struct {
	paths       []string
	serviceURLs []string
}

func addWebhookFlags(f *pflag.FlagSet, o *webhookOptions) {
	f.StringSliceVar(&o.paths, "webhooks", nil, "files or directories of MutatingWebhookConfigurations and ValidatingWebhookConfigurations (admissionregistration.k8s.io v1 or v1beta1), called after the policies and after validation, as kube-apiserver's chain calls them (docs/chain.md)")
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
// every document must be a MutatingWebhookConfiguration or a
// ValidatingWebhookConfiguration.
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
// that an unreachable webhook or a bad caBundle points at what to fix:
// calls of the mutating webhooks, or of the validating ones (validating).
func webhookFailures(configs []webhookclient.Configuration, calls []chain.Call, validating bool) []string {
	var out []string
	for _, c := range calls {
		if c.Outcome != chain.FailedOpen && c.Outcome != chain.FailedClosed {
			continue
		}
		i := slices.IndexFunc(configs, func(cfg webhookclient.Configuration) bool {
			return cfg.Name() == c.Configuration && (cfg.Validating != nil) == validating
		})
		if i < 0 {
			continue
		}
		cfg := configs[i]
		how := "failed closed (failurePolicy Fail)"
		if c.Outcome == chain.FailedOpen {
			how = "failed open (failurePolicy Ignore)"
		}
		out = append(out, fmt.Sprintf("%s: %s %q: webhooks[%d].clientConfig: webhook %q %s: %v", cfg.Source, cfg.Kind(), cfg.Name(), cfg.WebhookIndex(c.Hook), c.Hook, how, c.Err))
	}
	return out
}
