package main

import (
	"encoding/json"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/internal/buildinfo"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go version and the Kubernetes release mutatis reproduces",
		Long: `Print which build of mutatis this is: its version, the commit and date it
was built from, the Go version, the platform, and the Kubernetes release
whose admission semantics it reproduces (the version of k8s.io/kubernetes it
is linked with). -o json prints the same fields as one JSON object.

Exit status: 0, or 2 for an unknown output format.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Read()
			out := cmd.OutOrStdout()
			switch output {
			case "text":
				fmt.Fprint(out, info.Text())
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			default:
				return badInput(fmt.Errorf("unknown output format %q (text or json)", output))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// buildInfoGauge is serve's mutatis_build_info: always 1, the build in its
// labels, as Prometheus' own <name>_build_info gauges.
func buildInfoGauge(info buildinfo.Info) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "mutatis",
		Name:      "build_info",
		Help:      "A metric with a constant '1' value labeled by the version, revision and Go version mutatis was built from, and the Kubernetes release whose semantics it reproduces.",
		ConstLabels: prometheus.Labels{
			"version":    info.Version,
			"revision":   info.Commit,
			"goversion":  info.GoVersion,
			"kubernetes": info.Kubernetes,
		},
	})
	g.Set(1)
	return g
}
