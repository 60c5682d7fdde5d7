package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/webhook/certs"
)

func newCertsCommand() *cobra.Command {
	var (
		dir   string
		hosts []string
		days  int
	)
	cmd := &cobra.Command{
		Use:   "certs --dir DIR [--hosts h1,h2] [--days N]",
		Short: "Make a CA and a serving certificate for the webhook",
		Long: `certs writes a serving certificate and key (ECDSA P-256) for --hosts, valid
for --days, into DIR as tls.crt and tls.key, signed by the CA in DIR (ca.crt,
ca.key). The CA is made when DIR has none, or when it would expire before the
new certificate; otherwise it is kept, so that a rotation does not change the
caBundle of the webhook configuration. A running 'mutatis serve' picks the new
certificate up without a restart.

Hosts are DNS names or IP addresses; in a cluster, name the webhook's
Service: --hosts mutatis.mutatis-system.svc.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return badInput(errors.New("--dir is required"))
			}
			if days <= 0 {
				return badInput(fmt.Errorf("--days must be positive, not %d", days))
			}
			var hs []string
			for _, h := range hosts {
				if h = strings.TrimSpace(h); h != "" {
					hs = append(hs, h)
				}
			}
			if len(hs) == 0 {
				return badInput(errors.New("--hosts names no host"))
			}
			out, err := certs.Generate(dir, certs.Options{Hosts: hs, Validity: time.Duration(days) * 24 * time.Hour})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			ca := "kept"
			if out.NewCA {
				ca = "new"
			}
			fmt.Fprintf(w, "CA certificate (%s): %s\n", ca, out.Paths.CACert)
			fmt.Fprintf(w, "CA key:              %s\n", out.Paths.CAKey)
			fmt.Fprintf(w, "serving certificate: %s (%s, %d days)\n", out.Paths.Cert, strings.Join(hs, ", "), days)
			fmt.Fprintf(w, "serving key:         %s\n", out.Paths.Key)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "the directory to write the files into (created if needed)")
	f.StringSliceVar(&hosts, "hosts", certs.DefaultHosts(), "DNS names and IP addresses of the serving certificate")
	f.IntVar(&days, "days", 365, "validity of the serving certificate in days")
	return cmd
}
